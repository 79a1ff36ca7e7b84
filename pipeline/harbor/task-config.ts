import type { HeldoutTask } from "../schemas/heldout.ts";
import type { SessionSpec } from "../schemas/session.ts";
import type { Condition } from "../schemas/session.ts";
import { OBSERVED } from "./layout.ts";
import type { TaskStep } from "./steps.ts";

/** task.toml of one exported task (Harbor 0.26's task format, schema 1.4, with [[steps]]). */

/** A TOML value of the kinds task.toml holds; JSON's string escapes are TOML's basic-string escapes. */
type TomlValue = string | number | boolean | (string | Record<string, string>)[];

function tomlValue(value: TomlValue): string {
  const inline = (v: string | Record<string, string>) =>
    typeof v === "string"
      ? JSON.stringify(v)
      : `{ ${Object.entries(v)
          .map(([k, x]) => `${k} = ${JSON.stringify(x)}`)
          .join(", ")} }`;
  if (Array.isArray(value)) return `[${value.map(inline).join(", ")}]`;
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}

/** A table: `[name]`, `[[name]]` (one entry of an array of tables) when `array`, or the root when the name is null. */
export interface TomlTable {
  name: string | null;
  array?: boolean;
  entries: Record<string, TomlValue | undefined>;
}

/** Tables in order, each a list of key = value lines; a key whose value is undefined is left out. */
export function toml(tables: TomlTable[]): string {
  return (
    tables
      .map(({ name, array, entries }) => {
        const lines = Object.entries(entries)
          .filter((e): e is [string, TomlValue] => e[1] !== undefined)
          .map(([k, v]) => `${k} = ${tomlValue(v)}`);
        return [...(name ? [array ? `[[${name}]]` : `[${name}]`] : []), ...lines].join("\n");
      })
      .join("\n\n") + "\n"
  );
}

/** The session's checkouts' common parent (/workspace for /workspace/w00 ...): where every request's harness runs. */
export function workspaceOf(spec: SessionSpec): string {
  const parents = new Set(spec.checkouts.map((c) => c.path.replace(/\/[^/]+\/?$/, "") || "/"));
  return parents.size === 1 ? [...parents][0]! : "/";
}

export const focusCheckoutOf = (spec: SessionSpec): string => spec.checkouts.find((c) => c.task_id === spec.focus)!.path;

export type VerifierNetwork = "no-network" | "public";

export interface TaskConfigInput {
  spec: SessionSpec;
  condition: Condition;
  heldout: HeldoutTask;
  steps: TaskStep[];
  /** Limits of a verifier run (the pipeline's execution limits, as verify's containers have them). */
  limits: { cpus: number; memory_mb: number };
  agentUser: string;
  name: string;
  /** The verifiers' network: none (as verify's containers), or public where the Harbor environment cannot enforce none. */
  verifierNetwork: VerifierNetwork;
}

/** A step's tables: its name and, on the last, the focus checkout as the artifact its verifier scores, and its verifier; on the first, the checkouts' first observation. */
function stepTables(input: TaskConfigInput, step: TaskStep, index: number): TomlTable[] {
  const lastStep = index === input.steps.length - 1;
  const artifacts = [...(index === 0 ? [OBSERVED.base] : []), ...(lastStep ? [focusCheckoutOf(input.spec)] : [])];
  return [
    { name: "steps", array: true, entries: { name: step.name, artifacts: artifacts.length ? artifacts : undefined } },
    { name: "steps.agent", entries: { timeout_sec: input.spec.budget.per_request_seconds } },
    ...(lastStep
      ? [
          {
            name: "steps.verifier",
            entries: { timeout_sec: input.heldout.environment.test_timeout_seconds + 600, network_mode: input.verifierNetwork },
          },
          {
            name: "steps.verifier.environment",
            entries: { network_mode: input.verifierNetwork, cpus: input.limits.cpus, memory_mb: input.limits.memory_mb, build_timeout_sec: 3600 },
          },
        ]
      : []),
  ];
}

/**
 * task.toml: one step per scheduled request, each with the request's budget as its timeout, the
 * trial's reward the last step's (`final`), every verifier separate from the agent's container
 * (the last step's built from its tests/, the others' from the task's tests/, scoring nothing),
 * after every request the checkouts observed by a collect hook and collected as an artifact, and
 * the session's metadata. The agent never reads it.
 */
export function taskToml(input: TaskConfigInput): string {
  const { spec, condition } = input;
  const requests = spec.conditions[condition];
  return toml([
    { name: null, entries: { schema_version: "1.4", multi_step_reward_strategy: "final", artifacts: [OBSERVED.current] } },
    {
      name: "task",
      entries: {
        name: `switch-swe/${input.name}`,
        description: `Switch-SWE ${spec.benchmark}: session ${spec.session_id}, ${condition === "control" ? "uninterrupted control" : "switched"} condition (${requests.length} requests, ${spec.repo})`,
        keywords: ["switch-swe", "task-switching", spec.locality, condition],
      },
    },
    ...input.steps.flatMap((step, i) => stepTables(input, step, i)),
    {
      name: "metadata",
      entries: {
        benchmark: spec.benchmark,
        session_id: spec.session_id,
        condition,
        locality: spec.locality,
        repository: spec.repo,
        requests: requests.length,
        per_request_seconds: spec.budget.per_request_seconds,
        seed_benchmark: spec.seeds.benchmark,
        seed_case: spec.seeds.case,
      },
    },
    { name: "verifier", entries: { environment_mode: "separate", timeout_sec: 300, network_mode: input.verifierNetwork } },
    { name: "verifier.environment", entries: { network_mode: input.verifierNetwork, build_timeout_sec: 3600 } },
    { name: "verifier.collect", array: true, entries: { command: `sh ${OBSERVED.script} ${OBSERVED.current}`, user: "root", timeout_sec: 600 } },
    { name: "agent", entries: { timeout_sec: spec.budget.per_request_seconds, user: input.agentUser } },
    { name: "environment", entries: { network_mode: "public", workdir: workspaceOf(spec), build_timeout_sec: 3600 } },
  ]);
}
