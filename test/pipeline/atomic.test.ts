import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { listTree, PUBLISH_MARKER, recoverPublishedDirectory, removeStaleTempFiles, replaceDirectoryAtomic, writeFileAtomic } from "../../pipeline/atomic.ts";
import { tempDir } from "../helpers/tmp.ts";

const writer = fileURLToPath(new URL("../helpers/write-loop.ts", import.meta.url));

/** Starts the writer, waits for `writes` whole writes, then SIGKILLs it `afterMs` later (mid-write, mostly). */
function killWhileWriting(path: string, writes: number, afterMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", writer, path], { stdio: ["ignore", "pipe", "inherit"] });
    let completed = 0;
    let armed = false;
    child.stdout.on("data", (chunk: Buffer) => {
      completed += (chunk.toString().match(/wrote/g) ?? []).length;
      if (!armed && completed >= writes) {
        armed = true;
        setTimeout(() => child.kill("SIGKILL"), afterMs);
      }
    });
    child.on("exit", (_code, signal) => (signal === "SIGKILL" ? resolve() : reject(new Error(`writer exited without being killed (${signal})`))));
  });
}

describe("atomic writes", () => {
  it("leaves the old or the new artifact, never a partial one, when the writer is SIGKILLed mid-write", async () => {
    const dir = tempDir();
    const path = join(dir, "artifacts", "split", "splits.jsonl");
    await writeFileAtomic(path, "initial\n");
    const seen = new Set<string>();
    for (const [writes, delay] of [
      [0, 1],
      [1, 0],
      [1, 3],
      [2, 7],
      [1, 11],
      [3, 17],
    ] as const) {
      await killWhileWriting(path, writes, delay);
      const text = readFileSync(path, "utf8");
      const lines = text.split("\n").filter(Boolean);
      const kind = text === "initial\n" ? "initial" : lines[0]!.slice(7, 8);
      seen.add(kind);
      if (kind !== "initial") {
        // a whole file: every one of its 20000 lines, all of the same version, ending in a newline
        expect(lines).toHaveLength(20000);
        expect(new Set(lines.map((l) => l.slice(7, 8)))).toEqual(new Set([kind]));
        expect(text.endsWith("\n")).toBe(true);
        for (const line of lines) JSON.parse(line);
      }
    }
    expect(seen.size).toBeGreaterThan(1);
    // The killed writers' temporary files are swept by the next run, and the artifact is kept.
    const before = readFileSync(path, "utf8");
    removeStaleTempFiles(dir);
    expect(readdirSync(join(dir, "artifacts", "split"))).toEqual(["splits.jsonl"]);
    expect(readFileSync(path, "utf8")).toBe(before);
  });

  it("never leaves a temporary file behind after a successful write", async () => {
    const dir = tempDir();
    await writeFileAtomic(join(dir, "a.json"), "{}");
    await writeFileAtomic(
      join(dir, "a.json"),
      (function* () {
        yield "[";
        yield "1";
        yield "]";
      })(),
    );
    expect(readdirSync(dir)).toEqual(["a.json"]);
    expect(readFileSync(join(dir, "a.json"), "utf8")).toBe("[1]");
    writeFileSync(join(dir, ".a.json.tmp-1-x"), "partial");
    expect(removeStaleTempFiles(dir)).toBe(1);
    expect(existsSync(join(dir, "a.json"))).toBe(true);
  });
});

describe("publishing a directory whole", () => {
  const files = (entries: Record<string, string>) => new Map(Object.entries(entries));
  const tree = (dir: string) => listTree(dir).filter((p) => p !== PUBLISH_MARKER);

  it("replaces it so that nothing of the earlier publish survives", async () => {
    const dir = join(tempDir(), "out");
    await replaceDirectoryAtomic(dir, files({ "a.json": "1", "sessions/s1.json": "x", "sessions/s2.json": "y" }), () => false);
    await replaceDirectoryAtomic(dir, files({ "a.json": "2", "sessions/s3.json": "z" }), () => false);
    expect(tree(dir)).toEqual(["a.json", "sessions/s3.json"]);
    expect(readFileSync(join(dir, "a.json"), "utf8")).toBe("2");
    expect(readdirSync(join(dir, ".."))).toEqual(["out"]);
  });

  it("refuses to replace a directory holding files it did not publish", async () => {
    const dir = join(tempDir(), "manifests");
    mkdirSync(dir);
    writeFileSync(join(dir, "notes.txt"), "a maintainer's file");
    await expect(replaceDirectoryAtomic(dir, files({ "a.json": "1" }), () => false)).rejects.toThrow(
      /holds files switch-swe did not publish \(notes\.txt\); give this output a directory of its own/,
    );
    expect(readFileSync(join(dir, "notes.txt"), "utf8")).toBe("a maintainer's file");
  });

  it("recovers from a kill between the two renames: the old tree comes back, leftovers go", async () => {
    const parent = tempDir();
    const dir = join(parent, "out");
    await replaceDirectoryAtomic(dir, files({ "old.json": "old" }), () => false);
    // The state a SIGKILL after the first rename leaves: the old tree moved aside, the new one staged.
    renameSync(dir, join(parent, ".out.replaced-123-abc"));
    mkdirSync(join(parent, ".out.staging-123-def"));
    writeFileSync(join(parent, ".out.staging-123-def", "new.json"), "new");
    expect(recoverPublishedDirectory(dir)).toBe(2);
    expect(tree(dir)).toEqual(["old.json"]);
    expect(readdirSync(parent)).toEqual(["out"]);
  });
});
