import { EXCERPT_REMOVED, normalizeCodeLine, removeReferenceExcerpts, type RemovedExcerpt } from "../../pipeline/changes/reference-quotes.ts";

/**
 * Cleans request text: drops HTML comments, issue-template checklists and their headings, and
 * code that spells out the fix (diff and suggestion blocks, code blocks most of whose lines the
 * implementation patch adds, and any block or run of lines reproducing two of its lines or more,
 * which a neutral sentence replaces: pipeline/changes/reference-quotes.ts); keeps prose, public names,
 * error messages and reproduction steps. `reference` is referenceLines of the implementation
 * patch; `removed` says what was taken out, for the request's provenance.
 */
export function cleanRequestText(text: string, reference: ReadonlySet<string>): { text: string; removed: RemovedExcerpt[] } {
  const removed: RemovedExcerpt[] = [];
  let out = text.replace(/\r\n/g, "\n").replace(/<!--[\s\S]*?-->/g, "");
  out = out.replace(/```(\w*)\n([\s\S]*?)```/g, (block, lang: string, code: string) => {
    if (lang === "diff" || lang === "suggestion" || lang === "patch") return "";
    const lines = code.split("\n").map(normalizeCodeLine).filter(Boolean);
    const quoted = lines.filter((l) => reference.has(l)).length;
    if (!quoted || quoted / lines.length < 0.5) return block;
    removed.push({ kind: "code_block", reference_lines: new Set(lines.filter((l) => reference.has(l))).size });
    return EXCERPT_REMOVED;
  });
  const excerpts = removeReferenceExcerpts(out, reference);
  out = excerpts.text;
  removed.push(...excerpts.removed);
  const kept: string[] = [];
  for (const line of out.split("\n")) {
    if (/^\s*[-*]\s*\[[ xX]\]/.test(line)) continue; // template checklists
    kept.push(line);
  }
  // A heading left with nothing under it was template boilerplate.
  const lines = kept;
  const result: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^\s*#{1,6}\s/.test(line)) {
      const rest = lines.slice(i + 1);
      const next = rest.findIndex((l) => l.trim() !== "");
      if (next < 0 || /^\s*#{1,6}\s/.test(rest[next]!)) continue;
    }
    result.push(line);
  }
  return {
    text: result
      .join("\n")
      .replace(/\n{3,}/g, "\n\n")
      .trim(),
    removed,
  };
}
