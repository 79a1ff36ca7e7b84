/**
 * Task State Memory (+RCM): per task, a record of its goal, cumulative constraints, completed and
 * pending work, relevant files and symbols, and uncertainties, updated by an auxiliary model call
 * from completed interactions in bounded batches. What the user asked, what tools showed and what
 * the assistant claimed are kept apart, and every item cites the messages or tool calls it comes
 * from; an item whose sources are not in the task's history is dropped, and work said to be
 * observed without a successful tool call behind it is kept as a claim.
 */
import { assistantText, requestText, toolExchanges, type InteractionGroup } from "./history.ts";
import { clip, jsonIn } from "./router.ts";

export interface SourcedItem {
  text: string;
  /** The user message ids or tool call ids it comes from. */
  sources: string[];
}

export interface TaskRecord {
  task: string;
  goal: string;
  constraints: SourcedItem[];
  completed: (SourcedItem & { evidence: "observed" | "claimed" })[];
  pending: SourcedItem[];
  files: string[];
  uncertainties: string[];
  /** The requests (user message ids) whose interactions the record covers. */
  covers: string[];
}

export const emptyRecord = (task: string): TaskRecord => ({
  task,
  goal: "",
  constraints: [],
  completed: [],
  pending: [],
  files: [],
  uncertainties: [],
  covers: [],
});

/** At most this many interactions, and about this many characters of them, go into one update call. */
export const MAX_GROUPS_PER_UPDATE = 4;
export const MAX_UPDATE_CHARS = 16_000;
const MAX_TOOL_TEXT = 1_500;

/** The memory call's marker: the model endpoint and a reader of a run's log know a memory update by it. */
export const MEMORY_MARKER = "switch-swe RCM: task state memory";

/** One interaction as the memory model reads it: the user's words, what tools showed, what the assistant said. */
export interface InteractionInput {
  id: string;
  user_request: string;
  tool_observations: { id: string; tool: string; input: string; output: string; failed: boolean }[];
  assistant_claims: string;
}

export function interactionInput(group: InteractionGroup): InteractionInput {
  return {
    id: group.request!.info.id,
    user_request: requestText(group.request!),
    tool_observations: toolExchanges(group).map((t) => ({
      id: t.callID,
      tool: t.tool,
      input: clip(t.input, MAX_TOOL_TEXT),
      output: clip(t.output, MAX_TOOL_TEXT),
      failed: t.failed,
    })),
    assistant_claims: clip(assistantText(group), MAX_TOOL_TEXT),
  };
}

/** Interactions cut into batches of at most MAX_GROUPS_PER_UPDATE and (but for a single large one) MAX_UPDATE_CHARS. */
export function batches(inputs: InteractionInput[]): InteractionInput[][] {
  const out: InteractionInput[][] = [];
  let current: InteractionInput[] = [];
  let size = 0;
  for (const input of inputs) {
    const length = JSON.stringify(input).length;
    if (current.length && (current.length >= MAX_GROUPS_PER_UPDATE || size + length > MAX_UPDATE_CHARS)) {
      out.push(current);
      current = [];
      size = 0;
    }
    current.push(input);
    size += length;
  }
  if (current.length) out.push(current);
  return out;
}

export function memoryPrompt(record: TaskRecord, batch: InteractionInput[]): { system: string; user: string } {
  const system = [
    MEMORY_MARKER,
    "You keep a coding task's state record up to date from its latest completed interactions.",
    'Answer with one JSON object and nothing else: {"goal": "...", "constraints": [{"text", "sources"}], "completed": [{"text", "sources", "evidence": "observed"|"claimed"}], "pending": [{"text", "sources"}], "files": [...], "uncertainties": [...]}.',
    "Constraints are what the user asked, cumulatively: keep every earlier one unless the user withdrew it. Completed work is 'observed' only when a successful tool observation shows it; what the assistant only said is 'claimed'.",
    "Sources are the ids of the interactions (user requests) and tool observations an item comes from.",
  ].join("\n");
  const { covers: _covers, task: _task, ...previous } = record;
  return { system, user: `<memory_input>\n${JSON.stringify({ task: record.task, record: previous, interactions: batch }, null, 1)}\n</memory_input>` };
}

