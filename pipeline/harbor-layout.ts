/**
 * Every path of an exported Harbor dataset, named once (the export writes them, the tests and
 * `report --harbor` read them):
 *
 *   README.md                          how to run it (docs/HARBOR.md says more)
 *   switch_swe_harbor/                 the session agent Harbor imports (--agent switch_swe_harbor.agent:SwitchSweSession)
 *     agent.py, __init__.py
 *     adapters/<harness>.json          the harnesses it can drive, from data/agents/
 *   tasks/<session>.<condition>/       one Harbor task per session and condition
 *     task.toml, instruction.md        (the instruction: the first request, as the harness gets it)
 *     environment/                     the agent's image: the focus task's environment, the five checkouts at their base revisions
 *       Dockerfile, switch-swe/*.sh, checkouts/wNN.tar
 *     tests/                           the verifier's image (Harbor's separate verifier): built from here, never seen by the agent
 *       Dockerfile, test.sh, switch_swe_verify.py, switch_swe_runner.py, run.sh, task.json, test.patch, focus-base.tar
 *     solution/solve.sh, reference.patch   Harbor's oracle: the reference implementation applied to the focus checkout
 *     switch-swe/session.json          the schedule, read by the session agent on the machine running Harbor, never uploaded
 */
export const HARBOR_DATASET = {
  readme: "README.md",
  agentPackage: "switch_swe_harbor",
  tasks: "tasks",
} as const;

/** Inside one task directory. */
export const HARBOR_TASK = {
  config: "task.toml",
  instruction: "instruction.md",
  environment: "environment",
  tests: "tests",
  solution: "solution",
  plan: "switch-swe/session.json",
} as const;

/** Inside a task's tests/ (the verifier image's /tests). */
export const VERIFIER_FILES = {
  script: "test.sh",
  helper: "switch_swe_verify.py",
  runner: "switch_swe_runner.py",
  runScript: "run.sh",
  task: "task.json",
  testPatch: "test.patch",
  baseArchive: "focus-base.tar",
} as const;

/** What the verifier writes into Harbor's verifier directory (/logs/verifier, the trial's verifier/). */
export const VERIFIER_OUTPUTS = {
  reward: "reward.json",
  verification: "switch-swe-verification.json",
  artifact: "artifact.patch",
  channel: "channel.jsonl",
  channelSummary: "channel-summary.json",
} as const;

/** What the session agent writes into the trial's directory, beside Harbor's own (never mounted into the container). */
export const SESSION_RECORDS = {
  dir: "switch-swe",
  trajectory: "trajectory.jsonl",
  summary: "session.json",
} as const;

/** The task directory's name for a session and condition (Harbor's task names allow letters, digits, `.`, `_` and `-`). */
export const taskDirName = (sessionId: string, condition: string): string => `${sessionId}.${condition}`.replace(/[^A-Za-z0-9._-]/g, "_");

/** A Harbor job's layout, as far as switch-swe reads it (harbor/models/trial/paths.py): a job's config, and each trial's result and verifier directory. */
export const HARBOR_JOB = { config: "config.json", result: "result.json", verifier: "verifier" } as const;
