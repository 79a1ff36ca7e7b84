/**
 * The scripted model's answers to a context manager's auxiliary calls (the Resumption Context
 * Manager's router and memory, plugins/rcm/): read from what the call's prompt contains,
 * as a model would read it, and never from the benchmark's schedules or reference changes. A call
 * is one of them by its system prompt's first line.
 */
import type { ModelCall } from "./wire.ts";

const ROUTER_MARKER = "switch-swe RCM: task history router";
const MEMORY_MARKER = "switch-swe RCM: task state memory";

type Json = Record<string, unknown>;

/** The JSON between `<tag>` and `</tag>` in the call's last user turn. */
function tagged(call: ModelCall, tag: string): Json | undefined {
  const last = [...call.turns].reverse().find((t) => t.role === "user");
  const text = last?.role === "user" ? last.text : "";
  const match = new RegExp(`<${tag}>\\n?([\\s\\S]*?)\\n?</${tag}>`).exec(text);
  if (!match) return undefined;
  try {
    return JSON.parse(match[1]!) as Json;
  } catch {
    return undefined;
  }
}

const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : []);
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * Routing: a request naming a task's checkout goes to it (0.95); one naming files or code symbols
 * of exactly one task, to it (0.85); a request to continue, to the latest request's task (0.9);
 * anything else is new work, with a confidence (0.5) under which the plugin keeps the full history.
 */
function route(input: Json): Json {
  const request = String(input.request ?? "");
  const catalogue = (Array.isArray(input.catalogue) ? input.catalogue : []) as Json[];
  const earlier = (Array.isArray(input.earlier_requests) ? input.earlier_requests : []) as Json[];
  const byCheckout = catalogue.filter((t) => typeof t.checkout === "string" && new RegExp(`${escape(t.checkout)}(?![\\w.-])`).test(request));
  if (byCheckout.length === 1) return { tasks: [byCheckout[0]!.id], related: [], confidence: 0.95, reason: "the request names its checkout" };
  const byName = catalogue.filter((t) => [...strings(t.files), ...strings(t.symbols)].some((name) => request.includes(name)));
  if (byName.length === 1) return { tasks: [byName[0]!.id], related: [], confidence: 0.85, reason: "the request names its files or symbols" };
  const latest = earlier.at(-1);
  if (latest && /\bcontinue\b/i.test(request) && typeof latest.task === "string" && latest.task !== "unassigned")
    return { tasks: latest.task.split(","), related: [], confidence: 0.9, reason: "the request continues the latest one" };
  return { tasks: ["new"], related: [], confidence: 0.5, reason: "the request names nothing an earlier task has" };
}

/** A request's text without the header lines a harness's message template puts before it. */
const requestBody = (text: string) =>
  text
    .split("\n")
    .filter((l) => !/^(Repository|Working directory)[^:\n]*:/.test(l))
    .join("\n")
    .trim();

/**
 * Memory: every request's text is a constraint, verbatim; each successful write a tool showed is
 * observed work; what the assistant said is a claim; the latest request is pending until the
 * assistant says it is done.
 */
function remember(input: Json): Json {
  const record = (input.record ?? {}) as Json;
  const interactions = (Array.isArray(input.interactions) ? input.interactions : []) as Json[];
  const constraints = [...((record.constraints as Json[] | undefined) ?? [])];
  const completed = [...((record.completed as Json[] | undefined) ?? [])];
  const files = new Set(strings(record.files));
  let goal = typeof record.goal === "string" ? record.goal : "";
  let pending: Json[] = [];
  for (const interaction of interactions) {
    const id = String(interaction.id);
    const body = requestBody(String(interaction.user_request ?? ""));
    if (!goal) goal = body.split("\n")[0] ?? "";
    constraints.push({ text: body, sources: [id] });
    for (const observation of (interaction.tool_observations as Json[] | undefined) ?? []) {
      const path = /"(?:filePath|file_path|path)":\s*"([^"]+)"/.exec(String(observation.input))?.[1];
      if (path) files.add(path);
      if (!observation.failed && /^(write|edit|patch|bash)$/.test(String(observation.tool)) && path)
        completed.push({ text: `wrote ${path}`, sources: [String(observation.id)], evidence: "observed" });
    }
    const claims = String(interaction.assistant_claims ?? "").trim();
    if (claims) completed.push({ text: claims.split("\n")[0], sources: [id], evidence: "claimed" });
    pending = /\bdone\b/i.test(claims) ? [] : [{ text: body.split("\n")[0], sources: [id] }];
  }
  return { goal, constraints, completed, pending, files: [...files].sort(), uncertainties: [] };
}

/** The answer to an auxiliary call, or undefined when the call is not one. */
export function auxiliaryAnswer(call: ModelCall): string | undefined {
  if (call.system.startsWith(ROUTER_MARKER)) return JSON.stringify(route(tagged(call, "routing_input") ?? {}));
  if (call.system.startsWith(MEMORY_MARKER)) return JSON.stringify(remember(tagged(call, "memory_input") ?? {}));
  return undefined;
}
