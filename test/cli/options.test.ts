import type { Command, Option } from "commander";
import { describe, expect, it } from "vitest";
import { buildProgram } from "../../cli/main.ts";
import { runCli } from "../helpers/cli-in-process.ts";

/** Every command of the program, groups down to their leaves, with the words that call it. */
function commandsOf(command: Command, path: string[] = []): Array<{ path: string[]; command: Command }> {
  return command.commands.flatMap((sub) => [{ path: [...path, sub.name()], command: sub }, ...commandsOf(sub, [...path, sub.name()])]);
}

/** An option that takes a number: its placeholder says so (`<n>`). */
const numeric = (option: Option) => /<n>/.test(option.flags);

describe("numeric options", () => {
  const program = buildProgram();
  const swept = commandsOf(program).flatMap(({ path, command }) =>
    command.options.filter(numeric).map((option) => ({ path, option, flag: option.long!, zeroMeans: /\(0: /.test(option.description) })),
  );

  it("are found in every command that has one", () => {
    const names = swept.map((s) => `${s.path.join(" ")} ${s.flag}`);
    // A guard on the sweep itself: the commands whose bad values once reached the library.
    for (const expected of [
      "requalify --runs",
      "fidelity --runs",
      "qualify --runs",
      "run --jobs",
      "worker --concurrency",
      "session run-all --jobs",
      "model-endpoint --port",
    ])
      expect(names).toContain(expected);
    // each one is parsed where it is given, not left to the code that uses it
    for (const s of swept) expect(s.option.parseArg, `${s.path.join(" ")} ${s.flag}`).toBeTypeOf("function");
  });

  it("refuse 0 (where 0 means nothing), -1 and a word: a usage error (exit 2) that names the option, never an internal error", async () => {
    for (const { path, flag, zeroMeans } of swept) {
      for (const value of [...(zeroMeans ? [] : ["0"]), "-1", "many", "1.5"]) {
        const result = await runCli([...path, `${flag}=${value}`]);
        const what = `${path.join(" ")} ${flag}=${value}`;
        expect(result.code, `${what}: ${result.stderr}`).toBe(2);
        expect(result.stderr, what).toContain(flag);
        expect(result.stderr, what).toMatch(/expected a whole number/);
        expect(result.stderr, what).not.toMatch(/internal error/);
      }
    }
  });

  it("requalify --runs 0 and fidelity X --runs 0 stop before any work, naming the option", async () => {
    for (const args of [
      ["requalify", "--swebench", "nothing.jsonl", "--runs", "0"],
      ["fidelity", "nothing.jsonl", "--runs", "0"],
    ]) {
      const result = await runCli(args);
      expect(result.code, result.stderr).toBe(2);
      // the one line that matters and the usage line, as git and gh print them; never the whole help
      expect(result.stderr).toBe(
        `error: option '--runs <n>' argument '0' is invalid. expected a whole number of at least 1.\nusage: switch-swe ${args[0]} [options]${args[0] === "fidelity" ? " <records>" : ""}\n`,
      );
    }
  });
});

describe("doctor", () => {
  it("checks the base image of every suite the shipped profiles need, as data", async () => {
    const { suitesProfilesNeed } = await import("../../pipeline/machine/doctor.ts");
    const { loadProfilesDir } = await import("../../pipeline/profiles/load.ts");
    const shipped = [...loadProfilesDir("data/repos", process.cwd()).profiles.values()].map((l) => l.profile);
    // the real repositories' eras run on bullseye's Python 3.9 and bookworm's 3.11
    expect(suitesProfilesNeed(shipped)).toEqual(expect.arrayContaining(["bullseye", "bookworm"]));
    const demo = [...loadProfilesDir("data/demo/repos", process.cwd()).profiles.values()].map((l) => l.profile);
    expect(suitesProfilesNeed(demo)).toEqual(["bookworm"]);
    const result = await runCli(["doctor", "--json", "--profiles", "data/repos"]);
    const checks = JSON.parse(result.stdout).checks as { name: string; ok: boolean; detail: string }[];
    if (checks.find((c) => c.name === "docker engine")?.ok)
      for (const suite of suitesProfilesNeed(shipped)) expect(checks.map((c) => c.name)).toContain(`base image ${suite}`);
  });
});
