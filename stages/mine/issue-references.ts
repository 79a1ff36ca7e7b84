/** An issue reference: repository and number. */
export interface IssueRef {
  repo: string;
  number: number;
}

const KEYWORD = String.raw`\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b:?\s+`;
// An issue URL, owner/repo#N, #N, or GH-N (GitHub autolinks all four; closing keywords take each).
const TARGET = String.raw`(?:https?://github\.com/([\w.-]+/[\w.-]+)/issues/(\d+)|([\w.-]+/[\w.-]+)#(\d+)|#(\d+)|\bGH-(\d+))\b`;
const CLOSING = new RegExp(KEYWORD + TARGET, "gi");
const MENTION = new RegExp(String.raw`(?:^|[^\w/#])` + TARGET, "gi");

function refOf(match: RegExpExecArray, repo: string): IssueRef {
  if (match[1]) return { repo: match[1], number: Number(match[2]) };
  if (match[3]) return { repo: match[3], number: Number(match[4]) };
  return { repo, number: Number(match[5] ?? match[6]) };
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
  return unique([...(kind === "markdown" ? linkTargets(stripCode(text)) : text).matchAll(CLOSING)].map((m) => refOf(m, repo)));
}

/** Every issue reference in a text, closing or not. */
export function mentions(text: string, repo: string): IssueRef[] {
  return unique([...linkTargets(stripCode(text)).matchAll(MENTION)].map((m) => refOf(m, repo)));
}

/**
 * A link's text is not a reference of its own: `<a href="https://github.com/o/r/issues/5">#5</a>`
 * and `[#5](…/o/r/issues/5)` name o/r's issue 5, whatever repository the text is read in. Each
 * link is replaced by its target (which is a reference only if it is an issue URL).
 */
function linkTargets(text: string): string {
  return text
    .replace(/<a\s[^>]*?href\s*=\s*["']([^"']*)["'][^>]*>[\s\S]*?<\/a\s*>/gi, " $1 ")
    .replace(/\[([^\]\n]*)\]\(\s*<?([^()\s>]+)>?(?:\s+"[^"]*")?\s*\)/g, " $2 ");
}

/** References inside code blocks and inline code are not links on GitHub. */
function stripCode(text: string): string {
  return text.replace(/```[\s\S]*?```/g, " ").replace(/`[^`\n]*`/g, " ");
}
