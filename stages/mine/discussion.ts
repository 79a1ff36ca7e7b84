import type { DiscussionItem } from "../../pipeline/schemas/candidate.ts";
import type { IssueComment, Review, ReviewComment } from "./github-api.ts";

/** A pull request's (or an issue's) discussion as the candidate holds it: comments, reviews and line comments, in time order. */

/** GitHub's own anchor for an item of a page, for an answer that lacks its html_url. */
function anchorOf(kind: DiscussionItem["kind"], id: number, pageUrl: string): string {
  const anchor = kind === "review" ? `pullrequestreview-${id}` : kind === "review_comment" ? `discussion_r${id}` : `issuecomment-${id}`;
  return `${pageUrl}#${anchor}`;
}

/** What every kind of item has: who said what, when, and where it stands on the page. */
function itemBase(
  kind: DiscussionItem["kind"],
  item: { id: number; html_url?: string | null; user?: { login: string; type: string } | null; body?: string | null },
  createdAt: string,
  pageUrl: string,
): DiscussionItem {
  return {
    kind,
    id: item.id,
    url: typeof item.html_url === "string" && item.html_url ? item.html_url : anchorOf(kind, item.id, pageUrl),
    author: item.user?.login ?? "ghost",
    author_type: (item.user?.type ?? "User") as DiscussionItem["author_type"],
    created_at: createdAt,
    body: item.body ?? "",
  };
}

/** A comment on the conversation (of a pull request or an issue). */
export function issueCommentItem(comment: IssueComment, pageUrl: string): DiscussionItem {
  return itemBase("issue_comment", comment, comment.created_at, pageUrl);
}

/** A submitted review, with its state (APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED). */
export function reviewItem(review: Review, pageUrl: string): DiscussionItem {
  return { ...itemBase("review", review, review.submitted_at!, pageUrl), ...(review.state ? { state: review.state } : {}) };
}

/** A comment on a line of the change, with its file and line, the comment it answers and the review it was submitted in. */
export function reviewCommentItem(comment: ReviewComment, pageUrl: string): DiscussionItem {
  return {
    ...itemBase("review_comment", comment, comment.created_at, pageUrl),
    ...(comment.path ? { path: comment.path, line: comment.line ?? comment.original_line ?? null } : {}),
    ...(comment.in_reply_to_id ? { in_reply_to: comment.in_reply_to_id } : {}),
    ...(typeof comment.pull_request_review_id === "number" ? { review_id: comment.pull_request_review_id } : {}),
  };
}

/** Oldest first; items of the same instant by id. */
export const byTime = (a: DiscussionItem, b: DiscussionItem) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id - b.id);
