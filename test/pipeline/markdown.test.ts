import { describe, expect, it } from "vitest";
import { figures, markdownTable } from "../../pipeline/markdown.ts";

describe("the one Markdown table writer", () => {
  it("writes a header, a separator right-aligning the columns of figures, and a row per record", () => {
    expect(
      markdownTable(
        ["Configuration", figures("Runs"), "Note"],
        [
          ["a", 3, "fine"],
          ["b", 0.5, "ok"],
        ],
      ),
    ).toEqual(["| Configuration | Runs | Note |", "|---|---:|---|", "| a | 3 | fine |", "| b | 0.5 | ok |"]);
  });

  it("escapes a | inside a cell, so the row keeps its columns, and writes an empty cell as one space", () => {
    expect(markdownTable(["x", "y", "z"], [["a|b", "", "c"]])[2]).toBe("| a\\|b | | c |");
  });

  it("refuses a row with another number of cells than the columns", () => {
    expect(() => markdownTable(["x", "y"], [["a", "b"], ["c"]])).toThrow("markdown table: row 1 has 1 cells for 2 columns");
  });
});
