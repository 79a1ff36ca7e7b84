/**
 * Every path of an exported Harbor dataset, and what switch-swe reads of a Harbor job, named once
 * (the export writes them, `report --harbor` and the tests read them):
 *
 *   README.md                              how to run it (docs/HARBOR.md says more)
 *   shared/                                files several tasks hold, stored once: each task's copy is a hard link
 *     checkouts/<sha256>.tar               a checkout as the session runner makes it (its files and its one commit)
 *     mirrors/<sha256>.tar                 a focus base revision as a bare repository of that commit (the verifier's)
 *     revisions/<sha256>.tar               a focus base revision's files, for a recipe that installs from the checkout
 *     verifier/node, verifier/verify.mjs   the Node that runs switch-swe's verify, and verify bundled
 *   tasks/<session>.<condition>/           one multi-step Harbor task per session and condition
 *     task.toml                            one [[steps]] entry per scheduled request, the last one scored
 *     environment/                         the agent's image: the focus task's environment, the five checkouts
 *       Dockerfile, switch-swe/*.sh, checkouts/wNN.tar
 *     tests/Dockerfile, test.sh            every step's verifier but the last: it scores nothing
 *     steps/<NN>-<wXX>-<stageK|final>/
 *       instruction.md                     the request, exactly as `session run` delivers it
 *       solution/solve.sh [reference.patch]  Harbor's oracle: a task's reference at its last request
 *     steps/<last>/tests/                  the last step's verifier image: switch-swe's verify, never the agent's
 *       Dockerfile, test.sh, switch-swe/{*.sh, node, verify.mjs, verifier.json, focus.git.tar, focus-base.tar}
 */
export const HARBOR_DATASET = {
  readme: "README.md",
  shared: "shared",
  tasks: "tasks",
} as const;

/** What the dataset stores once (`shared/`), by kind; each file is named by its content's sha256. */
export const SHARED_KINDS = ["checkouts", "mirrors", "revisions"] as const;
export type SharedKind = (typeof SHARED_KINDS)[number];
export const sharedFile = (kind: SharedKind, sha256: string): string => `${HARBOR_DATASET.shared}/${kind}/${sha256}.tar`;
export const SHARED_VERIFIER = { node: `${HARBOR_DATASET.shared}/verifier/node`, program: `${HARBOR_DATASET.shared}/verifier/verify.mjs` } as const;

/** Inside one task directory. */
export const HARBOR_TASK = {
  config: "task.toml",
  environment: "environment",
  tests: "tests",
  steps: "steps",
  instruction: "instruction.md",
  solution: "solution",
} as const;

/** Inside the last step's tests/ (the verifier image's build context); what lands under /tests in the image. */
export const VERIFIER_FILES = {
  script: "test.sh",
  node: "switch-swe/node",
  program: "switch-swe/verify.mjs",
  input: "switch-swe/verifier.json",
  mirror: "switch-swe/focus.git.tar",
  revision: "switch-swe/focus-base.tar",
} as const;

/** Where the verifier's files are in its image (Harbor runs /tests/test.sh of a bundled verifier image). */
export const IN_VERIFIER = { tests: "/tests", mirror: "/tests/switch-swe/focus.git" } as const;

/** What the last step's verifier writes into Harbor's verifier directory (/logs/verifier, the step's verifier/). */
export const VERIFIER_OUTPUTS = {
  reward: "reward.json",
  verification: "switch-swe-verification.json",
  artifact: "artifact.patch",
  run: "switch-swe-run.json",
} as const;

/**
 * What every step records of the five checkouts, in the agent's container (root's alone): each
 * checkout's files hashed as the session runner snapshots them, before the first request (at the
 * image's build) and after each request (Harbor's collect hook); Harbor collects them as artifacts.
 */
export const OBSERVED = {
  dir: "/var/lib/switch-swe",
  script: "/var/lib/switch-swe/observe.sh",
  base: "/var/lib/switch-swe/base.listing",
  current: "/var/lib/switch-swe/checkouts.listing",
} as const;
/** Where Harbor puts those artifacts in a step's artifacts/ (the convention: an absolute source's path without its leading /). */
export const observedArtifact = (source: string): string => source.slice(1);

/**
 * The task directory's name for a session and condition, `<session>--<condition>`, of letters,
 * digits, `_` and `-` only. Not `.`: Harbor 0.26 names a trial after its task's first 32
 * characters (trailing `_` and `-` stripped) and its Docker environment's image after the trial,
 * its `.` made `-`; a cut ending in `.` gave `…-__<id>`, which Docker refuses as an image name,
 * so the trial never started (`session-sqlfluff__sqlfluff-2386.switched`).
 */
export const taskDirName = (sessionId: string, condition: string): string =>
  `${sessionId}--${condition}`
    .replace(/[^A-Za-z0-9_-]/g, "_")
    // Docker joins a name's parts by one separator: `_`, `__` or dashes; any other run (`_-`, `___`) becomes a dash.
    .replace(/[_-]{2,}/g, (run) => (run === "__" || /^-+$/.test(run) ? run : "-"));

/** The name an export before `taskDirName` took its present form gave the task (its jobs are still read). */
export const earlierTaskDirName = (sessionId: string, condition: string): string => `${sessionId}.${condition}`.replace(/[^A-Za-z0-9._-]/g, "_");

/**
 * A Harbor job's layout, as far as switch-swe reads it (harbor/models/trial/paths.py): the job's
 * config, and per trial its result, and per step its agent's logs (the ATIF trajectory), its
 * verifier's outputs and its collected artifacts.
 */
export const HARBOR_JOB = {
  config: "config.json",
  result: "result.json",
  steps: "steps",
  agent: "agent",
  verifier: "verifier",
  artifacts: "artifacts",
  trajectory: "trajectory.json",
} as const;

/**
 * Where a job run through switch-swe's context relay keeps the relay's state (its `--dir`): in the
 * job's own directory, beside its one trial, so that report --harbor finds the relay's log of
 * auxiliary calls and routing decisions with the trial it served.
 */
export const RELAY_JOB = { dir: "context-relay", usage: "usage.jsonl", log: "context-relay.log" } as const;
