/**
 * The endpoint's model scripts: what a scripted model answers one call with, from the
 * conversation the harness sent and what the endpoint knows of the benchmark (the sessions'
 * schedules and each task's reference change, cut into steps). No answer depends on anything but
 * the call itself, so a harness that re-sends a conversation gets the same answer.
 */
import type { ScheduledRequest } from "../schemas/session.ts";
import { auxiliaryAnswer } from "./auxiliary.ts";
import { JUDGE_SCRIPTS, judgeAnswer } from "./judge.ts";
import { type ChangePlan, type FileOperation, type UnitWindow, unitsAfterStage } from "./plan.ts";
import type { Answer, ModelCall, Turn } from "./wire.ts";

export const MODEL_SCRIPTS = ["solve", "idle", "wrong-checkout", "undo", "hang", "overloaded", "model-error", "distracted", ...JUDGE_SCRIPTS] as const;
export type ModelScript = (typeof MODEL_SCRIPTS)[number];

/** What the scripts know: every schedule of the benchmark, and each task's plan and number of stages. */
export interface EndpointKnowledge {
  schedules: { session: string; condition: string; requests: ScheduledRequest[] }[];
  stages: (taskId: string) => number;
  plan: (taskId: string) => ChangePlan;
  /** The text the session runner sends after a request ran out of time (it continues that request). */
  continuation: string;
}

/** One request of a conversation, as the endpoint recognised it. */
export interface RecognisedRequest {
  index: number;
  task: string;
  stage?: number;
  finalization: boolean;
  /** The checkout path as the harness was told it (host or environment path). */
  checkout: string;
}

export type ScriptOutcome =
  { answer: Answer; request?: RecognisedRequest } | { error: "overloaded" | "invalid_request"; request?: RecognisedRequest } | { hang: true };

/** The absolute path in `text` that ends with the checkout's directory name. */
function pathIn(text: string, checkout: string): string | undefined {
  const name = checkout.split("/").pop()!;
  const found = text.match(new RegExp(`(/[^\\s'"\`<>]*/${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")})(?=[\\s'"\`<>.,;:)]|$)`, "g"));
  return found?.at(-1);
}

/**
 * Text as a reader takes it: without the spaces that end its lines. A harness that keeps its
 * history as Markdown (aider) gives earlier requests back with a hard break (two spaces) after
 * every line, which changes no word of them.
 */
const readsAs = (text: string) => text.replace(/[ \t]+$/gm, "");

/**
 * The requests of the conversation in order, matched against the benchmark's schedules: the user
 * turns that carry a schedule's texts, in the schedule's order, skipping what the context left out
 * (a context manager sends a task's own requests only). A turn that carries several texts (a
 * request with a record quoting earlier ones) is the latest of them, and a turn naming a checkout
 * is only a request of that checkout (the same task, or the same finalization text, is in other
 * sessions' schedules too, at other checkouts). The schedule matching the most turns wins. Other user turns (continuation messages, what a harness adds itself) are part
 * of the request before them.
 */
export function recogniseRequests(call: ModelCall, knowledge: EndpointKnowledge): { requests: RecognisedRequest[]; lastUserTurn: number } {
  const userTurns = call.turns.map((t, i) => ({ t, i })).filter((x): x is { t: Extract<Turn, { role: "user" }>; i: number } => x.t.role === "user");
  let best: { requests: RecognisedRequest[]; lastUserTurn: number } = { requests: [], lastUserTurn: -1 };
  // The checkouts each turn names, of all the benchmark's: a turn naming one belongs to that checkout's requests only.
  const checkouts = [...new Set(knowledge.schedules.flatMap((s) => s.requests.map((r) => r.message.checkout)))];
  const namedBy = new Map(userTurns.map(({ t, i }) => [i, checkouts.filter((c) => pathIn(t.text, c) !== undefined)]));
  for (const schedule of knowledge.schedules) {
    const requests: RecognisedRequest[] = [];
    let lastUserTurn = -1;
    let next = 0;
    for (const { t, i } of userTurns) {
      const text = readsAs(t.text);
      const named = namedBy.get(i)!;
      let found = -1;
      for (let k = next; k < schedule.requests.length; k++) {
        const candidate = schedule.requests[k]!;
        // A text several tasks share (the finalization request) is told apart by the checkout it names.
        if (text.includes(readsAs(candidate.message.text)) && (!named.length || named.includes(candidate.message.checkout))) found = k;
      }
      if (found < 0) continue;
      const scheduled = schedule.requests[found]!;
      requests.push({
        index: requests.length,
        task: scheduled.task_id,
        ...(scheduled.stage !== undefined ? { stage: scheduled.stage } : {}),
        finalization: scheduled.finalization,
        checkout: pathIn(t.text, scheduled.message.checkout) ?? scheduled.message.checkout,
      });
      lastUserTurn = i;
      next = found + 1;
    }
    if (requests.length > best.requests.length) best = { requests, lastUserTurn };
  }
  return best;
}

