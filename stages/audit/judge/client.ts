import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { JudgeAdapter } from "../../../pipeline/schemas/audit.ts";
import { readReviewed } from "../../../pipeline/validation.ts";

/**
 * A model judge's calls, through its provider's official SDK: Anthropic Messages, or an
 * OpenAI-compatible Chat Completions API. The key comes from the environment variable the
 * adapter names and is never printed; the base URL from the adapter, its environment variable, or
 * the SDK's default.
 */

/** The judges shipped with the audit: data/audit/judges/<name>.yaml. */
const SHIPPED = new URL("../../../data/audit/judges/", import.meta.url);

export class JudgeSetupError extends Error {
  override name = "JudgeSetupError";
}

/** An adapter by file, or by name among the shipped ones; errors name the file and the field. */
export function loadJudgeAdapter(nameOrPath: string): { adapter: JudgeAdapter; file: string } {
  const shipped = fileURLToPath(new URL(`${nameOrPath}.yaml`, SHIPPED));
  const file = existsSync(nameOrPath) ? nameOrPath : shipped;
  if (!existsSync(file)) throw new JudgeSetupError(`--judge ${nameOrPath}: no such adapter file, nor ${shipped}`);
  return { adapter: readReviewed(file, JudgeAdapter, { what: "a judge adapter", error: (message) => new JudgeSetupError(message) }), file };
}

/** One model call's answer and the tokens it used. */
export interface JudgeCall {
  text: string;
  input_tokens: number;
  output_tokens: number;
}

export type CallJudge = (system: string, user: string) => Promise<JudgeCall>;

/** A caller for the adapter's model; the key must be in the environment before any call is made. */
export function judgeCaller(adapter: JudgeAdapter, env: NodeJS.ProcessEnv = process.env): CallJudge {
  const apiKey = env[adapter.key_env];
  if (!apiKey) throw new JudgeSetupError(`the judge needs an API key in the environment variable ${adapter.key_env}, which is not set`);
  const baseURL = adapter.base_url ?? (adapter.base_url_env ? env[adapter.base_url_env] : undefined);
  const options = { apiKey, ...(baseURL ? { baseURL } : {}), maxRetries: 2, timeout: 180_000 };
  if (adapter.protocol === "anthropic") {
    const client = new Anthropic(options);
    return async (system, user) => {
      const message = await client.messages.create({
        model: adapter.model,
        max_tokens: adapter.max_output_tokens,
        system,
        messages: [{ role: "user", content: user }],
      });
      const text = message.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("");
      const usage = message.usage;
      return { text, input_tokens: usage.input_tokens + (usage.cache_read_input_tokens ?? 0), output_tokens: usage.output_tokens };
    };
  }
  const client = new OpenAI(options);
  return async (system, user) => {
    const completion = await client.chat.completions.create({
      model: adapter.model,
      max_completion_tokens: adapter.max_output_tokens,
      messages: [
        { role: "system", content: system },
        { role: "user", content: user },
      ],
    });
    return {
      text: completion.choices[0]?.message.content ?? "",
      input_tokens: completion.usage?.prompt_tokens ?? 0,
      output_tokens: completion.usage?.completion_tokens ?? 0,
    };
  };
}
