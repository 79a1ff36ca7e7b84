import type { GithubClient } from "../../pipeline/github-client.ts";
import { LINK_SOURCES, type LinkedIssue } from "../../pipeline/schemas/candidate.ts";
import { byTime, issueCommentItem } from "./discussion.ts";
import { goneStatus, isForbidden, type Issue, type IssueComment, ownerAndName } from "./github-api.ts";
import type { IssueRef } from "./issue-references.ts";
import type { Link } from "./linking.ts";

const refKey = (ref: IssueRef) => `${ref.repo.toLowerCase()}#${ref.number}`;

/** "owner/repo" of an issue as GitHub returned it (after a transfer, its new repository). */
function repoOfIssue(issue: Issue, fallback: string): string {
  const match = /\/repos\/([^/]+\/[^/]+)$/.exec(String(issue.repository_url ?? ""));
  return match ? match[1]! : fallback;
}

/** Why a linked issue is skipped, when GitHub says it is gone or refuses it; anything else is thrown. */
function skipped(error: unknown, what: string, sources: string[], when = ""): string {
  if (isForbidden(error)) return `linked issue ${what} (${sources.join(", ")}): ${error.message}${when}; the link is skipped`;
  const status = goneStatus(error);
  if (!status) throw error;
  return `linked issue ${what} (${sources.join(", ")}) ${status === 410 ? "was deleted (410 Gone)" : "does not exist (404)"}${when}; the link is skipped`;
}

/**
 * Each linked issue with its comments. A deleted issue (410), one that does not exist (404) or one
 * this token may not read (403) is a link skipped with a note; a transferred one (301, which the
 * client follows) is kept at its new home, with where the pull request named it; a closing
 * reference to a pull request is not an issue.
 */
export async function fetchIssues(octokit: GithubClient, links: Link[], notes: string[]): Promise<LinkedIssue[]> {
  const issues: LinkedIssue[] = [];
  for (const { ref, sources } of links) {
    let issue: Issue;
    try {
      issue = (await octokit.rest.issues.get({ ...ownerAndName(ref.repo), issue_number: ref.number })).data;
    } catch (error) {
      notes.push(skipped(error, `${ref.repo}#${ref.number}`, sources));
      continue;
    }
    if (issue.pull_request) continue;
    const at: IssueRef = { repo: repoOfIssue(issue, ref.repo), number: issue.number };
    const moved = refKey(at) !== refKey(ref);
    const same = issues.find((i) => refKey(i) === refKey(at));
    if (same) {
      // Named twice (its old and new address): one issue, found by every source that named it.
      same.link_sources = LINK_SOURCES.filter((s) => same.link_sources.includes(s) || sources.includes(s));
      same.linked_by = same.link_sources[0]!;
      if (moved) {
        same.transferred_from ??= `${ref.repo}#${ref.number}`;
        notes.push(`linked issue ${ref.repo}#${ref.number} was transferred to ${at.repo}#${at.number} (301); it is the same issue as the one linked there`);
      }
      continue;
    }
    let comments: IssueComment[];
    try {
      comments = await octokit.paginate(octokit.rest.issues.listComments, { ...ownerAndName(at.repo), issue_number: at.number, per_page: 100 });
    } catch (error) {
      // Deleted between the two requests: as gone as if the first had said so.
      notes.push(skipped(error, `${at.repo}#${at.number}`, sources, " while its comments were read"));
      continue;
    }
    if (moved) notes.push(`linked issue ${ref.repo}#${ref.number} was transferred to ${at.repo}#${at.number} (301); followed`);
    const ordered = LINK_SOURCES.filter((s) => sources.includes(s));
    const page = String(issue.html_url ?? `https://github.com/${at.repo}/issues/${at.number}`);
    issues.push({
      repo: at.repo,
      number: at.number,
      url: issue.html_url,
      title: issue.title,
      body: issue.body ?? "",
      author: issue.user?.login ?? "ghost",
      created_at: issue.created_at,
      linked_by: ordered[0]!,
      link_sources: ordered,
      ...(moved ? { transferred_from: `${ref.repo}#${ref.number}` } : {}),
      comments: comments.map((c) => issueCommentItem(c, page)).sort(byTime),
    });
  }
  return issues;
}
