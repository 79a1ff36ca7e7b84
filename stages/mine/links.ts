/** An issue reference: repository and number. */
export interface IssueRef {
  repo: string;
  number: number;
}

const KEYWORD = String.raw`\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b:?\s+`;
const TARGET = String.raw`(?:https?://github\.com/([\w.-]+/[\w.-]+)/issues/(\d+)|([\w.-]+/[\w.-]+)#(\d+)|#(\d+))\b`;
const CLOSING = new RegExp(KEYWORD + TARGET, "gi");
const MENTION = new RegExp(String.raw`(?:^|[^\w/#])` + TARGET, "gi");

function refOf(match: RegExpExecArray, repo: string): IssueRef {
  if (match[1]) return { repo: match[1], number: Number(match[2]) };
  if (match[3]) return { repo: match[3], number: Number(match[4]) };
  return { repo, number: Number(match[5]) };
}

function unique(refs: IssueRef[]): IssueRef[] {
  const seen = new Set<string>();
  return refs.filter((r) => {
    const key = `${r.repo.toLowerCase()}#${r.number}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/**
 * Issues a text closes the way GitHub reads closing keywords: close/closes/closed, fix/fixes/fixed,
 * resolve/resolves/resolved in any case, an optional colon, then `#N`, `owner/repo#N` or an issue
 * URL. Only the reference right after the keyword counts: "fixes #1, #2" closes #1 alone.
 */
export function closingReferences(text: string, repo: string, kind: "markdown" | "commit_message" = "markdown"): IssueRef[] {
  // A description is Markdown, where code does not link; a commit message is plain text, where
  // GitHub reads a keyword in backticks or a code fence like any other.
  return unique([...(kind === "markdown" ? stripCode(text) : text).matchAll(CLOSING)].map((m) => refOf(m, repo)));
}

/** Every issue reference in a text, closing or not. */
export function mentions(text: string, repo: string): IssueRef[] {
  return unique([...stripCode(text).matchAll(MENTION)].map((m) => refOf(m, repo)));
}

/** References inside code blocks and inline code are not links on GitHub. */
function stripCode(text: string): string {
  return text.replace(/```[\s\S]*?```/g, " ").replace(/`[^`\n]*`/g, " ");
}
