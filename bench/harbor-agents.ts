// Harbor's own installed agents against switch-swe's scripted model, for bench/harbor.ts: a job per
// configuration (Claude Code, Codex CLI or OpenCode natively, or with switch-swe's context relay,
// +Router or +RCM, between the agent and the model), each agent resuming its conversation from step
// to step (--resume-trajectory), its harness the one `switch-swe agents install` put on this
// machine (mounted: Harbor's own install needs a network the containers here lack), the model the
// endpoint on loopback reached through a forwarder on Docker's bridge. Also: whether the endpoint
// saw one conversation grow through each trial, read from its log.
import { chownSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { harborAgentMount } from "../pipeline/harbor/agent-mounts.ts";
import { RELAY_JOB } from "../pipeline/harbor/layout.ts";
import type { Logger } from "../pipeline/logger.ts";
import { readCall } from "../pipeline/model-endpoint/wire.ts";
import { recogniseRequests, type EndpointKnowledge } from "../pipeline/model-endpoint/scripts.ts";
import { ModelEndpoint } from "../pipeline/model-endpoint/server.ts";
import { startContextRelay } from "../pipeline/session/context-relay.ts";
import { loadAgent } from "../pipeline/session/agents.ts";
import { bridgeGateway, forwardFromBridge, harbor } from "./harbor-runner.ts";

/** The uid Harbor runs as: the exported tasks' agent user's (agent:1000), whose conversation Harbor's log handling then leaves readable to it. */
export const HARBOR_UID = 1000;

/** Harbor's agent of each harness, the model name it is given, and the adapter whose harness is mounted for it. */
export const HARBOR_AGENTS = {
  "claude-code": { agent: "claude-code", model: "anthropic/claude-sonnet-4-5", adapter: "claude-code-environment.yaml" },
  codex: { agent: "codex", model: "openai/gpt-5-codex", adapter: "codex-environment.yaml" },
  opencode: { agent: "opencode", model: "openai/scripted", adapter: "opencode-environment.yaml" },
} as const;
export type Harness = keyof typeof HARBOR_AGENTS;

export interface AgentJob {
  harness: Harness;
  /** The job's name, the report's configuration: the harness's, `-router` or `-rcm` added with a relay. */
  configuration: string;
  relay?: "router" | "rcm";
  /** The tasks: one job for all, or (with a relay, which serves one conversation) one job each. */
  tasks: string[];
}

export interface AgentJobContext {
  dataset: string;
  jobsDir: string;
  toolsDir: string;
  mounts: string[];
  cwd: string;
  knowledge: EndpointKnowledge;
  log: Logger;
}

/** One trial's job: its name (configuration/task) and the endpoint that served it alone. */
export interface TrialJob {
  jobName: string;
  endpoint: ModelEndpoint;
  code: number;
}

/**
 * Runs one configuration: a job per task (named configuration/task, the task's pattern's `*` left
 * out), `parallel` at a time, each with its own endpoint (its log: that trial's calls alone, so a
 * trial's conversation is read apart from the others') and, with a relay, its own relay in the
 * job's directory. Resolves to the trials' jobs and the seconds it took.
 */
export async function runAgentJob(job: AgentJob, ctx: AgentJobContext, parallel = 2): Promise<{ trials: TrialJob[]; seconds: number }> {
  const spec = HARBOR_AGENTS[job.harness];
  const mount = harborAgentMount(loadAgent(resolve("data/agents", spec.adapter)), ctx.toolsDir);
  const started = Date.now();
  const gateway = bridgeGateway();
  const queue = [...job.tasks];
  const trials: TrialJob[] = [];
  const worker = async () => {
    for (let task = queue.shift(); task !== undefined; task = queue.shift()) {
      const jobName = join(job.configuration, task.replaceAll("*", ""));
      const logFile = join(ctx.cwd, `${jobName.replaceAll("/", "__")}.endpoint.jsonl`);
      const endpoint = await ModelEndpoint.start({ script: "solve", knowledge: ctx.knowledge, logFile });
      try {
        trials.push({ jobName, endpoint, code: await runOneJob(job, spec, mount, [task], jobName, endpoint, gateway, ctx) });
      } finally {
        await endpoint.close();
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, job.tasks.length) }, worker));
  trials.sort((a, b) => (a.jobName < b.jobName ? -1 : 1));
  return { trials, seconds: (Date.now() - started) / 1000 };
}

