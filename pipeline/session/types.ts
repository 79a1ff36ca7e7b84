import type Docker from "dockerode";
import type { Logger } from "../logger.ts";
import type { AgentSpec, SessionBehaviour } from "../schemas/agent.ts";
import type { HeldoutTask } from "../schemas/heldout.ts";
import type { Condition, SessionSpec } from "../schemas/session.ts";

/** What a session run is given and gives back, and what an agent is told of one request. */

/** Sent, in the same conversation, when a request ran out of its budget: the same for every agent. */
export const CONTINUATION_MESSAGE = "Your time for the last request ran out before you finished. Continue that request from where you stopped.";

/** Repetitions of an attempt the provider failed (overloaded, unreachable) before the run ends on an infrastructure fault (the study's protocol). */
export const INFRASTRUCTURE_RETRIES = 2;

/** What driving an agent through one condition of one session (driveAgent) is given: no scoring, no report. */
export interface AgentRunOptions {
  spec: SessionSpec;
  condition: Condition;
  agent: AgentSpec;
  /** The run's own directory: the workspace (the five checkouts), agent logs, the trajectory. */
  runDir: string;
  /** A bare mirror of the session's repository holding every checkout's base commit. */
  mirror: string;
  /** The commit each checkout (by path) is provisioned from: its base, or its derived commit made in `mirror` (pipeline/checkouts/derived.ts). */
  checkoutCommits: ReadonlyMap<string, string>;
  /**
   * Held-out assets by task id, for the scripted test agents that replay reference patches only.
   * A command agent never gets them, and nothing of them enters the workspace otherwise.
   */
  heldout?: (taskId: string) => HeldoutTask | undefined;
  log: Logger;
  /** Seconds between looks at the focus checkout while a focus return runs. */
  pollSeconds?: number;
  /** For an agent that `runs: environment`: the engine, the focus task's image, labels for its container. */
  environment?: { docker: Docker; image: string; labels: Record<string, string> };
  /** The model endpoint an agent with `model_endpoint` is pointed at; without it the harness uses its own defaults. */
  model?: ModelTarget;
  /** Where agents with `install` were installed (switch-swe agents install): their executables are looked up there first. */
  toolsDir?: string;
}

/** A model endpoint: its base URL, the key (never written to a file) and the model's name. */
export interface ModelTarget {
  url: string;
  key?: string;
  name?: string;
}

/** What driving an agent through a session gives back: where the focus checkout is, the trajectory and what the agent did. */
export interface AgentRunResult {
  /** The focus checkout on the host, to collect the artifact from. */
  focusCheckout: string;
  trajectoryFile: string;
  behaviour: SessionBehaviour;
}

/** One request as an agent sees it: the repository, the active checkout, the text; nothing else. */
export interface AgentRequest {
  repository: string;
  /** The active checkout's path where the agent runs (on the host, or the session's path in the environment). */
  checkout: string;
  text: string;
  /** Whether it continues the same conversation (every request after the first, and continuations). */
  continued: boolean;
}

/** Paths a command template may name, as the agent sees them. */
export interface AgentPaths {
  /** The directory holding the five checkouts. */
  workspace: string;
  /** The agent's own directory for the session (its home in the environment). */
  sessionDir: string;
  /** The model's name for `{model_name}`: the run's, else the adapter's default, else empty. */
  modelName?: string;
}
