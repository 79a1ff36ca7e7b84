import type { Candidate, DiscussionItem } from "../../pipeline/schemas/candidate.ts";
import type { Request } from "../../pipeline/schemas/task.ts";
import { classifyDiscussion, REQUEST_CLASSES, type Classified } from "./classify.ts";
import { cleanRequestText } from "./clean.ts";
import type { RemovedExcerpt } from "../../pipeline/changes/reference-quotes.ts";

/** The excerpts a request lost, for its provenance (nothing when none). */
const excerpts = (removed: RemovedExcerpt[]) => (removed.length ? { excerpts_removed: removed } : {});

export interface CommentRecord {
  task_id: string;
  item_id: number;
  kind: DiscussionItem["kind"];
  author: string;
  created_at: string;
  url: string;
  round: number | null;
  class: Classified["class"];
  reason: string;
  /** The stage this comment contributed to, if any. */
  stage: number | null;
}

const LINK_ORDER = { closing_reference: 0, pr_body_keyword: 1, commit_keyword: 2, timeline: 3 } as const;

function source(item: DiscussionItem) {
  return { kind: item.kind, record_id: String(item.id), url: item.url, author: item.author, created_at: item.created_at };
}

/** Suggestion blocks carry code for the fix: the ask around them stays, the code goes. */
function askOf(item: DiscussionItem): string {
  return item.body.replace(/```suggestion[\s\S]*?```/g, "").trim();
}

/**
 * Rebuilds a task's ordered, cumulative requests. Stage 1 is a SWE-bench-family record's own
 * problem statement (enriched or not); for a mined pull request, the linked issue (the closing
 * one first; any other is noted in provenance), or the PR description when no issue is linked.
 * Every later stage is one pre-merge review round (the feedback between two pushes of the
 * author's commits) with at least one substantive comment; its substantive comments become one
 * request. Every comment's class is returned for curators.
 */
export function reconstructRequests(candidate: Candidate, added: ReadonlySet<string>): { requests: Request[]; comments: CommentRecord[] } {
  const pr = candidate.pull_request;
  const first = firstRequest(candidate, added);
  const requests: Request[] = first ? [first] : [];
  if (!pr) return { requests: requests.filter((r) => r.text), comments: [] };

  const classified = classifyDiscussion(pr.discussion, pr.author, pr.merged_at);
  // Round k is the feedback after the author's k-th push (counting from 0) and before the next one.
  const pushes = [...new Set(pr.commits.map((c) => c.committed_at))].sort();
  const roundOf = (created: string): number => Math.max(0, pushes.filter((p) => p < created).length - 1);
  const comments: CommentRecord[] = classified.map((c) => ({
    task_id: candidate.id,
    item_id: c.item.id,
    kind: c.item.kind,
    author: c.item.author,
    created_at: c.item.created_at,
    url: c.item.url,
    round: c.class === "post_merge" ? null : roundOf(c.item.created_at),
    class: c.class,
    reason: c.reason,
    stage: null,
  }));
  const rounds = new Map<number, Classified[]>();
  classified.forEach((c, i) => {
    const round = comments[i]!.round;
    if (round === null || !REQUEST_CLASSES.has(c.class)) return;
    rounds.set(round, [...(rounds.get(round) ?? []), c]);
  });
  for (const round of [...rounds.keys()].sort((a, b) => a - b)) {
    const items = rounds.get(round)!;
    const seen = new Set<string>();
    const parts: string[] = [];
    const removed: RemovedExcerpt[] = [];
    for (const c of items) {
      const cleaned = cleanRequestText(askOf(c.item), added);
      const key = cleaned.text.replace(/\s+/g, " ").toLowerCase();
      if (!cleaned.text || seen.has(key)) continue;
      seen.add(key);
      parts.push(cleaned.text);
      removed.push(...cleaned.removed);
    }
    if (!parts.length) continue;
    const stage = requests.length + 1;
    requests.push({ stage, text: parts.join("\n\n"), provenance: { sources: items.map((c) => source(c.item)), ...excerpts(removed) } });
    for (const c of items) comments.find((r) => r.item_id === c.item.id)!.stage = stage;
  }
  return { requests, comments };
}

/**
 * Stage 1: a SWE-bench-family record's own problem statement; for a mined pull request, its
 * linked issue (the closing one first; any other is noted in provenance), or its description.
 */
function firstRequest(candidate: Candidate, added: ReadonlySet<string>): Request | undefined {
  const pr = candidate.pull_request;
  const issues = [...candidate.issues].sort((a, b) => LINK_ORDER[a.linked_by] - LINK_ORDER[b.linked_by] || a.number - b.number);
  const statement = candidate.source.kind === "swebench" ? (candidate.problem_statement ?? "").trim() : "";
  if (statement) {
    // A SWE-bench-family record's own problem statement is what it was qualified against: it stays
    // stage 1 when enrichment found its pull request's history. The linked issues (their text as
    // GitHub has it now) and the pull request are provenance, never a replacement.
    const cleaned = cleanRequestText(candidate.problem_statement!, added);
    return {
      stage: 1,
      text: cleaned.text,
      provenance: {
        ...excerpts(cleaned.removed),
        sources: [
          { kind: "issue", record_id: `${candidate.id}:problem_statement`, author: "unknown" },
          ...issues.map((i) => ({ kind: "issue" as const, record_id: `${i.repo}#${i.number}`, url: i.url, author: i.author, created_at: i.created_at })),
          ...(pr && !issues.length
            ? [{ kind: "pr_body" as const, record_id: `${candidate.repo}#${pr.number}`, url: pr.url, author: pr.author, created_at: pr.created_at }]
            : []),
        ],
      },
    };
  } else if (issues.length) {
    const [first, ...others] = issues;
    const cleaned = cleanRequestText(`${first!.title}\n\n${first!.body}`, added);
    return {
      stage: 1,
      text: cleaned.text,
      provenance: {
        ...excerpts(cleaned.removed),
        sources: [first!, ...others].map((i) => ({
          kind: "issue" as const,
          record_id: `${i.repo}#${i.number}`,
          url: i.url,
          author: i.author,
          created_at: i.created_at,
        })),
      },
    };
  } else if (pr) {
    const cleaned = cleanRequestText(`${pr.title}\n\n${pr.body}`, added);
    return {
      stage: 1,
      text: cleaned.text,
      provenance: {
        ...excerpts(cleaned.removed),
        sources: [{ kind: "pr_body", record_id: `${candidate.repo}#${pr.number}`, url: pr.url, author: pr.author, created_at: pr.created_at }],
      },
    };
  }
  return undefined;
}
