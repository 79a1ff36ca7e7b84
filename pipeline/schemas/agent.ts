import { z } from "zod";

/** Placeholders a command template may use; each is one argv element's text, never a shell. */
export const AGENT_PLACEHOLDERS = [
  "{message}",
  "{message_file}",
  "{text}",
  "{checkout}",
  "{workspace}",
  "{repository}",
  "{session_dir}",
  "{conversation}",
  "{model_name}",
] as const;
/** Placeholders the message template may use. */
export const MESSAGE_PLACEHOLDERS = ["{repository}", "{checkout}", "{text}"] as const;
/** Placeholders the model endpoint's variables and files may use (`{model_key}` in variables only: a key is never written to a file). */
export const ENDPOINT_PLACEHOLDERS = ["{model_url}", "{model_key}", "{model_name}", "{home}"] as const;

/** How a command's own structured output is read for usage, failures and the conversation it made (pipeline/session/usage.ts). */
export const USAGE_PARSERS = ["claude-code", "codex", "opencode", "aider"] as const;

const placeholdersIn = (text: string) => text.match(/\{[a-z_]+\}/g) ?? [];
const onlyPlaceholders = (texts: string[], allowed: readonly string[]) => texts.every((t) => placeholdersIn(t).every((p) => allowed.includes(p)));
function validRegex(source: string): boolean {
  try {
    new RegExp(source);
    return true;
  } catch {
    return false;
  }
}
const VariableName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable's name");

