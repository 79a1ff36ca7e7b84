/**
 * Cleans request text: drops HTML comments, issue-template checklists and their headings, and
 * code that spells out the fix (diff and suggestion blocks, code blocks whose lines the
 * implementation patch adds); keeps prose, public names, error messages and reproduction steps.
 */
export function cleanRequestText(text: string, addedLines: ReadonlySet<string>): string {
  let out = text.replace(/\r\n/g, "\n").replace(/<!--[\s\S]*?-->/g, "");
  out = out.replace(/```(\w*)\n([\s\S]*?)```/g, (block, lang: string, code: string) => {
    if (lang === "diff" || lang === "suggestion" || lang === "patch") return "";
    const lines = code
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean);
    const spellsOutFix = lines.length > 0 && lines.filter((l) => addedLines.has(l)).length / lines.length >= 0.5;
    return spellsOutFix ? "" : block;
  });
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
  return result
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

/** Lines the implementation patch adds, trimmed: code identical to one of them spells out the fix. */
export function addedLines(implementationPatch: string): Set<string> {
  return new Set(
    implementationPatch
      .split("\n")
      .filter((l) => l.startsWith("+") && !l.startsWith("+++"))
      .map((l) => l.slice(1).trim())
      .filter((l) => l.length > 3),
  );
}
