// Select, schedule and validate 200 sessions (100 near, 100 far) from a synthetic pool of 20,000
// tasks across 20 repositories; prints time and peak memory per step. Usage: npm run bench:sessions
import seedrandom from "seedrandom";
import { sessionSpec } from "../stages/schedule/schedule.ts";
import { selectSessions, type SelectableTask } from "../stages/select/select.ts";
import { parentDir } from "../stages/split/split.ts";
import { validateSession } from "../stages/validate/validate.ts";

const rng = seedrandom("sessions-bench");
const PATHS = ["/workspace/w00", "/workspace/w01", "/workspace/w02", "/workspace/w03", "/workspace/w04"];
const tasks: SelectableTask[] = [];
for (let r = 0; r < 20; r++) {
  const dirs = Array.from({ length: 60 }, (_, d) => `pkg${r}/sub${d % 12}/mod${Math.floor(d / 12)}`);
  for (let i = 0; i < 1000; i++) {
    const home = dirs[Math.floor(rng() * dirs.length)]!;
    const files = new Set<string>();
    for (let f = 1 + Math.floor(rng() * 3); f > 0; f--)
      files.add(`${rng() < 0.8 ? home : dirs[Math.floor(rng() * dirs.length)]}/f${Math.floor(rng() * 40)}.py`);
    const sourceFiles = [...files].sort();
    tasks.push({
      id: `org__repo${r}-${i + 1}`,
      repo: `org/repo${r}`,
      sourceFiles,
      sourceDirs: [...new Set(sourceFiles.map(parentDir))].sort(),
      stages: 1 + Math.floor(rng() * 4),
    });
  }
}
let peak = process.memoryUsage().rss;
const sample = () => (peak = Math.max(peak, process.memoryUsage().rss));
const base = process.memoryUsage().rss;
const time = <T>(fn: () => T): [T, number] => {
  const t = performance.now();
  const value = fn();
  sample();
  return [value, performance.now() - t];
};

const selectStart = performance.now();
const selection = await selectSessions(tasks, { seed: "bench", sizes: { near: 100, far: 100 }, interruptions: 4, minFocusStages: 2 });
const selectMs = performance.now() - selectStart;
const byId = new Map(tasks.map((t) => [t.id, t]));
const [specs, scheduleMs] = time(() =>
  selection.sessions.map((s) =>
    sessionSpec({
      session: s,
      benchmark: "bench",
      seed: "bench",
      task: (id) => ({ stages: byId.get(id)!.stages, baseCommit: "0".repeat(40) }),
      text: (slot) => `${slot.task}#${slot.stage ?? "final"}`,
      checkoutPaths: PATHS,
      budget: { per_request_seconds: 900, timeout_continuations: 3 },
    }),
  ),
);
const [failed, validateMs] = time(() => specs.filter((spec) => validateSession(spec, byId as never, PATHS, 4).some((c) => !c.passed)).length);
console.log(
  `pool: ${tasks.length} tasks in 20 repositories; sessions: ${selection.sessions.filter((s) => s.locality === "near").length} near + ${selection.sessions.filter((s) => s.locality === "far").length} far`,
);
console.log(`select: ${selectMs.toFixed(0)} ms; schedule: ${scheduleMs.toFixed(0)} ms; validate: ${validateMs.toFixed(0)} ms (${failed} failing)`);
console.log(`peak RSS: ${(peak / 2 ** 20).toFixed(0)} MiB (${((peak - base) / 2 ** 20).toFixed(0)} MiB above the process's start)`);