/** A harness installed from its own registry at a pinned version, into a tools directory of its own (switch-swe agents install). */
export const AgentInstall = z.strictObject({
  registry: z.enum(["npm", "pypi"]),
  package: z.string().regex(/^(@[a-z0-9._-]+\/)?[A-Za-z0-9._-]+$/, "a package name"),
  /** An exact version: the adapter's flags were checked against this one. */
  version: z.string().regex(/^[0-9][0-9A-Za-z.+-]*$/, "an exact version such as 2.1.197"),
  /** pypi: the Python interpreters to make its virtual environment with, in order of preference (the first on PATH is used). */
  python: z.array(z.string().regex(/^python3(\.\d+)?$/)).default(["python3"]),
  /**
   * `runs: environment`: where an executable the commands name is in the installed package, for
   * one whose bin entry the environment cannot run (Codex's is a Node launcher of a native binary,
   * and an environment image has no Node). A path relative to the install directory, each `*`
   * matching one name (the platform package's directory, say); it must match exactly one file.
   * Without one, it is the package's bin entry, as on the host.
   */
  environment_executables: z
    .record(
      z.string().regex(/^[A-Za-z0-9._-]+$/, "an executable's name"),
      z.string().regex(/^(?!\/)(?!.*(^|\/)\.\.(\/|$)).+$/, "a path inside the install directory"),
    )
    .default({}),
});
export type AgentInstall = z.infer<typeof AgentInstall>;

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
    env: z.array(VariableName).default([]),
    /**
     * Where it comes from: its registry, package and pinned version (command[0] is then looked up
     * in its tools directory first). In the environment (npm only) that installed directory is
     * mounted read-only into the container, and command[0] is looked up there.
     */
    install: AgentInstall.optional(),
    /**
     * The message of each request, from the repository, the active checkout and the request's text
     * (SPEC 2.8: every message names the repository and the checkout). `{message}` in a command.
     */
    message: z.string().default("{text}"),
    /**
     * Where each request runs: `checkout`, in the active checkout; or `workspace`, in the directory
     * holding all five for the whole session (for a harness that keeps its conversations per
     * directory, such as Claude Code: the message names the active checkout).
     */
    working_directory: z.enum(["checkout", "workspace"]).default("checkout"),
    /**
     * The conversation id (`{conversation}`): `fixed`, one derived from session, condition and
     * agent; `fresh`, a new one for every run (a re-run never continues an earlier run's); or
     * `{capture: REGEX}`, the id the harness makes, read from its first request's output (the
     * regex's first group).
     */
    conversation: z.union([z.enum(["fixed", "fresh"]), z.strictObject({ capture: z.string().min(1) })]).default("fixed"),
    /**
     * How it is pointed at a model endpoint (session run --model-url): variables set for every
     * request, and files written into its home before the first (paths relative to the home).
     */
    model_endpoint: z
      .strictObject({
        env: z.record(VariableName, z.string()).default({}),
        /** `{model_name}` when the run names no model (a harness that needs a name to offer its tools, say). */
        default_model: z.string().min(1).optional(),
        files: z.array(z.strictObject({ path: z.string().regex(/^[^/].*$/, "a path relative to the agent's home"), content: z.string() })).default([]),
      })
      .optional(),
    /**
     * Files of switch-swe put into the agent's home before its first request (a harness plugin, say):
     * `source` a file or directory, relative to the adapter that names it; `path` relative to the home.
     */
    home_files: z
      .array(z.strictObject({ path: z.string().regex(/^(?!\/)(?!.*(^|\/)\.\.(\/|$)).+$/, "a path inside the agent's home"), source: z.string().min(1) }))
      .default([]),
    /**
     * A context manager between the harness and its model endpoint (plugins/rcm/relay.ts, the
     * Resumption Context Manager): started for each run given a model endpoint, the harness given
     * its URL for the endpoint's. `program` relative to the adapter that names it.
     */
    context_relay: z.strictObject({ program: z.string().min(1), mode: z.enum(["router", "rcm"]) }).optional(),
    /** Variables set for every request whatever the endpoint: telemetry, update checks and the like switched off. */
    constant_env: z.record(VariableName, z.string()).default({}),
    /** On the host: HOME (and the XDG directories) are the run's own, so the harness keeps its state, settings and conversations there and never in the user's. */
    isolated_home: z.boolean().default(false),
    /**
     * The command's standard input, from the same placeholders as a command (`{message}`, say):
     * for a harness that mangles a message given as an argument (OpenCode quotes it and escapes its
     * double quotes). Empty when not given.
     */
    stdin: z.string().optional(),
    /**
     * A file the harness appends its structured events to, read with its output after each attempt
     * (what it added during the attempt only): aider's analytics log, say. Placeholders as a command's.
     */
    usage_file: z.string().optional(),
    /** Reads the command's output for usage, failed requests, infrastructure faults and the conversation id. */
    usage: z.enum(USAGE_PARSERS).optional(),
  })
  .refine((a) => Boolean(a.scripted) !== Boolean(a.command), { message: "give exactly one of scripted and command", path: ["command"] })
  .refine((a) => onlyPlaceholders([...(a.command ?? []), ...(a.continue_command ?? [])], AGENT_PLACEHOLDERS), {
    message: `a command may use only the placeholders ${AGENT_PLACEHOLDERS.join(", ")}`,
    path: ["command"],
  })
  .refine((a) => onlyPlaceholders(a.stdin === undefined ? [] : [a.stdin], AGENT_PLACEHOLDERS), {
    message: `stdin may use only ${AGENT_PLACEHOLDERS.join(", ")}`,
    path: ["stdin"],
  })
  .refine(
    (a) =>
      a.usage_file === undefined ||
      (a.usage !== undefined && onlyPlaceholders([a.usage_file], AGENT_PLACEHOLDERS) && (a.runs === "host" || a.usage_file.startsWith("{session_dir}/"))),
    {
      message:
        "a usage file is read with a usage reader, may use only the command's placeholders, and in the environment is under {session_dir} (the directory shared with this machine)",
      path: ["usage_file"],
    },
  )
  .refine((a) => a.context_relay === undefined || a.model_endpoint !== undefined, {
    message: "a context relay stands in front of the model endpoint: the adapter says how the harness is pointed at one (model_endpoint)",
    path: ["context_relay"],
  })
  .refine((a) => onlyPlaceholders([a.message], MESSAGE_PLACEHOLDERS), {
    message: `the message may use only ${MESSAGE_PLACEHOLDERS.join(", ")}`,
    path: ["message"],
  })
  .refine((a) => onlyPlaceholders(Object.values(a.model_endpoint?.env ?? {}), ENDPOINT_PLACEHOLDERS), {
    message: `the endpoint's variables may use only ${ENDPOINT_PLACEHOLDERS.join(", ")}`,
    path: ["model_endpoint", "env"],
  })
  .refine(
    (a) =>
      onlyPlaceholders(
        a.model_endpoint?.files.map((f) => f.content) ?? [],
        ENDPOINT_PLACEHOLDERS.filter((p) => p !== "{model_key}"),
      ),
    {
      message: "a file may not hold {model_key} (a key is never written anywhere): name a variable the harness reads it from",
      path: ["model_endpoint", "files"],
    },
  )
  .refine((a) => !a.scripted || (!a.install && !a.model_endpoint && !a.usage), {
    message: "a scripted agent is built in: no install, endpoint or usage",
    path: ["scripted"],
  })
  .refine((a) => typeof a.conversation !== "object" || validRegex(a.conversation.capture), {
    message: "not a valid regular expression",
    path: ["conversation", "capture"],
  })
  .refine((a) => !a.scripted || a.runs === "host", { message: "a scripted agent is built into switch-swe and runs on the host", path: ["runs"] })
  .refine((a) => a.runs === "host" || a.install?.registry !== "pypi", {
    // Its virtual environment names this machine's interpreter by path: in an image it is not there.
    message: "a PyPI harness is installed into the environment by a setup command, not from this machine's tools directory",
    path: ["install", "registry"],
  })
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

