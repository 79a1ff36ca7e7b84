import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SYNC_SCRIPT } from "../../../pipeline/executors/recipe-scripts.ts";
import { tempDir } from "../../helpers/tmp.ts";

describe("sync.py: a prepared checkout made to match a run's checkout", () => {
  const syncScriptInTempDir = () => {
    const dir = tempDir();
    const script = join(dir, "sync.py");
    writeFileSync(script, SYNC_SCRIPT);
    return { dir, script };
  };

  it("copies the run's files, removes base files the run's checkout lacks, keeps what the install generated", () => {
    const { dir, script } = syncScriptInTempDir();
    const base = join(dir, "base");
    const work = join(dir, "work");
    const run = join(dir, "run");
    for (const root of [base, run]) mkdirSync(join(root, "pkg"), { recursive: true });
    writeFileSync(join(base, "pkg", "a.py"), "A = 1\n");
    writeFileSync(join(base, "pkg", "gone.py"), "GONE = 1\n");
    writeFileSync(join(base, "setup.py"), "");
    // the prepared checkout: the base plus what the install wrote
    execFileSync("python3", [script, "overlay", base, work, "/dev/null"]);
    writeFileSync(join(work, "pkg", "_version.py"), "version = '1.0'\n");
    writeFileSync(join(dir, "base-files.txt"), execFileSync("python3", [script, "list", base]));
    // the run's checkout: a changed file, a deleted one, a new file in a new directory, a link, a .git to skip
    writeFileSync(join(run, "pkg", "a.py"), "A = 2\n");
    writeFileSync(join(run, "setup.py"), "");
    mkdirSync(join(run, "pkg", "sub"));
    writeFileSync(join(run, "pkg", "sub", "new.py"), "NEW = 1\n");
    symlinkSync("a.py", join(run, "pkg", "alias.py"));
    mkdirSync(join(run, ".git"));
    writeFileSync(join(run, ".git", "HEAD"), "ref: x\n");
    execFileSync("python3", [script, "overlay", run, work, join(dir, "base-files.txt")]);
    expect(readFileSync(join(work, "pkg", "a.py"), "utf8")).toBe("A = 2\n");
    expect(existsSync(join(work, "pkg", "gone.py"))).toBe(false);
    expect(readFileSync(join(work, "pkg", "_version.py"), "utf8")).toBe("version = '1.0'\n");
    expect(readFileSync(join(work, "pkg", "sub", "new.py"), "utf8")).toBe("NEW = 1\n");
    expect(lstatSync(join(work, "pkg", "alias.py")).isSymbolicLink()).toBe(true);
    expect(readlinkSync(join(work, "pkg", "alias.py"))).toBe("a.py");
    expect(existsSync(join(work, ".git"))).toBe(false);
  });

  it("byte-compiles a prepared tree once, hash-checked: a run that writes no byte-code loads the unchanged modules compiled and never a changed one stale", () => {
    const { dir, script } = syncScriptInTempDir();
    const work = join(dir, "work");
    const run = join(dir, "run");
    for (const root of [work, run]) mkdirSync(join(root, "pkg"), { recursive: true });
    for (const root of [work, run]) writeFileSync(join(root, "pkg", "__init__.py"), "");
    writeFileSync(join(work, "pkg", "kept.py"), "KEPT = 1\n");
    writeFileSync(join(work, "pkg", "changed.py"), "VALUE = 1\n");
    // Python 2 source among a package's files: left uncompiled, the build goes on
    writeFileSync(join(work, "pkg", "py2_data.py"), "print 'old'\n");
    execFileSync("python3", [script, "compile", work]);
    const cache = join(work, "pkg", "__pycache__");
    const compiled = readdirSync(cache).sort();
    expect(compiled.filter((f) => f.startsWith("kept.")).length).toBe(1);
    expect(compiled.some((f) => f.startsWith("py2_data."))).toBe(false);
    // flags word of the header: bit 0 hash-based, bit 1 checked against the source
    const flags = readFileSync(
      join(
        cache,
        compiled.find((f) => f.startsWith("changed."))!,
      ),
    ).readUInt32LE(4);
    expect(flags).toBe(0b11);
    // The run's checkout: the same size and bytes but one, overlaid (every file rewritten).
    writeFileSync(join(run, "pkg", "kept.py"), "KEPT = 1\n");
    writeFileSync(join(run, "pkg", "changed.py"), "VALUE = 2\n");
    execFileSync("python3", [script, "overlay", run, work, "/dev/null"]);
    // -v: Python says which modules it loaded from byte-code
    const loaded = spawnSync("python3", ["-v", "-c", "import pkg.kept, pkg.changed; print(pkg.changed.VALUE)"], {
      cwd: work,
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" },
      encoding: "utf8",
    });
    expect(loaded.stdout.trim()).toBe("2");
    expect(loaded.stderr).toMatch(/code object from '[^']*kept\.cpython-\d+\.pyc'/);
    expect(loaded.stderr).not.toMatch(/code object from '[^']*changed\.cpython-\d+\.pyc'/);
    expect(readdirSync(cache).sort()).toEqual(compiled);
  });
});
