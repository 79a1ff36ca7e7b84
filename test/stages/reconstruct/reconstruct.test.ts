import { describe, expect, it } from "vitest";
import type { Candidate, DiscussionItem } from "../../../pipeline/schemas/candidate.ts";
import type { Request } from "../../../pipeline/schemas/task.ts";
import { classifyDiscussion } from "../../../stages/reconstruct/classify.ts";
import { cleanRequestText } from "../../../stages/reconstruct/clean.ts";
import { EXCERPT_REMOVED, quotedReferenceLines, referenceLines } from "../../../pipeline/changes/reference-quotes.ts";
import { applyCuration, parseCuration } from "../../../stages/reconstruct/curation.ts";
import { reconstructRequests } from "../../../stages/reconstruct/reconstruct.ts";

let nextId = 1;
const item = (over: Partial<DiscussionItem>): DiscussionItem => ({
  kind: "issue_comment",
  id: nextId++,
  url: "u",
  author: "rev",
  author_type: "User",
  created_at: "2024-01-02T00:00:00Z",
  body: "",
  ...over,
});

describe("comment classes", () => {
  const classOf = (over: Partial<DiscussionItem>, prior: Partial<DiscussionItem>[] = []) =>
    classifyDiscussion([...prior.map(item), item(over)], "author", "2024-02-01T00:00:00Z").at(-1)!.class;
  it.each([
    [{ author: "codecov[bot]", author_type: "Bot" as const, body: "Coverage is 93%" }, "bot"],
    [{ kind: "review" as const, state: "APPROVED", body: "LGTM, thanks!" }, "approval_only"],
    [{ body: "Looks good to me" }, "approval_only"],
    [{ author: "author", body: "Thanks, done!" }, "progress_only"],
    [{ author: "author", body: "Rebased on main and addressed the review." }, "progress_only"],
    [{ author: "author", body: "I chose this design because of X." }, "author"],
    [{ body: "Why not use a list comprehension here?" }, "question"],
    [{ kind: "review" as const, state: "DISMISSED", body: "Please rename `f` to `g`." }, "dismissed"],
    [{ body: "Do it the way I did in my commit 3f2a9c1, see the diff above." }, "needs_reference"],
    [{ body: "Return a list here.\n```suggestion\n    return [x]\n```" }, "suggestion"],
    [{ body: "A couple more things." }, "no_requirement"],
    [{ kind: "review" as const, state: "COMMENTED", body: "" }, "empty"],
    [{ body: "`f` must raise ValueError for negative input." }, "substantive"],
    [{ body: "Could `f` accept lists?", created_at: "2024-03-01T00:00:00Z" }, "post_merge"],
  ])("%j is %s", (over, expected) => {
    expect(classOf(over)).toBe(expected);
  });
  it("marks a repeated comment by the same author as a duplicate", () => {
    expect(classOf({ body: "Please add a test." }, [{ body: "Please  add a test." }])).toBe("duplicate");
    expect(classOf({ body: "Please add a test.", author: "other" }, [{ body: "Please add a test." }])).toBe("substantive");
  });
});