/** How a harness edits files, from the tools it offers. */
type Dialect = "claude-code" | "opencode" | "shell" | "text";

function dialectOf(tools: string[]): Dialect {
  if (tools.includes("Write") && tools.includes("Read")) return "claude-code";
  if (tools.includes("write") && tools.includes("read") && tools.includes("bash")) return "opencode";
  if (tools.some((t) => ["exec_command", "shell", "bash", "Bash"].includes(t))) return "shell";
  return "text";
}

const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** A shell command that makes a file what the operation says, byte for byte. */
function shellCommand(op: FileOperation, at: string): string {
  const path = `${at}/${op.path}`;
  // Plain rm: Codex refuses "rm -f" style commands.
  if (op.state.kind === "deleted") return `rm -- ${quote(path)}`;
  const bytes = op.state.kind === "text" ? Buffer.from(op.state.text, "utf8") : op.state.bytes;
  const dir = path.slice(0, path.lastIndexOf("/"));
  return `mkdir -p -- ${quote(dir)} && printf '%s' ${quote(bytes.toString("base64"))} | base64 -d > ${quote(path)}`;
}

/** The tool calls (or, for a harness without tools, the one text) that carry out `ops` in the checkout at `at`. */
function toolCallsFor(dialect: Dialect, ops: FileOperation[], at: string): Answer[] {
  const calls: Answer[] = [];
  for (const op of ops) {
    const path = `${at}/${op.path}`;
    const text = op.state.kind === "text" ? op.state.text : undefined;
    if (dialect === "claude-code" && text !== undefined) {
      // Claude Code writes a file only after reading it (a new file's read fails, and that is fine).
      calls.push(
        { kind: "tool", name: "Read", arguments: { file_path: path } },
        { kind: "tool", name: "Write", arguments: { file_path: path, content: text } },
      );
    } else if (dialect === "claude-code")
      calls.push({ kind: "tool", name: "Bash", arguments: { command: shellCommand(op, at), description: `Update ${op.path}` } });
    else if (dialect === "opencode" && text !== undefined)
      calls.push({ kind: "tool", name: "read", arguments: { filePath: path } }, { kind: "tool", name: "write", arguments: { filePath: path, content: text } });
    else if (dialect === "opencode") calls.push({ kind: "tool", name: "bash", arguments: { command: shellCommand(op, at), description: `Update ${op.path}` } });
    else if (dialect === "shell") calls.push({ kind: "tool", name: "exec_command", arguments: { cmd: shellCommand(op, at) } });
  }
  return calls;
}

/**
 * A harness without tools (aider) edits from the answer's text: each text file whole, under its
 * path, in a fence; deletions and binary files as shell commands it offers to run.
 */
function textEdits(ops: FileOperation[], at: string): string {
  const parts = ["Here are the changes."];
  const rest: string[] = [];
  for (const op of ops) {
    if (op.state.kind === "text") {
      const fence = op.state.text.includes("```") ? "````" : "```";
      parts.push(`${at}/${op.path}\n${fence}\n${op.state.text}${op.state.text.endsWith("\n") ? "" : "\n"}${fence}`);
    } else rest.push(`- ${op.state.kind === "deleted" ? "delete" : "replace (binary)"} ${at}/${op.path}: \`${shellCommand(op, at)}\``);
  }
  // A whole-file harness (aider) reads every fenced block as a file: what it cannot write (a
  // deletion, binary content) is said in prose, as a model would, and not fenced.
  if (rest.length) parts.push(["What a file listing cannot do, to be done by hand:", ...rest].join("\n"));
  return parts.join("\n\n");
}

/** The units a task's requests in this conversation have asked for, up to and including request `upTo`. */
function unitsAsked(requests: RecognisedRequest[], upTo: number, task: string, knowledge: EndpointKnowledge): number {
  let units = 0;
  const plan = knowledge.plan(task);
  for (const r of requests.slice(0, upTo + 1)) {
    if (r.task !== task) continue;
    units = r.finalization ? plan.units : Math.max(units, unitsAfterStage(plan.units, r.stage ?? 1, knowledge.stages(task)));
  }
  return units;
}

