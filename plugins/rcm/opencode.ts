/**
 * The Resumption Context Manager (switch-swe; the study's Section 5 and Appendix F) as an OpenCode
 * plugin. Loaded from OpenCode's configuration ("plugin": ["file:///…/index.ts"]); it exports only
 * the plugin, because OpenCode calls every function a plugin module exports.
 *
 * Settings, from the environment:
 * - SWITCH_SWE_RCM: `router` (+Router: routing and compaction) or `rcm` (+RCM: memory too; the default).
 * - SWITCH_SWE_RCM_URL, SWITCH_SWE_RCM_MODEL, SWITCH_SWE_RCM_KEY: the auxiliary model (an OpenAI
 *   Chat Completions base URL, …/v1): the run's own model, so its calls count in the run's usage.
 *   Without a URL, requests are routed by the checkout they name alone and nothing is remembered.
 * - SWITCH_SWE_RCM_DIR: where state, `usage.jsonl` and `decisions.jsonl` go (default ~/.switch-swe/rcm).
 */
import { homedir } from "node:os";
import { join } from "node:path";
import { COMPACTION_INSTRUCTION, ResumptionContextManager, type Mode } from "./manager.ts";
import type { SessionMessage } from "./history.ts";

export const SwitchSweResumptionContextManager = async () => {
  const env = process.env;
  const mode: Mode = env.SWITCH_SWE_RCM === "router" ? "router" : "rcm";
  const manager = new ResumptionContextManager({
    mode,
    dir: env.SWITCH_SWE_RCM_DIR || join(homedir(), ".switch-swe", "rcm"),
    ...(env.SWITCH_SWE_RCM_URL
      ? {
          auxiliary: {
            url: env.SWITCH_SWE_RCM_URL,
            model: env.SWITCH_SWE_RCM_MODEL || "default",
            ...(env.SWITCH_SWE_RCM_KEY ? { key: env.SWITCH_SWE_RCM_KEY } : {}),
            timeoutSeconds: 120,
          },
        }
      : {}),
    warn: (message) => process.stderr.write(`switch-swe RCM: ${message}\n`),
  });
  return {
    "experimental.chat.messages.transform": async (_input: unknown, output: { messages: SessionMessage[] }) => {
      const messages = await manager.transform(output.messages);
      // The array OpenCode reads is changed in place; the messages in it are the stored ones or new objects.
      if (messages !== output.messages) output.messages.splice(0, output.messages.length, ...messages);
    },
    "experimental.session.compacting": async (_input: unknown, output: { context: string[] }) => {
      output.context.push(COMPACTION_INSTRUCTION);
    },
  };
};
