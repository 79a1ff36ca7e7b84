/** A column of a Markdown table: its title, and whether it holds figures (right-aligned). */
export interface MarkdownColumn {
  title: string;
  figures?: boolean;
}

/**
 * A Markdown table, the one writer of them (the study's tables, the context managers' table, the
 * fidelity report, the audit's rules and study): a header, a separator right-aligning the columns
 * of figures, a row per record. A `|` in a cell is escaped, so no cell splits its row; an empty
 * cell is one space. A row with another number of cells than the columns is a programming error.
 */
export function markdownTable(columns: readonly (string | MarkdownColumn)[], rows: readonly (readonly (string | number)[])[]): string[] {
  const spec = columns.map((c) => (typeof c === "string" ? { title: c } : c));
  for (const [index, row] of rows.entries())
    if (row.length !== spec.length) throw new Error(`markdown table: row ${index} has ${row.length} cells for ${spec.length} columns`);
  const line = (cells: readonly (string | number)[]) =>
    `|${cells
      .map((cell) => {
        const text = String(cell).replaceAll("|", "\\|");
        return text === "" ? " " : ` ${text} `;
      })
      .join("|")}|`;
  return [line(spec.map((c) => c.title)), `|${spec.map((c) => (c.figures ? "---:" : "---")).join("|")}|`, ...rows.map(line)];
}

/** A column of figures. */
export const figures = (title: string): MarkdownColumn => ({ title, figures: true });
