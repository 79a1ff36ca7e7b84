import { z } from "zod";

/** Placeholders a command template may use; each is one argv element's text, never a shell. */
export const AGENT_PLACEHOLDERS = ["{text}", "{checkout}", "{workspace}", "{repository}", "{session_dir}", "{conversation}"] as const;

/**
 * An agent, as data (AGENT.yaml): how the session runner hands it one request. A command agent is
 * an argv template run once per request (and again, with the continuation message, after a
 * timeout); `continue_command` continues the same conversation for every request after the first.
 * API keys are named in `env` and passed from the user's environment; never written anywhere.
 * A scripted agent is built into switch-swe: for tests and calibration only.
 */
export const AgentSpec = z
  .strictObject({
    name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "a name for file paths: letters, digits, '.', '_', '-'"),
    description: z.string().default(""),
    /** Said plainly in an adapter no one could run here: what was not checked. */
    note: z.string().optional(),
    scripted: z.enum(["replay-reference", "noop", "wrong-checkout"]).optional(),
    command: z.array(z.string().min(1)).min(1).optional(),
    continue_command: z.array(z.string().min(1)).min(1).optional(),
    /**
     * Where the command runs, in the active checkout's directory: `host`, on this machine with the
     * checkouts under the run's directory; or `environment`, inside one container of the focus
     * task's environment image kept for the whole session, with the five checkouts mounted at the
     * session's own paths (/workspace/w00, ...). Placeholders name paths as the agent sees them.
     */
    runs: z.enum(["host", "environment"]).default("host"),
    /**
     * `runs: environment` only: commands run once, as root and with the network, in the new
     * container before the first request (installing the agent, say); their time is the runner's.
     */
    setup: z.array(z.array(z.string().min(1)).min(1)).default([]),
    /** Seconds each setup command may take. */
    setup_timeout_seconds: z.number().int().positive().default(900),
    /** `runs: environment` only: whether the container has a network (an agent reaching its model's API needs one). */
    network: z.boolean().default(true),
    /** Names of environment variables passed through from the user's environment (API keys, say). */
    env: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/)).default([]),
  })
  .refine((a) => Boolean(a.scripted) !== Boolean(a.command), { message: "give exactly one of scripted and command", path: ["command"] })
  .refine(
    (a) =>
      [...(a.command ?? []), ...(a.continue_command ?? [])].every((part) =>
        (part.match(/\{[a-z_]+\}/g) ?? []).every((p) => (AGENT_PLACEHOLDERS as readonly string[]).includes(p)),
      ),
    { message: `a command may use only the placeholders ${AGENT_PLACEHOLDERS.join(", ")}`, path: ["command"] },
  )
  .refine((a) => !a.scripted || a.runs === "host", { message: "a scripted agent is built into switch-swe and runs on the host", path: ["runs"] })
  .refine((a) => a.runs === "environment" || a.setup.length === 0, {
    message: "setup commands are run in the environment: set runs: environment",
    path: ["setup"],
  });
export type AgentSpec = z.infer<typeof AgentSpec>;

/** What changed in one checkout during one request, relative to its state before the request. */
export const CheckoutChanges = z.object({
  added: z.array(z.string()),
  modified: z.array(z.string()),
  deleted: z.array(z.string()),
});
export type CheckoutChanges = z.infer<typeof CheckoutChanges>;

/** One request of a session run, as the trajectory records it (one JSON line each). */
export const TrajectoryRequest = z.object({
  request: z.number().int().nonnegative(),
  task_id: z.string(),
  /** Whether this request is the focus task's (the trajectory is the runner's record; the agent never sees roles). */
  focus: z.boolean(),
  stage: z.number().int().positive().optional(),
  finalization: z.boolean(),
  checkout: z.string(),
  started_at: z.string(),
  ended_at: z.string(),
  seconds: z.number().nonnegative(),
  budget_seconds: z.number().positive(),
  continuations: z.number().int().nonnegative(),
  timed_out: z.boolean(),
  /** Exit status of each attempt (null when it was killed at the budget). */
  exits: z.array(z.number().int().nullable()),
  /** Files changed during the request, per checkout path (checkouts without changes left out). */
  changes: z.record(z.string(), CheckoutChanges),
  /** A focus return (a focus request after another task's): seconds to the first change in the focus checkout. */
  focus_first_change_seconds: z.number().nonnegative().nullable().optional(),
});
export type TrajectoryRequest = z.infer<typeof TrajectoryRequest>;

/** What a session run did, from its trajectory: the behaviour the study discusses beside resolution. */
export const SessionBehaviour = z.object({
  agent: z.string(),
  requests: z.number().int().nonnegative(),
  /** Requests that changed a checkout other than the active one, and the files they changed there. */
  cross_task_write_requests: z.number().int().nonnegative(),
  cross_task_write_files: z.number().int().nonnegative(),
  /** Per focus return: seconds to the first change in the focus checkout (null: none in that request). */
  focus_recovery_seconds: z.array(z.number().nonnegative().nullable()),
  /** Focus files the agent changed during the session that ended back at their base content. */
  work_lost_files: z.number().int().nonnegative(),
  continuations_used: z.number().int().nonnegative(),
  timed_out_requests: z.number().int().nonnegative(),
  /** Seconds the runner itself took (provisioning the checkouts, snapshots, bookkeeping), the agent's own time left out. */
  runner_seconds: z.number().nonnegative(),
  /** The trajectory file, relative to the report's own directory when it can be. */
  trajectory: z.string(),
});
export type SessionBehaviour = z.infer<typeof SessionBehaviour>;
