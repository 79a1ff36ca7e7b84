import { describe, expect, it } from "vitest";
import { createProgress } from "../../pipeline/progress.ts";

function stream(isTTY: boolean) {
  const chunks: string[] = [];
  return { chunks, stream: { isTTY, write: (c: string) => (chunks.push(c), true) } };
}

describe("progress", () => {
  it("redraws one bar on a terminal", () => {
    const out = stream(true);
    let now = 0;
    const p = createProgress({ stream: out.stream, now: () => now });
    p.start("qualify", 4);
    for (let i = 0; i < 4; i++) {
      now += 500;
      p.tick(`task-${i}`);
    }
    p.done();
    expect(out.chunks.every((c) => c.startsWith("\r") || c === "\n")).toBe(true);
    expect(out.chunks.at(-2)).toMatch(/^\rqualify █+ 4\/4 100% 2\.0s/);
  });

  it("prints a plain line at most every interval elsewhere, and the final count once", () => {
    const out = stream(false);
    let now = 0;
    const p = createProgress({ stream: out.stream, now: () => now, intervalMs: 5000 });
    p.start("split", 100);
    for (let i = 0; i < 100; i++) {
      now += 200;
      p.tick();
    }
    p.done();
    // a second stage with the same count still gets its final line
    p.start("locality", 100);
    for (let i = 0; i < 100; i++) p.tick();
    p.done();
    expect(out.chunks.at(-1)).toBe("locality: 100/100 (100%) after 0.0s\n");
    out.chunks.pop();
    expect(out.chunks).toEqual([
      "split: 25/100 (25%) after 5.0s\n",
      "split: 50/100 (50%) after 10.0s\n",
      "split: 75/100 (75%) after 15.0s\n",
      "split: 100/100 (100%) after 20.0s\n",
    ]);
  });
});
