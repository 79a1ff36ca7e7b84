/**
 * The Resumption Context Manager of one OpenCode process: routes each new request, keeps task
 * memory (+RCM), and assembles every model call's messages. Its state (catalogue, assignments,
 * records) is kept per conversation in a file, because every `opencode run` is a process of its
 * own and the study's assignments and memory persist within a session.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync, appendFileSync } from "node:fs";
import { join } from "node:path";
import { assemble, type Assembled } from "./assemble.ts";
import { callAuxiliary, logRouting, logUsage, type AuxiliaryModel } from "./auxiliary.ts";
import { interactionGroups, requestText, type InteractionGroup, type SessionMessage } from "./history.ts";
import { batches, emptyRecord, interactionInput, memoryPrompt, readMemoryAnswer, type TaskRecord } from "./memory.ts";
import { assignByReference, learn, readRouterAnswer, referencesIn, routerPrompt, type Assignment, type CatalogueTask } from "./router.ts";

export type Mode = "router" | "rcm";

export interface ManagerOptions {
  mode: Mode;
  /** Where conversations' state, the auxiliary usage log and the decisions log are kept. */
  dir: string;
  /** Undefined: no auxiliary model (references route alone; no memory). */
  auxiliary?: AuxiliaryModel;
  /** Said once when something goes wrong that a run should know of (an auxiliary call that failed). */
  warn: (message: string) => void;
}

interface ConversationState {
  tasks: CatalogueTask[];
  assignments: Record<string, Assignment>;
  memory: Record<string, TaskRecord>;
  /** A request whose memory updates failed: not retried within its turn. */
  memoryFailedAt?: string;
}

/** What the compactor is told besides its own prompt (Appendix F.3). */
export const COMPACTION_INSTRUCTION =
  "This conversation interleaves several unfinished tasks. In the summary, keep every task apart, suspended ones included: for each, its goal, every requirement and constraint the user stated (the user's words where they matter), the work done and where (checkout, files, symbols), and the work still pending.";

export class ResumptionContextManager {
  constructor(private readonly options: ManagerOptions) {
    mkdirSync(options.dir, { recursive: true });
  }

  get usageFile(): string {
    return join(this.options.dir, "usage.jsonl");
  }

  /**
   * The messages of one model call, from the conversation the harness would send. `auxiliary`:
   * the model to route and remember with for this call (the relay's: the call's own model,
   * protocol and credentials), else the manager's.
   */
  async transform(messages: SessionMessage[], auxiliary: AuxiliaryModel | undefined = this.options.auxiliary): Promise<SessionMessage[]> {
    const sessionID = messages.find((m) => m.info.sessionID)?.info.sessionID;
    if (!sessionID) return messages;
    const state = this.load(sessionID);
    // The conversation read into groups once for the call: routing, memory and assembly share it.
    const groups = interactionGroups(messages);
    await this.route(sessionID, groups, state, auxiliary);
    if (this.options.mode === "rcm") await this.remember(sessionID, groups, state, auxiliary);
    this.save(sessionID, state);
    const assembled = assemble(messages, state.assignments, this.options.mode === "rcm" ? state.memory : undefined, groups);
    this.logDecision(sessionID, groups, state, assembled);
    return assembled.messages;
  }

  /** Every request not yet assigned, in order: by its references, else by the router model. */
  private async route(sessionID: string, groups: InteractionGroup[], state: ConversationState, auxiliary: AuxiliaryModel | undefined): Promise<void> {
    const newId = () => `t${state.tasks.length + 1}`;
    const earlier: { task: string; text: string }[] = [];
    for (const group of groups) {
      if (!group.request || group.shared) continue;
      const id = group.request.info.id;
      const text = requestText(group.request);
      if (!state.assignments[id]) {
        const refs = referencesIn(text);
        const decided = assignByReference(refs, state.tasks, newId) ?? (await this.askRouter(auxiliary, sessionID, text, state, earlier, newId));
        if (decided.opened) state.tasks.push(decided.opened);
        for (const task of state.tasks) if (decided.assignment.tasks.includes(task.id)) learn(task, text, refs);
        state.assignments[id] = decided.assignment;
        logRouting(this.usageFile, sessionID, id, decided.assignment);
      }
      earlier.push({ task: state.assignments[id]!.tasks.join(",") || "unassigned", text });
    }
  }

