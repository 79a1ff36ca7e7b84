import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../../helpers/cli-in-process.ts";
import { tempDir } from "../../helpers/tmp.ts";

// A task really qualified through this command, against the stage's own record, is in
// test/stages/qualify/qualify.test.ts (it needs the demo built); these need nothing run.

/** A pipeline config in a fresh directory, its work directory beside it. */
function config(): { dir: string; file: string; work: string } {
  const dir = tempDir();
  writeFileSync(join(dir, "p.yaml"), "name: t\nseed: 1\nwork_dir: work\n");
  return { dir, file: join(dir, "p.yaml"), work: join(dir, "work") };
}

describe("switch-swe qualify task ID|FILE", () => {
  it("with --config after the command's name, reads the task id from the config's splits: before split ran it says to run it, exit 2", async () => {
    const { dir, file } = config();
    const result = await runCli(["qualify", "task", "o__n-1", "--config", file, "--executor", "local"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `switch-swe: ${join(dir, "work", "artifacts", "split", "splits.jsonl")} is missing: run 'switch-swe run --config ${file}' up to split first\n`,
    );
  });

  it("names the task and the splits when the config's pipeline has no such task, exit 2, having built nothing", async () => {
    const { file, work } = config();
    mkdirSync(join(work, "artifacts", "split"), { recursive: true });
    writeFileSync(join(work, "artifacts", "split", "splits.jsonl"), "");
    const byHand = join(work, "..", "by-hand");
    const result = await runCli(["qualify", "task", "o__n-1", "-c", file, "--work-dir", byHand]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^switch-swe: <task> o__n-1: no such task in .*work\/artifacts\/split\/splits\.jsonl\n$/);
    expect(readdirSync(join(work, ".."))).not.toContain("by-hand");
  });

  it("without --config takes a split record file, and refuses an executor that does not run here or a missing task, exit 2", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "split.json"), "{}");
    for (const [args, expected] of [
      [["qualify", "task", join(dir, "split.json"), "--executor", "queue"], /^error: option '--executor <kind>' argument 'queue' is invalid/],
      [["qualify", "task"], /^error: missing required argument 'task'\nusage: switch-swe qualify task \[options\] <task>\n$/],
      [["qualify", "task", "o__n-1"], /^switch-swe: <task> o__n-1: no such file\n$/],
      [["qualify", "task", join(dir, "split.json"), "--runs", "0"], /^error: option '--runs <n>' argument '0' is invalid/],
    ] as [string[], RegExp][]) {
      const result = await runCli(args);
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stderr, args.join(" ")).toMatch(expected);
    }
  });

  it("the old form `qualify --task X` is an unknown option whose error names the command to type now", async () => {
    const { file } = config();
    for (const args of [
      ["qualify", "--task", "o__n-1"],
      ["qualify", "--config", file, "--task", "o__n-1", "--json"],
    ]) {
      const result = await runCli(args);
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stderr).toBe(
        "error: unknown option '--task'\nqualify --task is now a command of its own: switch-swe qualify task ID|FILE [--config F]\nusage: switch-swe qualify [options] [command]\n",
      );
    }
  });

  it("leaves the stage's command as it was: its flags, and without --config a usage error naming the command beside it", async () => {
    const result = await runCli(["qualify", "--runs", "2"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe("switch-swe: 'qualify' needs --config FILE (or one of its commands: task)\n");
    const help = await runCli(["qualify", "--help"]);
    for (const option of ["-c, --config <file>", "--runs <n>", "--executor <kind>", "--jobs <n>", "--mirrors <dir>"])
      expect(help.stdout).toMatch(new RegExp(`^ {2}${option.replace(/[[\]]/g, "\\$&")}`, "m"));
    expect(help.stdout).toMatch(/^ {2}task \[options\] <task>/m);
  });
});
