import { z } from "zod";
import { readReviewed } from "../../pipeline/validation.ts";
import type { Request } from "../../pipeline/schemas/task.ts";

const Action = z.discriminatedUnion("action", [
  z.strictObject({ action: z.literal("edit"), stage: z.number().int().positive(), text: z.string().min(1) }),
  z.strictObject({ action: z.literal("drop"), stage: z.number().int().positive() }),
  z.strictObject({ action: z.literal("merge"), stages: z.array(z.number().int().positive()).min(2) }),
  z.strictObject({ action: z.literal("add"), after: z.number().int().min(0), text: z.string().min(1) }),
  /** A request that quotes the reference on purpose (an API the user names in code, say): validate lets the quote pass, with this reason. */
  z.strictObject({ action: z.literal("approve_quote"), stage: z.number().int().positive(), reason: z.string().min(1) }),
]);

/** A maintainer's reviewed change to one task's reconstruction: `data/curation/<task>.yaml`. */
export const CurationFile = z.strictObject({
  task: z.string(),
  reviewer: z.string().min(1),
  reason: z.string().min(1),
  actions: z.array(Action).min(1),
});
export type CurationFile = z.infer<typeof CurationFile>;

export class CurationError extends Error {
  override name = "CurationError";
}

export function parseCuration(path: string, text: string): CurationFile {
  return readReviewed(path, CurationFile, { text, format: "yaml", error: (message) => new CurationError(message) });
}

/**
 * Applies a curation file's actions in order. Stage numbers in an action refer to the stages as
 * they stand when that action runs; after every action the stages are renumbered 1..k. Every
 * touched request records the curation in its provenance, so nothing changes silently.
 */
export function applyCuration(requests: Request[], curation: CurationFile, file: string): Request[] {
  const note = (action: "edit" | "merge" | "drop" | "add") => ({ action, reviewer: curation.reviewer, reason: curation.reason, file });
  let out = requests.map((r) => ({ ...r }));
  const find = (stage: number, index: number) => {
    const r = out.find((x) => x.stage === stage);
    if (!r) throw new CurationError(`${file}: actions.${index}: stage ${stage} does not exist (the task has ${out.length})`);
    return r;
  };
  curation.actions.forEach((action, index) => {
    if (action.action === "edit") {
      const r = find(action.stage, index);
      r.text = action.text.trim();
      r.provenance = { ...r.provenance, curation: note("edit") };
    } else if (action.action === "approve_quote") {
      const r = find(action.stage, index);
      r.provenance = { ...r.provenance, quote_approved: { reviewer: curation.reviewer, reason: action.reason, file } };
    } else if (action.action === "drop") {
      find(action.stage, index);
      out = out.filter((r) => r.stage !== action.stage);
    } else if (action.action === "merge") {
      const parts = action.stages.map((s) => find(s, index));
      const merged: Request = {
        stage: Math.min(...action.stages),
        text: parts.map((p) => p.text).join("\n\n"),
        provenance: { sources: parts.flatMap((p) => p.provenance.sources), curation: note("merge") },
      };
      out = out.filter((r) => !action.stages.includes(r.stage));
      out.push(merged);
    } else {
      if (action.after > out.length) throw new CurationError(`${file}: actions.${index}: cannot add after stage ${action.after} (the task has ${out.length})`);
      out.push({
        stage: action.after + 0.5,
        text: action.text.trim(),
        provenance: { sources: [{ kind: "authored", record_id: `curation:${file}#${index}`, author: curation.reviewer }], curation: note("add") },
      });
    }
    out = out.sort((a, b) => a.stage - b.stage).map((r, i) => ({ ...r, stage: i + 1 }));
  });
  return out;
}
