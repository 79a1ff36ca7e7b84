import { describe, expect, it } from "vitest";
import { closingReferences, mentions } from "../../../stages/mine/issue-references.ts";

const R = "o/r";
const nums = (refs: { repo: string; number: number }[]) => refs.map((r) => `${r.repo}#${r.number}`);

describe("closing keywords", () => {
  it.each(["close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved", "FIXES", "Closes", "ReSoLvEd"])(
    "%s #12 closes #12",
    (keyword) => {
      expect(nums(closingReferences(`This ${keyword} #12 for good.`, R))).toEqual(["o/r#12"]);
    },
  );

  it("accepts a colon, cross-repository references and issue URLs", () => {
    expect(nums(closingReferences("Fixes: #3", R))).toEqual(["o/r#3"]);
    expect(nums(closingReferences("Closes other/repo#9", R))).toEqual(["other/repo#9"]);
    expect(nums(closingReferences("resolves https://github.com/a/b/issues/77", R))).toEqual(["a/b#77"]);
  });

  it("takes only the reference right after the keyword", () => {
    expect(nums(closingReferences("fixes #1, #2", R))).toEqual(["o/r#1"]);
  });

  it("ignores plain mentions, misspellings, hyphens and code", () => {
    for (const text of ["Related to #5", "see #5", "fixx #5", "fixes- #5", "prefix #5", "suffixes #5", "`fixes #5`", "```\nfixes #5\n```", "fixes 5"]) {
      expect(closingReferences(text, R), text).toEqual([]);
    }
  });

  it("reads a commit message as plain text: a keyword in backticks or a fence still closes", () => {
    // GitHub does not render commit messages, so their code spans are no protection.
    expect(nums(closingReferences("This does not `close #3393` yet", R, "commit_message"))).toEqual(["o/r#3393"]);
    expect(nums(closingReferences("```\nfixes #5\n```", R, "commit_message"))).toEqual(["o/r#5"]);
    expect(closingReferences("This does not `close #3393` yet", R)).toEqual([]);
  });

  it("finds every mention, for the timeline check", () => {
    expect(nums(mentions("Follow-up to #4 and other/x#2; see https://github.com/o/r/issues/8", R))).toEqual(["o/r#4", "other/x#2", "o/r#8"]);
    expect(mentions("color #fff is not an issue; neither is a#1", R)).toEqual([]);
  });

  it("reads a link by its target, not its text: #N inside a link to another repository is that repository's", () => {
    // a bot's HTML table and a Markdown link, both naming another repository's issue as "#5"
    const html = '<a href="https://github.com/other/lib/issues/5">#5</a> was fixed upstream';
    expect(nums(mentions(html, R))).toEqual(["other/lib#5"]);
    expect(nums(mentions("Bump: see [#5](https://github.com/other/lib/issues/5)", R))).toEqual(["other/lib#5"]);
    // a link to something that is no issue names nothing, whatever its text says
    expect(mentions('<a href="https://github.com/other/lib/releases">#12</a>', R)).toEqual([]);
    expect(nums(closingReferences("Fixes [#7](https://github.com/o/r/issues/7)", R))).toEqual(["o/r#7"]);
    expect(closingReferences("Fixes [#7](https://github.com/other/lib/pull/7)", R)).toEqual([]);
  });

  it("reads GH-N as GitHub does, in mentions and after closing keywords", () => {
    expect(nums(closingReferences("Fixes GH-26", R))).toEqual(["o/r#26"]);
    expect(nums(mentions("Follows GH-3 and gh-4", R))).toEqual(["o/r#3", "o/r#4"]);
    expect(mentions("SIGH-5 and XGH-6 are not references", R)).toEqual([]);
  });
});
