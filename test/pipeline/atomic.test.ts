import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { removeStaleTempFiles, writeFileAtomic } from "../../pipeline/atomic.ts";
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
    for (const [writes, delay] of [[0, 1], [1, 0], [1, 3], [2, 7], [1, 11], [3, 17]] as const) {
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
  }, 120_000);

  it("never leaves a temporary file behind after a successful write", async () => {
    const dir = tempDir();
    await writeFileAtomic(join(dir, "a.json"), "{}");
    await writeFileAtomic(join(dir, "a.json"), (function* () {
      yield "[";
      yield "1";
      yield "]";
    })());
    expect(readdirSync(dir)).toEqual(["a.json"]);
    expect(readFileSync(join(dir, "a.json"), "utf8")).toBe("[1]");
    writeFileSync(join(dir, ".a.json.tmp-1-x"), "partial");
    expect(removeStaleTempFiles(dir)).toBe(1);
    expect(existsSync(join(dir, "a.json"))).toBe(true);
  });
});
