import { isMap, isSeq, parseDocument, type YAMLSeq } from "yaml";
import { z } from "zod";
import { Severity } from "../../pipeline/schemas/audit.ts";
import { readReviewed } from "../../pipeline/validation.ts";

/**
 * Human decisions the gate follows: an auditor's, in the config's decisions file (`switch-swe
 * audit decide` writes it), which covers the whole task; and decisions imported from human
 * annotations of the same records (`switch-swe audit import-annotations`), which cover the
 * upstream stage: the authored stages of an extended task are audited by their own hard checks.
 */

/** Auditors' sign-off: `audits/decisions.yaml`. */
export const Decisions = z.strictObject({
  decisions: z
    .array(
      z.strictObject({
        task: z.string(),
        verdict: z.enum(["approve", "exclude"]),
        auditor: z.string().min(1),
        reason: z.string().min(1),
        /** Public contracts that justify F2P tests no request mentions, by test id. */
        contracts: z.record(z.string(), z.string()).default({}),
      }),
    )
    .default([]),
});
export type Decisions = z.infer<typeof Decisions>;
export type LocalDecision = Decisions["decisions"][number];

/** A file of decisions imported from annotations, with where they came from and the threshold that made them. */
export const ImportedDecisions = z.strictObject({
  imported: z.strictObject({
    /** The annotations file, as given to the command, and the hash of its bytes. */
    from: z.string().min(1),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
    /** Who the annotators are, and how their scores became one. */
    annotators: z.string().min(1),
    /** Excluded: `false_negative` at or above this, or `filter_out`. */
    threshold: z.strictObject({ false_negative: Severity, filter_out: z.boolean() }),
  }),
  decisions: z.array(
    z.strictObject({
      task: z.string().min(1),
      verdict: z.enum(["approve", "exclude"]),
      /** The annotators' notes on the score that decided. */
      reason: z.string().min(1),
      scope: z.literal("upstream"),
      /** The annotators of each score, as the annotations name them. */
      annotators: z.string().min(1),
      scores: z.strictObject({
        false_negative: Severity,
        underspecified: Severity,
        other_major_issues: z.number().int().min(0).max(1),
        filter_out: z.boolean(),
      }),
    }),
  ),
});
export type ImportedDecisions = z.infer<typeof ImportedDecisions>;
export type ImportedDecision = ImportedDecisions["decisions"][number];

export class DecisionsError extends Error {
  override name = "DecisionsError";
}

/** A decisions file's text, read as `schema`; an error names the file and the field. */
function readAs<S extends z.ZodType>(schema: S, file: string, text: string): z.infer<S> {
  const data = readReviewed<z.infer<S>>(file, schema as z.ZodType<z.infer<S>>, {
    text,
    format: "yaml",
    empty: {},
    error: (message) => new DecisionsError(message),
  });
  const tasks = (data as { decisions: { task: string }[] }).decisions.map((d) => d.task);
  const twice = tasks.find((t, i) => tasks.indexOf(t) !== i);
  if (twice) throw new DecisionsError(`${file}: task ${twice} is decided twice (one decision a task: change the one there)`);
  return data;
}

export const readDecisions = (file: string, text: string): Decisions => readAs(Decisions, file, text);
export const readImported = (file: string, text: string): ImportedDecisions => readAs(ImportedDecisions, file, text);

/** A task's decisions: the auditor's and the one imported, each with the file it came from. */
export interface TaskDecisions {
  local?: LocalDecision & { file: string };
  imported?: ImportedDecision & { file: string; annotatorsOf: string };
}

/** The decisions of every task, from the local file and the imported ones; a task imported twice is an error naming both files. */
export function decisionBook(local: { file: string; decisions: Decisions } | undefined, imported: { file: string; decisions: ImportedDecisions }[]) {
  const book = new Map<string, TaskDecisions>();
  const entry = (task: string) => book.get(task) ?? (book.set(task, {}), book.get(task)!);
  for (const d of local?.decisions.decisions ?? []) entry(d.task).local = { ...d, file: local!.file };
  for (const { file, decisions } of imported)
    for (const d of decisions.decisions) {
      const known = entry(d.task);
      if (known.imported) throw new DecisionsError(`${file}: task ${d.task} is already decided by ${known.imported.file}`);
      known.imported = { ...d, file, annotatorsOf: decisions.imported.annotators };
    }
  return (task: string): TaskDecisions => book.get(task) ?? {};
}

/**
 * The decisions file with `decision` recorded: it replaces the task's earlier decision where there
 * was one, else joins the list; the file's comments and other decisions stay as they were.
 */
export function recordDecision(file: string, text: string | undefined, decision: LocalDecision): string {
  const doc = parseDocument(text ?? "# An auditor's decisions, one a task (switch-swe audit decide writes them; docs/AUDITING.md).\ndecisions: []\n");
  if (doc.errors.length) throw new DecisionsError(`${file}: not valid YAML: ${doc.errors[0]!.message.split("\n")[0]}`);
  readDecisions(file, doc.toString());
  const entry = {
    task: decision.task,
    verdict: decision.verdict,
    auditor: decision.auditor,
    reason: decision.reason,
    ...(Object.keys(decision.contracts).length ? { contracts: decision.contracts } : {}),
  };
  if (!doc.has("decisions") || !isSeq(doc.get("decisions"))) doc.set("decisions", doc.createNode([]));
  const list = doc.get("decisions") as YAMLSeq;
  const at = list.items.findIndex((item) => isMap(item) && item.get("task") === decision.task);
  if (at >= 0) list.items[at] = doc.createNode(entry);
  else list.items.push(doc.createNode(entry));
  const written = doc.toString({ lineWidth: 0 });
  readDecisions(file, written);
  return written;
}
