// How often a run's escaped descendant outlives it: a command that starts `setsid sleep` in the
// background (its own session, out of the run's process group) and exits at once, run N times
// through runProcess, with two busy loops beside it so that the descendant is often caught in the
// middle of its exec. Prints how many runs left it running (each is killed here before the next).
// Usage: npm run bench:escaped -- [N]   (N defaults to 200)
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runProcess } from "../pipeline/executors/processes.ts";
import { processesRunning } from "../test/helpers/processes.ts";

const runs = Number(process.argv[2] ?? 200);
const marker = `sleep ${300 + (process.pid % 600)}`;
const running = () => processesRunning(marker);

const load = [0, 1].map(() => spawn("sh", ["-c", "while :; do :; done"], { stdio: "ignore" }));
const dir = mkdtempSync(join(tmpdir(), "switch-swe-bench-escaped-"));
let survived = 0;
const started = performance.now();
try {
  for (let i = 0; i < runs; i++) {
    await runProcess("bash", ["-c", `setsid ${marker} & echo started`], { cwd: dir, env: { PATH: "/usr/bin:/bin" }, timeoutSeconds: 600 });
    const left = running();
    if (left.length) survived++;
    for (const pid of left) process.kill(Number(pid), "SIGKILL");
  }
} finally {
  for (const busy of load) busy.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
}
const seconds = (performance.now() - started) / 1000;
console.log(
  `${survived} of ${runs} runs left their escaped descendant running (${seconds.toFixed(1)} s, ${((seconds / runs) * 1000).toFixed(0)} ms a run, two busy loops beside)`,
);