/** One Harbor job: a relay of its own in front of the endpoint when the configuration has one, the forwarder, Harbor. Resolves to Harbor's exit code. */
async function runOneJob(
  job: AgentJob,
  spec: (typeof HARBOR_AGENTS)[Harness],
  mount: ReturnType<typeof harborAgentMount>,
  tasks: string[],
  jobName: string,
  endpoint: ModelEndpoint,
  gateway: string,
  ctx: AgentJobContext,
): Promise<number> {
  const jobDir = join(ctx.jobsDir, jobName);
  mkdirSync(jobDir, { recursive: true });
  // Harbor runs as the agent's uid and writes the job's files: the configuration's directory and the job's are its.
  for (const d of [join(ctx.jobsDir, jobName.split("/")[0]!), jobDir]) chownSync(d, HARBOR_UID, HARBOR_UID);
  const relay = job.relay
    ? await startContextRelay(
        { program: resolve("plugins/rcm/relay.ts"), mode: job.relay },
        endpoint.url,
        join(jobDir, RELAY_JOB.dir),
        join(jobDir, RELAY_JOB.log),
        ctx.log,
      )
    : undefined;
  try {
    const forward = await forwardFromBridge(gateway, Number(new URL(relay?.url ?? endpoint.url).port));
    try {
      const argv = [
        "harbor",
        "run",
        "-p",
        join(ctx.dataset, "tasks"),
        ...tasks.flatMap((t) => ["-i", t]),
        "-n",
        "1",
        "--jobs-dir",
        ctx.jobsDir,
        "--job-name",
        jobName,
      ];
      const agent = ["-a", spec.agent, "-m", spec.model, "--resume-trajectory", "--base-url", forward.url, "--api-key-name", "SWITCH_SWE_BENCH_KEY"];
      const ran = await harbor([...argv, "-y", "--no-delete", ...agent, "--mounts", JSON.stringify([mount])], {
        mounts: ctx.mounts,
        cwd: ctx.cwd,
        env: { SWITCH_SWE_BENCH_KEY: "switch-swe-loopback" },
        uid: HARBOR_UID,
        log: join(ctx.cwd, `${jobName.replaceAll("/", "__")}.log`),
      });
      return ran.code;
    } finally {
      await forward.close();
    }
  } finally {
    await relay?.close();
  }
}

/**
 * The conversation one trial's endpoint saw, in the order of its calls: for each call, how many of
 * the schedule's requests its conversation carries, cut into stretches where that count drops. One
 * conversation growing through a trial of n requests reads 1, 1, …, 2, …, n in one stretch; a
 * fresh conversation per step would drop back to 1 at every step.
 */
export function conversationGrowth(endpoint: ModelEndpoint, knowledge: EndpointKnowledge): { requestsSeen: number[]; restarts: number; stretches: number[][] } {
  const requestsSeen = endpoint.calls
    .filter((c) => c.status === 200 && c.request)
    .map((c) => recogniseRequests(readCall(c.protocol, JSON.parse(c.body)), knowledge).requests.length);
  const stretches: number[][] = [];
  requestsSeen.forEach((n, i) => (i === 0 || n < requestsSeen[i - 1]! ? stretches.push([n]) : stretches.at(-1)!.push(n)));
  // A stretch is shown by its distinct counts, in order (1 2 3 … n).
  return { requestsSeen, restarts: Math.max(0, stretches.length - 1), stretches: stretches.map((s) => [...new Set(s)]) };
}

// Harbor's own answer to "which agents can resume": every agent its factory registers, with its
// declared capabilities' `resume`, read from the installed package (Harbor 0.26's
// trial/multi_step.py refuses a multi-step task with --resume-trajectory for the others).
const RESUME_CAPABILITY = `
from harbor.agents.factory import AgentFactory, _import_agent_class
for name, path in AgentFactory._AGENT_MAP.items():
    print(name.value, bool(getattr(_import_agent_class(path).capabilities, "resume", False)))
`;

/** The agents Harbor registers, split by whether they declare resume, as the installed Harbor says. */
export async function harborResumeSupport(ctx: { mounts: string[]; cwd: string }): Promise<{ resume: string[]; without: string[] }> {
  const ran = await harbor(["python3", "-c", RESUME_CAPABILITY], { ...ctx, env: { LITELLM_LOCAL_MODEL_COST_MAP: "True" } });
  const rows = ran.output
    .split("\n")
    .map((l) => /^([a-z0-9-]+) (True|False)$/.exec(l.trim()))
    .filter((m) => m !== null);
  if (ran.code !== 0 || rows.length === 0) throw new Error(`reading Harbor's agents' capabilities failed: ${ran.output.slice(-2000)}`);
  return { resume: rows.filter((m) => m[2] === "True").map((m) => m[1]!), without: rows.filter((m) => m[2] === "False").map((m) => m[1]!) };
}