/** What one request (or a run) incurred, as the harness's own output reports it. */
export const RequestUsage = z.strictObject({
  /** Input tokens not read from the provider's cache (cache writes included); all input tokens where cached_input_tokens is null. */
  input_tokens: z.number().int().nonnegative(),
  /** Null where the harness does not split cache reads out (aider reports prompt tokens whole). */
  cached_input_tokens: z.number().int().nonnegative().nullable(),
  output_tokens: z.number().int().nonnegative(),
  /** Null where the harness's output does not say (Codex CLI's JSON events do not count model calls). */
  model_calls: z.number().int().nonnegative().nullable(),
  tool_calls: z.number().int().nonnegative(),
});
export type RequestUsage = z.infer<typeof RequestUsage>;

/**
 * How a context manager (the Resumption Context Manager's task history router, +Router and +RCM)
 * assigned user requests to tasks, counted by kind, from its own log: no one reads a run's figures
 * as the study's model-based router when its requests were routed by reference.
 */
export const RoutingDecisions = z.strictObject({
  /** Decided by the checkout the request names, without a model call. */
  reference: z.number().int().nonnegative(),
  /** Decided by the router model's answer. */
  router: z.number().int().nonnegative(),
  /** Neither (no auxiliary model, or its call failed or could not be read): the request keeps the full history. */
  fallback: z.number().int().nonnegative(),
});
export type RoutingDecisions = z.infer<typeof RoutingDecisions>;

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
  /** Summed over the request's attempts, from the harness's output (agents with a usage reader only; null: it reported none). */
  usage: RequestUsage.nullable().optional(),
  /** The context manager's routing decisions during the request (runs with one that logs them). */
  routing: RoutingDecisions.optional(),
  /** Why the request failed, when the harness says so or exits non-zero (its last attempt's). */
  failure: z.strictObject({ kind: z.enum(["infrastructure", "model", "exit"]), detail: z.string() }).optional(),
  /** Attempts repeated because the provider failed (overloaded, unreachable): at most the run's infrastructure retries. */
  infrastructure_retries: z.number().int().nonnegative().optional(),
});
export type TrajectoryRequest = z.infer<typeof TrajectoryRequest>;

/** What a session run did, from its trajectory: the behaviour the study discusses beside resolution. */
export const SessionBehaviour = z.object({
  agent: z.string(),
  /**
   * Where the agent ran: in the focus task's environment (what results are reported from), or on
   * the host, for developing adapters: there it sees the whole machine, the benchmark's held-out
   * assets included (SPEC §2.7). Absent in reports written before it was recorded.
   */
  agent_runs: z.enum(["host", "environment"]).optional(),
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
  /** The conversation the run's requests were delivered in (command agents), for matching a provider's or endpoint's log. */
  conversation: z.string().optional(),
  /** Requests that failed (the harness said so, or exited non-zero), of any kind. */
  failed_requests: z.number().int().nonnegative().default(0),
  /** Set when the run ended on an infrastructure fault that outlasted its retries: the requests after it were not delivered. */
  infrastructure_fault: z.string().optional(),
  /**
   * The harness's reported usage (agents with a usage reader): the whole run, and the resumed
   * substantive focus requests only (the study's Switch-Focus: no first focus request, no
   * interruption, no finalization).
   */
  usage: z.strictObject({ all: RequestUsage, focus_resumed: RequestUsage }).optional(),
  /** The context manager's routing decisions over the whole run, by kind (runs with one that logs them). */
  routing: RoutingDecisions.optional(),
  /** Seconds the runner itself took (provisioning the checkouts, snapshots, bookkeeping), the agent's own time left out. */
  runner_seconds: z.number().nonnegative(),
  /** The trajectory file, relative to the report's own directory when it can be. */
  trajectory: z.string(),
});
export type SessionBehaviour = z.infer<typeof SessionBehaviour>;
