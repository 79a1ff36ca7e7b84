/**
 * The Task History Router's assignment of a user request to tasks: explicit references first (the
 * checkout a request names decides on its own), then an auxiliary model call given the task
 * catalogue and the earlier requests. A task here is what the router has seen, never what a
 * benchmark knows: its checkout, repository, the files and code symbols its requests named.
 */

/** A task the router knows, with what identifies it. */
export interface CatalogueTask {
  id: string;
  /** The first line of its first request. */
  title: string;
  checkout?: string;
  repository?: string;
  files: string[];
  symbols: string[];
}

/** Which tasks a request belongs to, and how sure the router is. */
export interface Assignment {
  tasks: string[];
  /** Tasks the request refers to without belonging to them (their history is kept too). */
  related: string[];
  confidence: number;
  by: "reference" | "router" | "fallback";
  /** Why, in a few words (kept for the audit of a run). */
  reason: string;
}

/** Below this, the full history goes to the model (Appendix F.1). */
export const MIN_CONFIDENCE = 0.8;

/** What a request names explicitly. */
export interface References {
  checkout?: string;
  repository?: string;
  files: string[];
  symbols: string[];
}

const CHECKOUT_LINE = /^Working directory[^:\n]*:\s*(\/\S+)\s*$/m;
const REPOSITORY_LINE = /^Repository:\s*(\S+)\s*$/m;
const FILE = /(?:^|[\s`'"(])((?:[\w.-]+\/)+[\w.-]+\.[A-Za-z0-9]+)(?=$|[\s`'"),.:;])/g;
const SYMBOL = /`([A-Za-z_][\w.]*)(?:\([^`]*\))?`/g;

/** The references a request's text makes: the checkout and repository it names, files and code symbols. */
export function referencesIn(text: string): References {
  const checkout = CHECKOUT_LINE.exec(text)?.[1]?.replace(/\/+$/, "");
  const repository = REPOSITORY_LINE.exec(text)?.[1];
  const files = [...new Set([...text.matchAll(FILE)].map((m) => m[1]!))].sort();
  const symbols = [...new Set([...text.matchAll(SYMBOL)].map((m) => m[1]!))].sort();
  return { ...(checkout ? { checkout } : {}), ...(repository ? { repository } : {}), files, symbols };
}

/**
 * The assignment the references make on their own, or undefined when they do not decide: a
 * request naming a checkout belongs to the task of that checkout, or opens a new one.
 */
export function assignByReference(
  refs: References,
  catalogue: CatalogueTask[],
  newId: () => string,
): { assignment: Assignment; opened?: CatalogueTask } | undefined {
  if (!refs.checkout) return undefined;
  const known = catalogue.find((t) => t.checkout === refs.checkout);
  if (known) return { assignment: { tasks: [known.id], related: [], confidence: 1, by: "reference", reason: `names the checkout ${refs.checkout}` } };
  const opened: CatalogueTask = {
    id: newId(),
    title: "",
    checkout: refs.checkout,
    ...(refs.repository ? { repository: refs.repository } : {}),
    files: [],
    symbols: [],
  };
  return { assignment: { tasks: [opened.id], related: [], confidence: 1, by: "reference", reason: `names a checkout no task has: ${refs.checkout}` }, opened };
}

/** What a task's catalogue entry learns from a request assigned to it. */
export function learn(task: CatalogueTask, text: string, refs: References): void {
  if (!task.title) task.title = firstLine(text);
  if (!task.checkout && refs.checkout) task.checkout = refs.checkout;
  if (!task.repository && refs.repository) task.repository = refs.repository;
  task.files = [...new Set([...task.files, ...refs.files])].sort();
  task.symbols = [...new Set([...task.symbols, ...refs.symbols])].sort();
}

/** The request's first line that is not a Repository/Working directory header. */
function firstLine(text: string): string {
  const line = text.split("\n").find((l) => l.trim() && !REPOSITORY_LINE.test(l) && !CHECKOUT_LINE.test(l));
  return (line ?? "").trim().slice(0, 160);
}

/** The router call's marker: the model endpoint and a reader of a run's log know a routing call by it. */
export const ROUTER_MARKER = "switch-swe RCM: task history router";

/** The auxiliary call that routes a request the references did not decide. */
export function routerPrompt(request: string, catalogue: CatalogueTask[], earlier: { task: string; text: string }[]): { system: string; user: string } {
  const system = [
    ROUTER_MARKER,
    "You assign a coding agent's new user request to the tasks of its conversation.",
    'Answer with one JSON object and nothing else: {"tasks": [ids, or "new"], "related": [ids], "confidence": 0..1, "reason": "..."}.',
    "A request belongs to a task when it continues, corrects or extends that task's work (its checkout, files, symbols, goal); 'new' when it starts other work.",
    "Confidence is how sure you are; below 0.8 the agent keeps its whole history.",
  ].join("\n");
  const input = {
    catalogue: catalogue.map((t) => ({
      id: t.id,
      title: t.title,
      checkout: t.checkout ?? null,
      repository: t.repository ?? null,
      files: t.files,
      symbols: t.symbols,
    })),
    earlier_requests: earlier.map((e) => ({ task: e.task, text: clip(e.text, 1200) })),
    request: clip(request, 4000),
  };
  return { system, user: `<routing_input>\n${JSON.stringify(input, null, 1)}\n</routing_input>` };
}

/**
 * The router model's answer as an assignment: unknown ids are dropped, "new" opens a task, and an
 * answer that cannot be read is confidence 0 (the full history).
 */
export function readRouterAnswer(answer: string, catalogue: CatalogueTask[], newId: () => string): { assignment: Assignment; opened?: CatalogueTask } {
  const known = new Set(catalogue.map((t) => t.id));
  const parsed = jsonIn(answer) as { tasks?: unknown; related?: unknown; confidence?: unknown; reason?: unknown } | undefined;
  if (!parsed || !Array.isArray(parsed.tasks))
    return { assignment: { tasks: [], related: [], confidence: 0, by: "fallback", reason: "the router's answer could not be read" } };
  const confidence = typeof parsed.confidence === "number" && Number.isFinite(parsed.confidence) ? Math.max(0, Math.min(1, parsed.confidence)) : 0;
  const tasks = parsed.tasks.filter((t): t is string => typeof t === "string" && known.has(t));
  const related = (Array.isArray(parsed.related) ? parsed.related : []).filter((t): t is string => typeof t === "string" && known.has(t) && !tasks.includes(t));
  const reason = typeof parsed.reason === "string" ? parsed.reason.slice(0, 200) : "";
  if (parsed.tasks.includes("new") || tasks.length === 0) {
    const opened: CatalogueTask = { id: newId(), title: "", files: [], symbols: [] };
    return { assignment: { tasks: [opened.id, ...tasks], related, confidence, by: "router", reason }, opened };
  }
  return { assignment: { tasks, related, confidence, by: "router", reason } };
}

/** The first JSON object in a model's text (a model may fence it or say something around it). */
export function jsonIn(text: string): unknown {
  const start = text.indexOf("{");
  const end = text.lastIndexOf("}");
  if (start < 0 || end <= start) return undefined;
  try {
    return JSON.parse(text.slice(start, end + 1));
  } catch {
    return undefined;
  }
}

export const clip = (text: string, limit: number) => (text.length <= limit ? text : `${text.slice(0, limit)} […${text.length - limit} more characters]`);
