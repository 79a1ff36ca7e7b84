import type { SessionSpec } from "../schemas/session.ts";
import type { HeldoutTask } from "../schemas/heldout.ts";
import { SKIPPED_DIRS } from "../checkouts/snapshot.ts";
import { quote } from "../executors/recipe-scripts.ts";
import { SESSION_RECORDS } from "../harbor-layout.ts";
import { CONTINUATION_MESSAGE } from "../session/types.ts";

/** task.toml, instruction.md, the oracle's solution and the session agent's plan of one exported task. */

export type Condition = "control" | "switched";

/** A TOML value of the few kinds task.toml holds; JSON's string escapes are TOML's basic-string escapes. */
type TomlValue = string | number | boolean | string[];

function tomlValue(value: TomlValue): string {
  if (Array.isArray(value)) return `[${value.map((v) => JSON.stringify(v)).join(", ")}]`;
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}

/** Tables in order, each a list of key = value lines; a key whose value is undefined is left out. */
export function toml(tables: [string | null, Record<string, TomlValue | undefined>][]): string {
  return (
    tables
      .map(([name, entries]) => {
        const lines = Object.entries(entries)
          .filter((e): e is [string, TomlValue] => e[1] !== undefined)
          .map(([k, v]) => `${k} = ${tomlValue(v)}`);
        return [...(name ? [`[${name}]`] : []), ...lines].join("\n");
      })
      .join("\n\n") + "\n"
  );
}

/** The session's checkouts' common parent (/workspace for /workspace/w00 ...): where a harness that works in the workspace runs. */
export function workspaceOf(spec: SessionSpec): string {
  const parents = new Set(spec.checkouts.map((c) => c.path.replace(/\/[^/]+\/?$/, "") || "/"));
  return parents.size === 1 ? [...parents][0]! : "/";
}

export const focusCheckoutOf = (spec: SessionSpec): string => spec.checkouts.find((c) => c.task_id === spec.focus)!.path;

export interface TaskConfigInput {
  spec: SessionSpec;
  condition: Condition;
  heldout: HeldoutTask;
  /** Limits of a verifier run (the pipeline's execution limits, as verify's containers have them). */
  limits: { cpus: number; memory_mb: number };
  agentUser: string;
  name: string;
  /** The verifier's network: none (as verify's containers), or public where the Harbor environment cannot enforce none. */
  verifierNetwork: VerifierNetwork;
}

export type VerifierNetwork = "no-network" | "public";

/** Seconds Harbor gives the whole session: every request its budget and every continuation, plus a minute a request for the wrapper's own work. */
function sessionSeconds(spec: SessionSpec, condition: Condition): number {
  const requests = spec.conditions[condition].length;
  return requests * (spec.budget.per_request_seconds * (1 + spec.budget.timeout_continuations) + 60);
}

/**
 * task.toml: the budget and continuations, resources, network, the separate verifier (its image
 * built from tests/, no network unless asked otherwise) that gets the focus checkout as Harbor's artifact, and the
 * session's metadata. The agent never reads it.
 */
export function taskToml(input: TaskConfigInput): string {
  const { spec, condition, heldout } = input;
  const requests = spec.conditions[condition];
  return toml([
    [null, { schema_version: "1.4", artifacts: [focusCheckoutOf(spec)] }],
    [
      "task",
      {
        name: `switch-swe/${input.name}`,
        description: `Switch-SWE ${spec.benchmark}: session ${spec.session_id}, ${condition === "control" ? "uninterrupted control" : "switched"} condition (${requests.length} requests, ${spec.repo})`,
        keywords: ["switch-swe", "task-switching", spec.locality, condition],
      },
    ],
    [
      "metadata",
      {
        benchmark: spec.benchmark,
        session_id: spec.session_id,
        condition,
        locality: spec.locality,
        repository: spec.repo,
        requests: requests.length,
        per_request_seconds: spec.budget.per_request_seconds,
        timeout_continuations: spec.budget.timeout_continuations,
        seed_benchmark: spec.seeds.benchmark,
        seed_case: spec.seeds.case,
      },
    ],
    ["verifier", { environment_mode: "separate", timeout_sec: heldout.environment.test_timeout_seconds + 600, network_mode: input.verifierNetwork }],
    ["verifier.environment", { network_mode: input.verifierNetwork, cpus: input.limits.cpus, memory_mb: input.limits.memory_mb, build_timeout_sec: 3600 }],
    ["agent", { timeout_sec: sessionSeconds(spec, condition), user: input.agentUser }],
    ["environment", { network_mode: "public", workdir: workspaceOf(spec), build_timeout_sec: 3600 }],
  ]);
}

/** The plan the session agent delivers: each request's message parts and budget; never uploaded into the container. */
export function sessionPlan(spec: SessionSpec, condition: Condition, pollSeconds: number): string {
  const schedule = spec.conditions[condition];
  const plan = {
    benchmark: spec.benchmark,
    session_id: spec.session_id,
    condition,
    workspace: workspaceOf(spec),
    checkouts: spec.checkouts.map((c) => c.path),
    focus_checkout: focusCheckoutOf(spec),
    budget: spec.budget,
    continuation_message: CONTINUATION_MESSAGE,
    poll_seconds: pollSeconds,
    snapshot_skipped_dirs: [...SKIPPED_DIRS].sort(),
    records: SESSION_RECORDS,
    requests: schedule.map((r, i) => ({
      repository: r.message.repository,
      checkout: r.message.checkout,
      text: r.message.text,
      // A return to the focus after another task's request: the runner times the focus's first change.
      focus_return: r.task_id === spec.focus && i > 0 && schedule[i - 1]!.task_id !== spec.focus,
    })),
  };
  return JSON.stringify(plan, null, 2) + "\n";
}

/** Harbor's oracle: the focus task's reference implementation applied to its checkout. */
export function solveScript(spec: SessionSpec): string {
  return [
    "#!/bin/bash",
    "# Harbor's oracle agent: the focus task's reference implementation, applied to the focus checkout.",
    "set -euo pipefail",
    `cd ${quote(focusCheckoutOf(spec))}`,
    "git -c safe.directory='*' apply --whitespace=nowarn --binary /solution/reference.patch",
    "",
  ].join("\n");
}
