/**
 * The plugin's auxiliary model calls (routing, memory): OpenAI Chat Completions to the run's model
 * endpoint, each bounded in time, and each logged with its usage as an OpenCode `step_finish`
 * event in a file the session runner adds to the request's usage, so auxiliary calls count like
 * coding calls (Appendix F.3).
 */
import { appendFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";

export interface AuxiliaryModel {
  /** An OpenAI-compatible base URL (…/v1). */
  url: string;
  model: string;
  key?: string;
  /** Seconds one call may take. */
  timeoutSeconds: number;
}

export interface AuxiliaryResult {
  text: string;
  usage: { input: number; cached: number; output: number };
}

export async function callAuxiliary(model: AuxiliaryModel, prompt: { system: string; user: string }): Promise<AuxiliaryResult> {
  const response = await fetch(`${model.url.replace(/\/+$/, "")}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(model.key ? { authorization: `Bearer ${model.key}` } : {}) },
    body: JSON.stringify({
      model: model.model,
      temperature: 0,
      stream: false,
      messages: [
        { role: "system", content: prompt.system },
        { role: "user", content: prompt.user },
      ],
    }),
    signal: AbortSignal.timeout(model.timeoutSeconds * 1000),
  });
  const body = (await response.json().catch(() => undefined)) as
    | {
        choices?: { message?: { content?: unknown } }[];
        usage?: { prompt_tokens?: number; completion_tokens?: number; prompt_tokens_details?: { cached_tokens?: number } };
        error?: { message?: string };
      }
    | undefined;
  if (!response.ok) throw new Error(`the auxiliary model answered HTTP ${response.status}${body?.error?.message ? `: ${body.error.message}` : ""}`);
  const content = body?.choices?.[0]?.message?.content;
  const cached = body?.usage?.prompt_tokens_details?.cached_tokens ?? 0;
  return {
    text: typeof content === "string" ? content : "",
    usage: { input: Math.max(0, (body?.usage?.prompt_tokens ?? 0) - cached), cached, output: body?.usage?.completion_tokens ?? 0 },
  };
}

/** One auxiliary call's usage, appended as OpenCode reports a model call (`run --format json`'s step_finish). */
export function logUsage(file: string, sessionID: string, kind: "router" | "memory", usage: AuxiliaryResult["usage"]): void {
  mkdirSync(dirname(file), { recursive: true });
  const event = {
    type: "step_finish",
    sessionID,
    auxiliary: kind,
    part: { type: "step-finish", tokens: { input: usage.input, output: usage.output, reasoning: 0, cache: { read: usage.cached, write: 0 } } },
  };
  appendFileSync(file, JSON.stringify(event) + "\n");
}
