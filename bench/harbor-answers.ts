// The answer rule (SPEC §2.7) inside the agent images Harbor built for an exported benchmark: for
// each image, the focus task's new names (the `def` and `class` its held-out patches add) are
// grepped over the whole image as the agent's uid, with no network. A hit counts only outside the
// focus checkout, and only for a name the focus checkout lacks (one already at the focus's own
// base is not its answer). Harbor names an environment's image after its trial:
// `<the task's name cut to 32 characters>__<trial>__env-main`.
//
//   npm run bench:harbor-answers -- --manifests DIR [--uid 1000] [--limit N]
//
// DIR is the emitted benchmark the dataset was exported from (its sessions/ and heldout/).
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { BenchmarkLayout } from "../pipeline/benchmark-layout.ts";
import { HeldoutTask } from "../pipeline/schemas/heldout.ts";
import { Condition, SessionSpec } from "../pipeline/schemas/session.ts";
import { earlierTaskDirName, taskDirName } from "../pipeline/harbor/layout.ts";

const { values } = parseArgs({ options: { manifests: { type: "string" }, uid: { type: "string", default: "1000" }, limit: { type: "string" } } });
if (!values.manifests) throw new Error("--manifests DIR: the emitted benchmark (its sessions/ and heldout/) the Harbor dataset was exported from");
const manifests = values.manifests;
const layout = new BenchmarkLayout(manifests, join(manifests, "heldout"));
const sessions = new Map(
  readdirSync(layout.sessionsDir)
    .filter((f) => f.startsWith("session-") && f.endsWith(".json"))
    .map((f) => SessionSpec.parse(JSON.parse(readFileSync(join(layout.sessionsDir, f), "utf8"))))
    .map((s) => [s.session_id, s]),
);

/**
 * The session an image was built for. Harbor 0.26 names a trial after its task's first 32
 * characters (trailing `_` and `-` stripped) and `__<id>`, and the image after the trial, lowercased
 * with every character but letters, digits, `_` and `-` made `-`: each exported task's prefix is
 * computed the same way and matched.
 */
const trialPrefix = (taskName: string) =>
  taskName
    .slice(0, 32)
    .replace(/[_-]+$/, "")
    .toLowerCase()
    .replace(/[^a-z0-9_-]/g, "-");
const byPrefix = new Map(
  [...sessions.values()].flatMap((spec) =>
    Condition.options.flatMap((c) => [taskDirName(spec.session_id, c), earlierTaskDirName(spec.session_id, c)].map((n) => [trialPrefix(n), spec] as const)),
  ),
);
function sessionOf(image: string): SessionSpec | undefined {
  return byPrefix.get(image.split("__env-main")[0]!.replace(/__[a-z0-9]+$/, ""));
}

const images = execFileSync("docker", ["images", "--format", "{{.Repository}}"], { encoding: "utf8" })
  .split("\n")
  .filter((i) => i.startsWith("session-") && i.endsWith("__env-main"))
  .sort()
  .slice(0, values.limit ? Number(values.limit) : undefined);
let checked = 0;
let hits = 0;
for (const image of images) {
  const spec = sessionOf(image);
  if (!spec) {
    console.log(`${image}: no session of ${manifests} (another export's image): skipped`);
    continue;
  }
  const focus = spec.focus;
  const task = HeldoutTask.parse(JSON.parse(readFileSync(join(layout.heldoutDir, `${focus}.json`), "utf8")));
  const names = [
    ...new Set([...`${task.implementation_patch}\n${task.test_patch}`.matchAll(/^\+\s*(?:def|class)\s+([A-Za-z_]\w*)/gm)].map((m) => m[1]!)),
  ].sort();
  const focusPath = spec.checkouts.find((c) => c.task_id === focus)!.path;
  const script = `for n in ${names.join(" ")}; do grep -rlw -F --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev -e "$n" / 2>/dev/null | sed "s|^|$n |"; done; true`;
  const out = execFileSync("docker", ["run", "--rm", "--network", "none", "--user", values.uid!, "--entrypoint", "sh", image, "-c", script], {
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  const found = out
    .split("\n")
    .filter(Boolean)
    .map((line) => [line.slice(0, line.indexOf(" ")), line.slice(line.indexOf(" ") + 1)] as const);
  const atBase = new Set(found.filter(([, path]) => path.startsWith(`${focusPath}/`)).map(([name]) => name));
  const outside = found.filter(([name, path]) => !path.startsWith(`${focusPath}/`) && !atBase.has(name));
  checked++;
  hits += outside.length;
  console.log(
    `${image}: focus ${focus} at ${focusPath}, ${names.length} new names, ${outside.length} found outside it${
      outside.length
        ? `: ${outside
            .slice(0, 5)
            .map(([n, p]) => `${n} in ${p}`)
            .join(", ")}`
        : ""
    }`,
  );
}
console.log(`images checked ${checked}, names of the focus's answer found outside its checkout: ${hits}`);
process.exit(hits ? 1 : 0);