describe("cleaning", () => {
  it("drops HTML comments, checklists, empty template headings and code that spells out the fix", () => {
    const added = referenceLines("diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -0,0 +1,2 @@\n+def area(r):\n+    return 3.14 * r * r\n");
    const text =
      "<!-- template -->\nArea is wrong for `area(2)`: expected 12.56.\n\n```python\ndef area(r):\n    return 3.14 * r * r\n```\n\n```diff\n-a\n+b\n```\n\nSteps:\n```python\nprint(area(2))\n```\n\n### Checklist\n- [x] searched\n- [ ] can help\n";
    expect(cleanRequestText(text, added)).toEqual({
      text: `Area is wrong for \`area(2)\`: expected 12.56.\n\n${EXCERPT_REMOVED}\n\nSteps:\n\`\`\`python\nprint(area(2))\n\`\`\``,
      removed: [{ kind: "code_block", reference_lines: 1 }],
    });
  });

  it("takes out a proposed fix written with other spacing and comments, fenced or not, and keeps the report's own example", () => {
    // sympy__sympy-24152's problem statement proposes the fix in a block with "#added" comments and other spacing.
    const reference = referenceLines(
      [
        "diff --git a/sympy/physics/quantum/tensorproduct.py b/sympy/physics/quantum/tensorproduct.py",
        "--- a/sympy/physics/quantum/tensorproduct.py",
        "+++ b/sympy/physics/quantum/tensorproduct.py",
        "@@ -246,0 +247,5 @@ def _eval_expand_tensorproduct(self, **hints):",
        "+                    c_part, nc_part = tp.args_cnc()",
        "+                    # Check for TensorProduct object: is the one object in nc_part, if any:",
        "+                    if len(nc_part) == 1 and isinstance(nc_part[0], TensorProduct):",
        "+                        nc_part = (nc_part[0]._eval_expand_tensorproduct(), )",
        "+                    add_args.append(Mul(*c_part)*Mul(*nc_part))",
        "",
      ].join("\n"),
    );
    const example = "```\nP = TensorProduct(2*U - V, U + V)\nprint(P.expand(tensorproduct=True))\n```";
    const proposal = [
      "```",
      "    def _eval_expand_tensorproduct(self, **hints):",
      "                for aa in args[i].args:",
      "                    c_part, nc_part = tp.args_cnc() #added",
      "                    if len(nc_part)==1 and isinstance(nc_part[0], TensorProduct): #modified",
      "                        nc_part = (nc_part[0]._eval_expand_tensorproduct(), ) #modified",
      "                    add_args.append(Mul(*c_part)*Mul(*nc_part)) #modified",
      "                break",
      "```",
    ].join("\n");
    const text = `The expansion stops incomplete:\n${example}\n\nI propose this fix in TensorProduct._eval_expand_tensorproduct():\n${proposal}\nThe fix splits off commutative factors.`;
    expect(quotedReferenceLines(text, reference)).toHaveLength(4);
    const cleaned = cleanRequestText(text, reference);
    expect(cleaned.removed).toEqual([{ kind: "code_block", reference_lines: 4 }]);
    expect(cleaned.text).toContain(example);
    expect(cleaned.text).toContain("TensorProduct._eval_expand_tensorproduct()");
    expect(quotedReferenceLines(cleaned.text, reference)).toEqual([]);
    // The same lines pasted as a diff without a fence go too; one quoted line alone is no excerpt.
    const unfenced = `Try:\n+    c_part, nc_part = tp.args_cnc()\n+    add_args.append(Mul(*c_part)*Mul(*nc_part))\nthanks`;
    expect(cleanRequestText(unfenced, reference)).toEqual({ text: `Try:\n${EXCERPT_REMOVED}\nthanks`, removed: [{ kind: "lines", reference_lines: 2 }] });
    const single = "It fails where `c_part, nc_part = tp.args_cnc()` should be called.";
    expect(cleanRequestText(single, reference)).toEqual({ text: single, removed: [] });
  });
});

const request = (stage: number, text: string): Request => ({
  stage,
  text,
  provenance: { sources: [{ kind: "review", record_id: String(stage), author: "rev" }] },
});

