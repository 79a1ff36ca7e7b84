import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { changesBetween, snapshot } from "../../../pipeline/checkouts/snapshot.ts";
import { IGNORED_DIRS } from "../../../pipeline/checkouts/ignored.ts";
import { ListingError, observeScript, readListing } from "../../../pipeline/harbor/observe.ts";
import { tempDir } from "../../helpers/tmp.ts";

/** A checkout with every kind of entry the snapshot treats apart. */
function trickyTree(dir: string): void {
  const file = (path: string, content: string) => {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), content);
  };
  file("src/pkg/module.py", "x = 1\n");
  file("src/pkg/module.pyc", "bytecode");
  file("src/pkg/other.pyo", "bytecode");
  file("src/pkg/pyc.txt", "not bytecode\n");
  file("name with spaces.txt", "spaces\n");
  file("line\nbreak.txt", "a newline in a name\n");
  file("./C", "a file called C\n");
  file("L", "a file called L\n");
  file("empty.txt", "");
  file("bin/run.sh", "#!/bin/sh\n");
  chmodSync(join(dir, "bin/run.sh"), 0o755);
  for (const skipped of IGNORED_DIRS) file(`${skipped}/inside.txt`, "skipped\n");
  file("deep/a/.venv/lib.py", "skipped at depth\n");
  file("deep/a/__pycache__/m.cpython-311.pyc", "skipped\n");
  file("proj.egg-info/PKG-INFO", "skipped\n");
  file("deep/x.egg-info/top_level.txt", "skipped\n");
  file("venvish/venv.txt", "kept: only a directory named venv is skipped\n");
  symlinkSync("src/pkg/module.py", join(dir, "link-to-file"));
  symlinkSync("/etc", join(dir, "link-out"));
  symlinkSync("missing-target", join(dir, "dangling"));
  symlinkSync("src", join(dir, "link-to-dir"));
  symlinkSync("src", join(dir, "node_modules.link"));
  mkdirSync(join(dir, "symlinked-skip"));
  symlinkSync("../src", join(dir, "symlinked-skip", ".git"));
  file("empty-dir/.keep", "");
}

/** The listing observeScript writes for `checkouts`, run by this machine's sh, find and sha1sum. */
function observe(checkouts: string[]): string {
  const script = join(tempDir(), "observe.sh");
  writeFileSync(script, observeScript(checkouts));
  const out = join(tempDir(), "checkouts.listing");
  execFileSync("sh", [script, out]);
  return readFileSync(out, "utf8");
}

describe("the Harbor task's observation of its checkouts", () => {
  it("lists every checkout as the session runner snapshots it, hash for hash", async () => {
    const root = tempDir();
    const [a, b, missing] = [join(root, "w00"), join(root, "w01"), join(root, "w02")];
    mkdirSync(a);
    mkdirSync(b);
    trickyTree(a);
    writeFileSync(join(b, "only.txt"), "one file\n");
    const listed = readListing(observe([a, b, missing]), "test");
    expect([...listed.keys()]).toEqual([a, b, missing]);
    for (const dir of [a, b, missing]) {
      const expected = await snapshot(dir);
      expect(new Map([...listed.get(dir)!].sort()), dir).toEqual(new Map([...expected].sort()));
    }
    expect(listed.get(a)!.get("line\nbreak.txt")).toBeDefined();
    expect(listed.get(a)!.get("symlinked-skip/.git")).toBe("link:../src");
  });

  it("sees a change as a change, in the checkout where it was made", async () => {
    const root = tempDir();
    const [a, b] = [join(root, "w00"), join(root, "w01")];
    mkdirSync(a);
    mkdirSync(b);
    trickyTree(a);
    writeFileSync(join(b, "kept.txt"), "1\n");
    const before = readListing(observe([a, b]), "before");
    writeFileSync(join(a, "src/pkg/module.py"), "x = 2\n");
    writeFileSync(join(a, "src/pkg/new.py"), "");
    execFileSync("rm", [join(a, "empty.txt")]);
    writeFileSync(join(a, "__pycache__/ignored.txt"), "not seen\n");
    const after = readListing(observe([a, b]), "after");
    expect(changesBetween(before.get(a)!, after.get(a)!)).toEqual({ added: ["src/pkg/new.py"], modified: ["src/pkg/module.py"], deleted: ["empty.txt"] });
    expect(changesBetween(before.get(b)!, after.get(b)!)).toBeUndefined();
  });

  it("refuses a listing it cannot read, naming where", () => {
    expect(() => readListing("C\0/w\0L\0./x\0", "cut")).toThrow(ListingError);
    expect(() => readListing("C\0/w\0not a record\0", "junk")).toThrow(/junk: field 2/);
    expect(() => readListing("C\0/w", "partial")).toThrow(/partial/);
    expect(readListing("", "empty").size).toBe(0);
  });
});
