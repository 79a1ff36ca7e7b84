import type { GithubClient } from "../../pipeline/github-client.ts";
import { goneStatus, isForbidden, type ListedPullRequest, ownerAndName, type PullSummary } from "./github-api.ts";

/** A repository the config names, and which of its pull requests: a creation-date window, or numbers. */
export interface MineTarget {
  repo: string;
  since?: string;
  until?: string;
  numbers?: number[];
}

/** What listing a repository's pull requests gave: the merged ones, and numbers that are not, each with why. */
export interface ListedPulls {
  pulls: PullSummary[];
  /** Numbers GitHub lacks (404) or has deleted (410). */
  missing: { number: number; status: 404 | 410 }[];
  /** Numbers never merged, with their state. */
  unmerged: { number: number; state: string }[];
  /** Numbers GitHub refuses this token (403, no rate limit), with GitHub's words. */
  forbidden: { number: number; message: string }[];
  /** Pages of the pull-request list read (a window's cost). */
  pages: number;
}

/**
 * Merged pull requests of a repository, oldest first: from a list of numbers (each number GitHub
 * does not have, has deleted, refuses this token or never merged returned apart, so the others are
 * still mined), or in a creation-date window (see listWindow), whose list GitHub may refuse whole.
 */
export async function listMergedPulls(octokit: GithubClient, target: MineTarget): Promise<ListedPulls> {
  const listed: ListedPulls = { pulls: [], missing: [], unmerged: [], forbidden: [], pages: 0 };
  if (target.numbers?.length) {
    for (const number of target.numbers) {
      try {
        const { data } = await octokit.rest.pulls.get({ ...ownerAndName(target.repo), pull_number: number });
        if (data.merged_at) listed.pulls.push({ repo: target.repo, number: data.number, pull: data });
        else listed.unmerged.push({ number, state: data.state });
      } catch (error) {
        if (isForbidden(error)) {
          listed.forbidden.push({ number, message: error.message });
          continue;
        }
        const status = goneStatus(error);
        if (!status) throw error;
        listed.missing.push({ number, status });
      }
    }
    return listed;
  }
  const { pulls, pages } = await listWindow(octokit, target);
  return { ...listed, pulls: pulls.filter((p) => p.merged_at).map((p) => ({ repo: target.repo, number: p.number, pull: p })), pages };
}

const PER_PAGE = 100;

/** The page number a Link header's rel="last" names, or undefined when there is none (a single page). */
function lastPage(link: string | undefined): number | undefined {
  const m = /<([^>]+)>;\s*rel="last"/.exec(link ?? "");
  const page = m ? new URL(m[1]!).searchParams.get("page") : null;
  return page ? Number(page) : undefined;
}

/**
 * Closed pull requests created in [since, until), oldest first, at a cost proportional to the
 * window rather than to the repository's history: the list is read newest first (GitHub's
 * sort=created, direction=desc), the first page holding the window's newest end is found by
 * bisecting page numbers (log2 of the pages, from the first page's rel="last"), and pages are
 * read from there until one starts before the window. Dates are compared as instants.
 */
async function listWindow(octokit: GithubClient, target: MineTarget): Promise<{ pulls: ListedPullRequest[]; pages: number }> {
  const since = target.since ? Date.parse(target.since) : Number.NEGATIVE_INFINITY;
  const until = target.until ? Date.parse(target.until) : Number.POSITIVE_INFINITY;
  const pages = new Map<number, ListedPullRequest[]>();
  let last = 1;
  const page = async (n: number): Promise<ListedPullRequest[]> => {
    let items = pages.get(n);
    if (!items) {
      const response = await octokit.rest.pulls.list({
        ...ownerAndName(target.repo),
        state: "closed",
        sort: "created",
        direction: "desc",
        per_page: PER_PAGE,
        page: n,
      });
      items = response.data;
      pages.set(n, items);
      if (n === 1) last = lastPage(response.headers.link) ?? 1;
    }
    return items;
  };
  const created = (p: ListedPullRequest) => Date.parse(p.created_at);
  const oldest = (items: ListedPullRequest[]) => (items.length ? created(items[items.length - 1]!) : Number.NEGATIVE_INFINITY);
  await page(1);
  // The first page whose oldest pull request is older than `until` (pages before it are all newer).
  let start = 1;
  if (Number.isFinite(until) && oldest(await page(1)) >= until) {
    let lo = 2;
    let hi = last;
    start = last + 1;
    while (lo <= hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (oldest(await page(mid)) < until) {
        start = mid;
        hi = mid - 1;
      } else lo = mid + 1;
    }
  }
  const inWindow: ListedPullRequest[] = [];
  for (let n = start; n <= last; n++) {
    const items = await page(n);
    for (const p of items) if (created(p) >= since && created(p) < until) inWindow.push(p);
    if (oldest(items) < since) break;
  }
  inWindow.sort((a, b) => created(a) - created(b) || a.number - b.number);
  return { pulls: inWindow, pages: pages.size };
}