describe("curation", () => {
  const base = [request(1, "one"), request(2, "two"), request(3, "three")];
  const curate = (actions: unknown[]) =>
    applyCuration(base, parseCuration("c.yaml", JSON.stringify({ task: "o__r-1", reviewer: "ann", reason: "why", actions })), "c.yaml");
  it("edits, drops, merges and adds authored stages, recording each in provenance", () => {
    expect(curate([{ action: "edit", stage: 2, text: "TWO" }]).map((r) => [r.stage, r.text, r.provenance.curation?.action])).toEqual([
      [1, "one", undefined],
      [2, "TWO", "edit"],
      [3, "three", undefined],
    ]);
    expect(curate([{ action: "drop", stage: 2 }]).map((r) => [r.stage, r.text])).toEqual([
      [1, "one"],
      [2, "three"],
    ]);
    const merged = curate([{ action: "merge", stages: [2, 3] }]);
    expect(merged.map((r) => [r.stage, r.text])).toEqual([
      [1, "one"],
      [2, "two\n\nthree"],
    ]);
    expect(merged[1]!.provenance).toMatchObject({
      sources: [{ record_id: "2" }, { record_id: "3" }],
      curation: { action: "merge", reviewer: "ann", reason: "why", file: "c.yaml" },
    });
    const added = curate([{ action: "add", after: 1, text: "authored" }]);
    expect(added.map((r) => [r.stage, r.text])).toEqual([
      [1, "one"],
      [2, "authored"],
      [3, "two"],
      [4, "three"],
    ]);
    expect(added[1]!.provenance.sources).toEqual([{ kind: "authored", record_id: "curation:c.yaml#0", author: "ann" }]);
  });
  it("names the file and field of a bad curation, and a stage that does not exist", () => {
    expect(() => parseCuration("x.yaml", "task: t\nreviewer: a\nreason: r\nactions:\n  - action: rename\n")).toThrow(/^x\.yaml: field actions\.0\.action/);
    expect(() => curate([{ action: "drop", stage: 9 }])).toThrow(/c\.yaml: actions\.0: stage 9 does not exist \(the task has 3\)/);
  });
});

describe("rounds", () => {
  it("makes one stage per review round with substantive feedback, in time order, between the author's pushes", () => {
    const at = (d: number, h = 0) => new Date(Date.UTC(2024, 0, d, h)).toISOString().replace(".000", "");
    const candidate = {
      id: "o__r-5",
      repo: "o/r",
      source: { kind: "github", api_url: "pr" },
      issues: [],
      pull_request: {
        number: 5,
        url: "pr",
        title: "Add f",
        body: "`f(x)` should double x.",
        author: "author",
        created_at: at(1),
        merged_at: at(9),
        head_sha: "a".repeat(40),
        merge_commit_sha: null,
        commits: [
          { sha: "1".repeat(40), message: "impl", committed_at: at(1) },
          { sha: "2".repeat(40), message: "r1", committed_at: at(3) },
          { sha: "3".repeat(40), message: "r2", committed_at: at(5) },
        ],
        changed_files: [],
        discussion: [
          item({ kind: "review", created_at: at(2), body: "`f` must raise TypeError for text." }),
          item({ created_at: at(2, 1), author: "author", body: "Will do." }),
          item({ kind: "review_comment", created_at: at(4), body: "`f` should accept `scale`.\n```suggestion\ndef f(x, scale=2):\n```" }),
          item({ kind: "review_comment", created_at: at(4, 1), body: "`f` should accept `scale`.\n```suggestion\ndef f(x, scale=2):\n```" }),
          item({ kind: "review", state: "APPROVED", created_at: at(6), body: "LGTM" }),
          item({ created_at: at(10), body: "Please also support lists." }),
        ],
      },
    } as unknown as Candidate;
    const { requests, comments } = reconstructRequests(candidate, new Set());
    expect(requests.map((r) => r.text)).toEqual(["Add f\n\n`f(x)` should double x.", "`f` must raise TypeError for text.", "`f` should accept `scale`."]);
    expect(requests[1]!.provenance.sources.map((s) => s.kind)).toEqual(["review"]);
    expect(comments.map((c) => [c.class, c.round, c.stage])).toEqual([
      ["substantive", 0, 2],
      ["progress_only", 0, null],
      ["suggestion", 1, 3],
      ["duplicate", 1, null],
      ["approval_only", 2, null],
      ["post_merge", null, null],
    ]);
  });
});