/**
 * The `distracted` script's change for a request: a model that, in the context it was sent, has
 * lost sight of a task's requests from before the latest interruption (another task's request
 * between two of the task's own) and rebuilds the task's change from the requests since then
 * alone, dropping what the earlier ones asked. Undefined when nothing interrupted the task in
 * the context (it then solves); no change when it remembers no stage request, only a finalization.
 */
function distractedChange(
  requests: RecognisedRequest[],
  request: RecognisedRequest,
  plan: ChangePlan,
  knowledge: EndpointKnowledge,
): FileOperation[] | undefined {
  const own = requests.slice(0, request.index + 1).filter((r) => r.task === request.task);
  let resumed: RecognisedRequest | undefined;
  for (let k = 1; k < own.length; k++) if (requests.slice(own[k - 1]!.index + 1, own[k]!.index).some((r) => r.task !== request.task)) resumed = own[k];
  if (!resumed) return undefined;
  const remembered = own.filter((r) => r.index >= resumed.index);
  if (!remembered.some((r) => !r.finalization)) return [];
  const units = (upTo: number) => (upTo < 0 ? 0 : unitsAsked(requests, upTo, request.task, knowledge));
  const previousOwn = own.at(-2);
  const lost = units(resumed.index - 1);
  const now = units(request.index);
  const before = units(request.index - 1);
  // What the model left in the checkout at the task's previous request: a window too, if it was already distracted then.
  const left: UnitWindow = previousOwn && previousOwn.index >= resumed.index ? [lost, before] : [0, before];
  return plan.change(left, [lost, now]);
}

/** The answer of `script` to `call`. */
export function answerWith(script: ModelScript, call: ModelCall, knowledge: EndpointKnowledge): ScriptOutcome {
  if (script === "hang") return { hang: true };
  const { requests, lastUserTurn } = recogniseRequests(call, knowledge);
  const request = requests.at(-1);
  if (script === "overloaded") return { error: "overloaded", ...(request ? { request } : {}) };
  const judged = judgeAnswer(script, call);
  if (judged !== undefined) return { answer: { kind: "text", text: judged } };
  // A context manager's own calls (routing, memory) are answered from their prompts by every script that answers.
  const auxiliary = auxiliaryAnswer(call);
  if (auxiliary !== undefined) return { answer: { kind: "text", text: auxiliary } };
  const done = (text: string): ScriptOutcome => ({ answer: { kind: "text", text }, ...(request ? { request } : {}) });
  if (!request) return done("There is nothing for me to do here.");
  if (script === "idle") return done("I have read the request and I am thinking about it.");
  const plan = knowledge.plan(request.task);
  const before = request.index > 0 ? unitsAsked(requests, request.index - 1, request.task, knowledge) : 0;
  const now = unitsAsked(requests, request.index, request.task, knowledge);
  let ops = (script === "distracted" ? distractedChange(requests, request, plan, knowledge) : undefined) ?? plan.between(before, now);
  let at = request.checkout;
  const focus = requests[0]!.task;
  if (script === "undo" && request.finalization && request.task === focus) ops = plan.base();
  if (script === "wrong-checkout" && request.task === focus) {
    // From its first return on, the focus's work goes to the checkout of the last other task's request.
    const other = requests
      .slice(0, request.index)
      .reverse()
      .find((r) => r.task !== focus);
    if (other) at = other.checkout;
  }
  const dialect = dialectOf(call.tools);
  const callsMade = call.turns.slice(lastUserTurn + 1).reduce((n, t) => n + (t.role === "assistant" ? t.toolCalls.length : 0), 0);
  // An error once work was done: the first request's first step goes through, then every call fails.
  if (script === "model-error" && (callsMade > 0 || request.index > 0)) return { error: "invalid_request", request };
  if (dialect === "text") {
    // One answer per request: a harness without tools applies the edits from it.
    const answered = call.turns.slice(lastUserTurn + 1).some((t) => t.role === "assistant");
    return done(answered || !ops.length ? "Done." : textEdits(ops, at));
  }
  const calls = toolCallsFor(dialect, ops, at);
  const next = calls[callsMade];
  return next ? { answer: next, request } : done(ops.length ? "Done: the changes are in place." : "Nothing needs changing for this request.");
}
