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

/** Runs one configuration's job(s) with its own endpoint; resolves to the endpoint (its calls) and Harbor's exit codes and seconds. */
export async function runAgentJob(job: AgentJob, ctx: AgentJobContext): Promise<{ endpoint: ModelEndpoint; codes: number[]; seconds: number }> {
  const spec = HARBOR_AGENTS[job.harness];
  const mount = harborAgentMount(loadAgent(resolve("data/agents", spec.adapter)), ctx.toolsDir);
  const endpoint = await ModelEndpoint.start({ script: "solve", knowledge: ctx.knowledge, logFile: join(ctx.cwd, `${job.configuration}.endpoint.jsonl`) });
  const codes: number[] = [];
  const started = Date.now();
  // Without a relay, one job of every task; with one, a job per task (and a relay of its own, in the job's directory).
  const batches = job.relay ? job.tasks.map((t) => [t]) : [job.tasks];
  const gateway = bridgeGateway();
  try {
    for (const tasks of batches) {
      // A job of one task is named for the task (its pattern's `*` left out).
      const jobName = job.relay ? join(job.configuration, tasks[0]!.replaceAll("*", "")) : job.configuration;
      codes.push(await runOneJob(job, spec, mount, tasks, jobName, endpoint, gateway, ctx));
    }
  } finally {
    await endpoint.close();
  }
  return { endpoint, codes, seconds: (Date.now() - started) / 1000 };
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
  chownSync(join(ctx.jobsDir, jobName.split("/")[0]!), HARBOR_UID, HARBOR_UID);
  const relay = job.relay
    ? await startContextRelay(
        { program: resolve("plugins/rcm/relay.ts"), mode: job.relay },
        endpoint.url,
        join(jobDir, "context-relay"),
        join(jobDir, "context-relay.log"),
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
 * The conversations the endpoint saw, in the order of its calls: for each call, how many of the
 * schedule's requests its conversation carries. One conversation growing through a trial of n
 * requests reads 1, 1, …, 2, …, n and never drops; a fresh conversation per step would start
 * again at 1 at every step.
 */
export function conversationGrowth(endpoint: ModelEndpoint, knowledge: EndpointKnowledge): { requestsSeen: number[]; restarts: number } {
  const requestsSeen = endpoint.calls
    .filter((c) => c.status === 200 && c.request)
    .map((c) => recogniseRequests(readCall(c.protocol, JSON.parse(c.body)), knowledge).requests.length);
  // A drop is a new trial (or a conversation begun again): count them.
  const restarts = requestsSeen.filter((n, i) => i > 0 && n < requestsSeen[i - 1]!).length;
  return { requestsSeen, restarts };
}
