// Locality over a synthetic repository of 10,000 tasks: build the directory index, count near /
// far / ineligible pairs, and find eligible partners for 200 focus tasks. Prints time and peak
// memory. Usage: npm run bench:locality [-- TASKS]
import seedrandom from "seedrandom";
import { LocalityIndex, type LocalityTask } from "../pipeline/locality.ts";
import { parentDir } from "../stages/split/split.ts";

const count = Number(process.argv[2] ?? 10_000);
const rng = seedrandom("locality-bench");
// A repository shaped like a large Python project: 400 directories of 25 modules each, tasks
// touching 1-4 files, mostly within one or two directories.
const dirs = Array.from({ length: 400 }, (_, i) => `pkg/sub${i % 20}/mod${Math.floor(i / 20)}`);
const tasks: LocalityTask[] = [];
for (let i = 0; i < count; i++) {
  const files = new Set<string>();
  const home = dirs[Math.floor(rng() * dirs.length)]!;
  const n = 1 + Math.floor(rng() * 4);
  for (let f = 0; f < n; f++) {
    const dir = rng() < 0.75 ? home : dirs[Math.floor(rng() * dirs.length)]!;
    files.add(`${dir}/file${Math.floor(rng() * 25)}.py`);
  }
  const sourceFiles = [...files].sort();
  tasks.push({ id: `bench__repo-${i + 1}`, repo: "bench/repo", sourceFiles, sourceDirs: [...new Set(sourceFiles.map(parentDir))].sort() });
}

let peak = process.memoryUsage().rss;
const sample = () => (peak = Math.max(peak, process.memoryUsage().rss));
const baseline = process.memoryUsage().rss;
const t0 = performance.now();
const index = new LocalityIndex(tasks);
const t1 = performance.now();
sample();
const counts = index.counts().get("bench/repo")!;
const t2 = performance.now();
sample();
let eligible = 0;
for (let i = 0; i < 200; i++) {
  const id = tasks[Math.floor(rng() * tasks.length)]!.id;
  eligible += index.eligiblePartners(id, i % 2 ? "near" : "far").length;
  sample();
}
const t3 = performance.now();
const total = (count * (count - 1)) / 2;
console.log(`tasks: ${count}; same-repository pairs: ${total}`);
console.log(`pairs: near ${counts.near}, far ${counts.far}, ineligible ${counts.ineligible}`);
console.log(`index build: ${(t1 - t0).toFixed(1)} ms`);
console.log(`classify every pair (counts): ${(t2 - t1).toFixed(1)} ms`);
console.log(`eligible partners for 200 focus tasks (${eligible} partners in all): ${(t3 - t2).toFixed(1)} ms`);
console.log(`peak RSS: ${(peak / 2 ** 20).toFixed(1)} MiB (${((peak - baseline) / 2 ** 20).toFixed(1)} MiB above the process's start)`);

// The same classification done naively (every pair compared) on a 2,000-task slice, against the
// index on that slice: the ratio is what the index saves, independent of this machine's speed.
{
  const { classifyPair } = await import("../pipeline/locality.ts");
  const slice = tasks.slice(0, Math.min(2000, tasks.length));
  const n0 = performance.now();
  let naiveNear = 0;
  for (let i = 0; i < slice.length; i++) for (let j = i + 1; j < slice.length; j++) if (classifyPair(slice[i]!, slice[j]!).class === "near") naiveNear++;
  const n1 = performance.now();
  const sliceCounts = new LocalityIndex(slice).counts().get("bench/repo")!;
  const n2 = performance.now();
  if (sliceCounts.near !== naiveNear) throw new Error(`index and naive disagree: ${sliceCounts.near} vs ${naiveNear}`);
  console.log(
    `2,000-task slice: naive all-pairs ${(n1 - n0).toFixed(1)} ms, index ${(n2 - n1).toFixed(1)} ms, ratio naive/index ${((n1 - n0) / (n2 - n1)).toFixed(1)} (same counts)`,
  );
}
