import { mkdirSync, readFileSync, readlinkSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { assertNoCredentials, JobResult, queueNameFor } from "../../pipeline/executors/queue-protocol.ts";
import { applyWrittenFiles, checkoutState, writtenSince } from "../../pipeline/executors/written-files.ts";
import { tempDir } from "../helpers/tmp.ts";

describe("the queue's parts", () => {
  it("carries back exactly the files a run wrote, and lays them over another checkout", async () => {
    const worker = tempDir();
    mkdirSync(join(worker, "tests"));
    writeFileSync(join(worker, "tests", "test_a.py"), "def test_a(): pass\n");
    writeFileSync(join(worker, "gone.txt"), "x");
    const before = await checkoutState(worker);
    // What a test run leaves: a marker file, a changed file, a deleted one, a link; byte code and caches are not carried.
    writeFileSync(join(worker, "tests", ".test_a.runs"), "1");
    writeFileSync(join(worker, "tests", "test_a.py"), "def test_a(): assert True\n");
    unlinkSync(join(worker, "gone.txt"));
    symlinkSync("tests/test_a.py", join(worker, "alias.py"));
    mkdirSync(join(worker, "tests", "__pycache__"));
    writeFileSync(join(worker, "tests", "__pycache__", "test_a.cpython-311.pyc"), "junk");
    const written = await writtenSince(worker, before);
    expect(written.map((f) => [f.path, f.content_base64 === null ? "deleted" : f.link !== undefined ? "link" : "file"])).toEqual([
      ["alias.py", "link"],
      ["gone.txt", "deleted"],
      ["tests/.test_a.runs", "file"],
      ["tests/test_a.py", "file"],
    ]);
    const coordinator = tempDir();
    writeFileSync(join(coordinator, "gone.txt"), "x");
    await applyWrittenFiles(coordinator, written);
    expect(readFileSync(join(coordinator, "tests", ".test_a.runs"), "utf8")).toBe("1");
    expect(readFileSync(join(coordinator, "tests", "test_a.py"), "utf8")).toBe("def test_a(): assert True\n");
    expect(readlinkSync(join(coordinator, "alias.py"))).toBe("tests/test_a.py");
    expect(() => readFileSync(join(coordinator, "gone.txt"))).toThrow();
    // A path from another machine never leaves the checkout.
    await expect(applyWrittenFiles(coordinator, [{ path: "../outside.txt", content_base64: "eA==" }])).rejects.toThrow("leaves its checkout");
  });

  it("never puts credentials on the queue, and routes by executor and Python version", () => {
    expect(() => assertNoCredentials("https://user:ghp_secret@github.com/o/r.git")).toThrow("carries credentials");
    expect(() => assertNoCredentials("https://ghp_secret@github.com/o/r.git")).toThrow("https://***@github.com/o/r.git");
    expect(() => assertNoCredentials("https://github.com/o/r.git")).not.toThrow();
    expect(() => assertNoCredentials("ssh://git@github.com/o/r.git")).not.toThrow();
    expect(() => assertNoCredentials("/srv/mirrors/o__r.bundle")).not.toThrow();
    expect(queueNameFor("docker", "3.11")).toBe("runs-docker-py3.11");
    // A worker's answer is checked before it is believed.
    expect(JobResult.safeParse({ worker: "w", ok: true, result: { timedOut: false, exitCode: "0", wallSeconds: 1, outputTail: "" } }).success).toBe(false);
  });
});