/** The record after an update: the model's answer checked against the ids it could cite; the earlier record when the answer cannot be read. */
export function readMemoryAnswer(answer: string, record: TaskRecord, batch: InteractionInput[]): TaskRecord | undefined {
  const parsed = jsonIn(answer) as Record<string, unknown> | undefined;
  if (!parsed) return undefined;
  const requests = new Set([...record.covers, ...batch.map((b) => b.id)]);
  const observed = new Set(batch.flatMap((b) => b.tool_observations.filter((t) => !t.failed).map((t) => t.id)));
  for (const item of record.completed) if (item.evidence === "observed") item.sources.forEach((s) => observed.add(s));
  const citable = new Set([...requests, ...observed, ...batch.flatMap((b) => b.tool_observations.map((t) => t.id))]);
  const sourced = (value: unknown): SourcedItem[] =>
    (Array.isArray(value) ? value : []).flatMap((v) => {
      const item = v as { text?: unknown; sources?: unknown };
      const sources = (Array.isArray(item.sources) ? item.sources : []).filter((s): s is string => typeof s === "string" && citable.has(s));
      return typeof item.text === "string" && item.text.trim() && sources.length ? [{ text: item.text.trim(), sources }] : [];
    });
  const completed = sourced(parsed.completed).map((item, i) => {
    const said = (Array.isArray(parsed.completed) ? (parsed.completed[i] as { evidence?: unknown }) : {}).evidence;
    const backed = item.sources.some((s) => observed.has(s));
    return { ...item, evidence: said === "observed" && backed ? ("observed" as const) : ("claimed" as const) };
  });
  const strings = (value: unknown) =>
    Array.isArray(value) ? value.filter((s): s is string => typeof s === "string" && s.trim() !== "").map((s) => s.trim()) : [];
  return {
    task: record.task,
    goal: typeof parsed.goal === "string" && parsed.goal.trim() ? parsed.goal.trim() : record.goal,
    constraints: sourced(parsed.constraints),
    completed,
    pending: sourced(parsed.pending),
    files: [...new Set(strings(parsed.files))],
    uncertainties: strings(parsed.uncertainties),
    covers: [...requests],
  };
}

/** Where the record starts in a model call's context; a reader of a run's log finds it by this. */
export const RECORD_OPENING = "<task_state_record";

/** The record as the model reads it on resumption: historical context under the current request. */
export function renderRecord(record: TaskRecord): string {
  const cite = (item: SourcedItem) => ` [${item.sources.join(", ")}]`;
  const lines = [
    `${RECORD_OPENING} task="${record.task}">`,
    "The context manager's record of this task's earlier work. It is history: where the current request says otherwise, the current request holds.",
    `Goal: ${record.goal || "(not recorded)"}`,
    "Constraints (what the user asked):",
    ...(record.constraints.length ? record.constraints.map((c) => `- ${c.text}${cite(c)}`) : ["- (none recorded)"]),
    "Completed:",
    ...(record.completed.length ? record.completed.map((c) => `- (${c.evidence}) ${c.text}${cite(c)}`) : ["- (none recorded)"]),
    "Pending:",
    ...(record.pending.length ? record.pending.map((c) => `- ${c.text}${cite(c)}`) : ["- (none recorded)"]),
    `Relevant files and symbols: ${record.files.length ? record.files.join(", ") : "(none recorded)"}`,
    `Uncertainties: ${record.uncertainties.length ? record.uncertainties.join("; ") : "(none)"}`,
    "</task_state_record>",
  ];
  return lines.join("\n");
}