  private async askRouter(
    auxiliary: AuxiliaryModel | undefined,
    sessionID: string,
    text: string,
    state: ConversationState,
    earlier: { task: string; text: string }[],
    newId: () => string,
  ): Promise<{ assignment: Assignment; opened?: CatalogueTask }> {
    const fallback = (reason: string) => ({ assignment: { tasks: [], related: [], confidence: 0, by: "fallback" as const, reason } });
    if (!auxiliary) return fallback("no auxiliary model is configured");
    try {
      const result = await callAuxiliary(auxiliary, routerPrompt(text, state.tasks, earlier));
      logUsage(this.usageFile, sessionID, "router", result.usage);
      return readRouterAnswer(result.text, state.tasks, newId);
    } catch (error) {
      this.options.warn(`routing call failed (${(error as Error).message}); the request keeps the full history`);
      return fallback(`the routing call failed: ${(error as Error).message}`);
    }
  }

  /** Folds every completed interaction not yet in its tasks' records into them, in bounded batches. */
  private async remember(sessionID: string, all: InteractionGroup[], state: ConversationState, auxiliary: AuxiliaryModel | undefined): Promise<void> {
    const groups = all.filter((g) => g.request && !g.shared);
    const current = groups.at(-1)?.request?.info.id;
    if (!auxiliary || !current || state.memoryFailedAt === current) return;
    const completed = groups.slice(0, -1);
    for (const task of state.tasks) {
      const record = state.memory[task.id] ?? emptyRecord(task.id);
      const pending = completed.filter((g) => state.assignments[g.request!.info.id]?.tasks.includes(task.id) && !record.covers.includes(g.request!.info.id));
      if (!pending.length) continue;
      let updated = record;
      for (const batch of batches(pending.map(interactionInput))) {
        try {
          const result = await callAuxiliary(auxiliary, memoryPrompt(updated, batch));
          logUsage(this.usageFile, sessionID, "memory", result.usage);
          const next = readMemoryAnswer(result.text, updated, batch);
          if (!next) throw new Error("its answer could not be read");
          updated = next;
        } catch (error) {
          this.options.warn(`memory update of ${task.id} failed (${(error as Error).message}); its record stays as it was`);
          state.memoryFailedAt = current;
          break;
        }
      }
      state.memory[task.id] = updated;
      if (state.memoryFailedAt === current) return;
    }
  }

  private stateFile(sessionID: string): string {
    return join(this.options.dir, `${sessionID.replace(/[^A-Za-z0-9_-]/g, "_")}.json`);
  }

  private load(sessionID: string): ConversationState {
    const file = this.stateFile(sessionID);
    if (!existsSync(file)) return { tasks: [], assignments: {}, memory: {} };
    return JSON.parse(readFileSync(file, "utf8")) as ConversationState;
  }

  /** Written whole or not at all: a killed process never leaves half a state. */
  private save(sessionID: string, state: ConversationState): void {
    const file = this.stateFile(sessionID);
    writeFileSync(`${file}.partial`, JSON.stringify(state, null, 1));
    renameSync(`${file}.partial`, file);
  }

  private logDecision(sessionID: string, groups: InteractionGroup[], state: ConversationState, assembled: Assembled): void {
    const request = groups.at(-1)?.request?.info.id;
    const line = {
      sessionID,
      request,
      assignment: request ? state.assignments[request] : undefined,
      sent_messages: assembled.messages.length,
      of_messages: groups.reduce((n, g) => n + g.messages.length, 0),
      dropped_groups: assembled.droppedGroups,
      condensed_groups: assembled.condensedGroups,
      records: assembled.records,
      ...(assembled.unfiltered ? { unfiltered: assembled.unfiltered } : {}),
    };
    appendFileSync(join(this.options.dir, "decisions.jsonl"), JSON.stringify(line) + "\n");
  }
}
