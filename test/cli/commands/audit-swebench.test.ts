import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../../helpers/cli-in-process.ts";
import { records } from "../../helpers/audit-subjects.ts";
import { fileTempDir, tempDir } from "../../helpers/tmp.ts";

// What the audit finds on SWE-bench records (with mirrors, annotations, a judge) is tested under
// test/stages/audit/; this is the command: its argument, its options, its outputs, its errors.

describe("switch-swe audit swebench FILE", () => {
  it("audits the file's records from their test patches, writes the report, and says a bad record without stopping", async () => {
    const work = fileTempDir();
    const file = join(work, "records.jsonl");
    writeFileSync(file, JSON.stringify(records.get("django__django-12915")) + "\n" + JSON.stringify({ instance_id: "o__n-1" }) + "\n");
    const out = join(work, "report");
    const result = await runCli(["audit", "swebench", file, "--risk-model", "none", "--out", out, "--work-dir", join(work, "w")]);
    expect(result.code, result.stderr).toBe(0);
    // django-12915's third test checks what the issue does not ask beside two that do: a hard finding.
    expect(result.stdout).toContain("1 records audited (0 at 0, 0 at 1, 1 at 2, 0 at 3); 1 rejected\nthe gate excludes 1 (hard finding 1)\n");
    expect(result.stdout).toContain(`wrote ${join(out, "alignment.csv")}, ${join(out, "index.html")}, ${join(out, "audit.json")}\n`);
    expect(result.stderr).toMatch(new RegExp(`${file.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}.*line 2`));
    const json = JSON.parse(readFileSync(join(out, "audit.json"), "utf8")) as { records: { instance_id: string }[] };
    expect(json.records.map((r) => r.instance_id)).toEqual(["django__django-12915"]);
  });

  it("refuses a missing file, or a file of no record it can audit", async () => {
    const dir = tempDir();
    const missing = await runCli(["audit", "swebench", join(dir, "none.jsonl")]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^switch-swe: <records> .*none\.jsonl: no such file\n$/);
    writeFileSync(join(dir, "bad.jsonl"), '{"instance_id": "o__n-1"}\n');
    const bad = await runCli(["audit", "swebench", join(dir, "bad.jsonl"), "--out", join(dir, "o"), "--work-dir", join(dir, "w")]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain("0 records audited");
  });

  it("the old form `audit --swebench F` is an unknown option whose error names the command to type now", async () => {
    for (const args of [
      ["audit", "--swebench", "records.jsonl", "--out", "o"],
      ["audit", "-c", "p.yaml", "--swebench", "records.jsonl"],
    ]) {
      const result = await runCli(args);
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stderr).toBe(
        "error: unknown option '--swebench'\naudit --swebench is now a command of its own: switch-swe audit swebench FILE\nusage: switch-swe audit [options] [command]\n",
      );
    }
  });

  it("leaves the stage's command and fit-risk's own --swebench as they were", async () => {
    const result = await runCli(["audit"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe("switch-swe: 'audit' needs --config FILE (or one of its commands: rules, fit-risk, import-annotations, decide, swebench)\n");
    const help = await runCli(["audit", "--help"]);
    expect(help.stdout).toMatch(/^ {2}--mirrors <dir> +clone repositories from local copies here/m);
    expect(help.stdout).toMatch(/^ {2}swebench \[options\] <records>/m);
    const fit = await runCli(["audit", "fit-risk", "--swebench", join(tempDir(), "none.jsonl"), "--annotations", "a.csv"]);
    expect(fit.code).toBe(2);
    expect(fit.stderr).toMatch(/^switch-swe: --swebench .*none\.jsonl: no such file\n$/);
  });
});
