import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { runCli } from "../../helpers/cli-in-process.ts";
import { tempDir } from "../../helpers/tmp.ts";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../../../", import.meta.url));
const bin = join(root, "bin", "switch-swe.mjs");

/** The binary itself, as a user's script calls it: exit code and both outputs. */
async function cli(args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...args], { cwd: root });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const section = (path: string, before: string, after: string) =>
  `diff --git a/${path} b/${path}\n--- a/${path}\n+++ b/${path}\n@@ -1 +1 @@\n-${before}\n+${after}\n`;

describe("switch-swe split diff FILE", () => {
  it("prints the split of one diff as JSON", async () => {
    const diff = join(tempDir(), "change.diff");
    writeFileSync(diff, section("pkg/mod.py", "a = 1", "a = 2") + section("tests/test_mod.py", "x", "y") + section("docs/index.rst", "d", "e"));
    const result = await cli(["split", "diff", diff, "--json"]);
    expect(result.code, result.stderr).toBe(0);
    const out = JSON.parse(result.stdout);
    expect(out.source_files).toEqual(["pkg/mod.py"]);
    expect(out.source_dirs).toEqual(["pkg"]);
    expect(out.implementation_patch).toMatch(/^diff --git a\/pkg\/mod.py/);
    expect(out.test_patch).toMatch(/^diff --git a\/tests\/test_mod.py/);
    expect(out.files.map((f: { path: string; class: string }) => `${f.path}:${f.class}`)).toEqual([
      "pkg/mod.py:source",
      "tests/test_mod.py:test",
      "docs/index.rst:docs",
    ]);
  });

  it("classifies by the profile's rules when given one (options after the command's name are its own), else by the defaults", async () => {
    const dir = tempDir();
    const diff = join(dir, "change.diff");
    writeFileSync(diff, section("geometry/shapes.py", "a", "b") + section("checks/shapes_check.py", "x", "y"));
    const profile = JSON.parse(readFileSync(join(root, "data/demo/repos/demo-org__geometry.json"), "utf8"));
    profile.classification.test_dirs = ["checks"];
    // A profile's file is named for its repository.
    const profileFile = join(dir, "demo-org__geometry.json");
    writeFileSync(profileFile, JSON.stringify(profile));
    const plain = await runCli(["split", "diff", diff]);
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).toContain("C_t: checks/shapes_check.py, geometry/shapes.py\nD_t: checks, geometry\n");
    const profiled = await runCli(["split", "diff", diff, "--profile", profileFile]);
    expect(profiled.code, profiled.stderr).toBe(0);
    expect(profiled.stdout).toMatch(/^test +modified +checks\/shapes_check\.py {2}\(/m);
    expect(profiled.stdout).toContain("C_t: geometry/shapes.py\nD_t: geometry\n");
  });

  it("refuses what is not a diff, or not a profile, naming the file: exit 2", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "note.txt"), "not a diff at all\n");
    const notDiff = await runCli(["split", "diff", join(dir, "note.txt")]);
    expect(notDiff.code).toBe(2);
    expect(notDiff.stderr).toMatch(/^switch-swe: .*note\.txt: line 1: no file section found: this is not a diff/);
    writeFileSync(join(dir, "change.diff"), section("a.py", "x", "y"));
    writeFileSync(join(dir, "profile.json"), "{}");
    const notProfile = await runCli(["split", "diff", join(dir, "change.diff"), "--profile", join(dir, "profile.json")]);
    expect(notProfile.code).toBe(2);
    expect(notProfile.stderr).toMatch(/^switch-swe: .*profile\.json/);
  });

  it("the old form `split --diff F` is an unknown option whose error names the command to type now", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "change.diff"), section("a.py", "x", "y"));
    for (const args of [
      ["split", "--diff", join(dir, "change.diff"), "--json"],
      ["split", `--diff=${join(dir, "change.diff")}`],
    ]) {
      const result = await cli(args);
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stdout).toBe("");
      expect(result.stderr).toMatch(/^error: unknown option '--diff(=[^']*)?'\nsplit --diff is now a command of its own: switch-swe split diff FILE/);
    }
  });

  it("leaves the stage's command as it was: without --config it says so, and names the command beside it", async () => {
    const result = await runCli(["split"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe("switch-swe: 'split' needs --config FILE (or one of its commands: diff)\n");
    const help = await runCli(["split", "--help"]);
    expect(help.stdout).toMatch(/^ {2}-c, --config <file>/m);
    expect(help.stdout).toMatch(/^ {2}diff \[options\] <diff>/m);
  });
});
