import { parseGitDiff } from "../domain/diff.ts";
import type { DemoFunction } from "./families.ts";
import type { PullRequestPlan } from "./plan.ts";

/** A repository's GitHub REST records, keyed the way the local API serves them. */
export interface RepoRecords {
  repository: Record<string, unknown>;
  issues: Record<string, Record<string, unknown>>;
  pulls: Record<string, Record<string, unknown>>;
  pull_commits: Record<string, Record<string, unknown>[]>;
  pull_files: Record<string, Record<string, unknown>[]>;
  reviews: Record<string, Record<string, unknown>[]>;
  review_comments: Record<string, Record<string, unknown>[]>;
  issue_comments: Record<string, Record<string, unknown>[]>;
  timelines: Record<string, Record<string, unknown>[]>;
}

const WEB = "https://github.com";
const API = "https://api.github.com";
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

const USERS: Record<string, { id: number; type: "User" | "Bot" }> = {
  "alice-dev": { id: 1001, type: "User" },
  "maintainer-bob": { id: 1002, type: "User" },
  "carol-reviews": { id: 1003, type: "User" },
  "dave-user": { id: 1004, type: "User" },
  "erin-user": { id: 1005, type: "User" },
  "codecov[bot]": { id: 2001, type: "Bot" },
  "github-actions[bot]": { id: 2002, type: "Bot" },
};

function user(login: string) {
  const u = USERS[login]!;
  return { login, id: u.id, type: u.type, html_url: `${WEB}/${login.replace("[bot]", "")}`, site_admin: false };
}

function iso(at: number): string {
  return new Date(at).toISOString().replace(/\.\d{3}Z$/, "Z");
}

export interface PullInput {
  plan: PullRequestPlan;
  index: number;
  title: string;
  texts: string[];
  fns: DemoFunction[];
  issueAt: number;
  prAt: number;
  roundAt: number[];
  approvedAt: number;
  mergedAt: number;
  base: string;
  head: string;
  mergeCommit: string;
  commits: { sha: string; message: string; at: number }[];
  diff: string;
  decoyIssue: number;
  tracker: GithubRecorder;
  moduleText: (fn: DemoFunction) => { path: string; text: string } | undefined;
}

const CHECKLIST = "\n\n<!-- Thanks for filing an issue! Please fill in the sections below. -->\n### Checklist\n- [x] I searched the existing issues\n- [ ] I can help with a pull request\n";

/**
 * Records what GitHub would hold for one repository. Issues and pull requests share one number
 * sequence, as on GitHub; every id and timestamp is derived from the plan, never from the clock.
 */
export class GithubRecorder {
  private next = 1;
  private nextId: number;
  private readonly data: RepoRecords;

  constructor(readonly repo: string, start: number) {
    this.nextId = 10_000 + (hashString(repo) % 1000) * 10_000;
    this.data = {
      repository: { id: this.id(), name: repo.split("/")[1], full_name: repo, owner: user("maintainer-bob"), private: false, html_url: `${WEB}/${repo}`, default_branch: "main", created_at: iso(start) },
      issues: {},
      pulls: {},
      pull_commits: {},
      pull_files: {},
      reviews: {},
      review_comments: {},
      issue_comments: {},
      timelines: {},
    };
  }

  private id(): number {
    return this.nextId++;
  }

  peekNumber(): number {
    return this.next;
  }

  records(): RepoRecords {
    return this.data;
  }

  /** Creates an issue and returns its number. */
  issue(options: { title: string; body: string; author: string; at: number; open?: boolean }): number {
    const number = this.next++;
    this.data.issues[number] = {
      id: this.id(),
      number,
      url: `${API}/repos/${this.repo}/issues/${number}`,
      html_url: `${WEB}/${this.repo}/issues/${number}`,
      title: options.title,
      body: options.body,
      user: user(options.author),
      state: options.open ? "open" : "closed",
      state_reason: options.open ? null : "completed",
      created_at: iso(options.at),
      updated_at: iso(options.at),
      closed_at: null,
      comments: 0,
      author_association: options.author === "maintainer-bob" ? "OWNER" : "NONE",
    };
    this.data.timelines[number] = [];
    this.data.issue_comments[number] = [];
    return number;
  }

  comment(number: number, author: string, body: string, at: number): void {
    const id = this.id();
    const list = (this.data.issue_comments[number] ??= []);
    list.push({ id, url: `${API}/repos/${this.repo}/issues/comments/${id}`, html_url: `${WEB}/${this.repo}/${this.data.pulls[number] ? "pull" : "issues"}/${number}#issuecomment-${id}`, user: user(author), body, created_at: iso(at), updated_at: iso(at), author_association: author === "alice-dev" ? "CONTRIBUTOR" : author.endsWith("[bot]") ? "NONE" : "MEMBER" });
    const issue = this.data.issues[number];
    if (issue) issue.comments = list.length;
  }

  event(number: number, event: Record<string, unknown>): void {
    (this.data.timelines[number] ??= []).push({ id: this.id(), node_id: `E_${this.nextId}`, ...event });
  }

  /** Closes an issue with the commit that closed it, the way a merged PR with a closing reference does. */
  closeBy(number: number, commit: string, at: number): void {
    const issue = this.data.issues[number]!;
    issue.state = "closed";
    issue.closed_at = iso(at);
    issue.updated_at = iso(at);
    this.event(number, { event: "closed", actor: user("maintainer-bob"), commit_id: commit, commit_url: `${API}/repos/${this.repo}/commits/${commit}`, created_at: iso(at), state_reason: "completed" });
  }

  /** The issue a pull request links (in this repository or the tracker), created before the PR is. */
  private linkedIssue(input: PullInput): LinkedIssueRecord {
    const { plan } = input;
    const inRepoIssue = plan.link !== "none" && plan.link !== "cross_repo";
    let issueRef: string | null = null;
    let issueNumber = 0;
    let issueRepo = this.repo;
    let issueRecorder: GithubRecorder = this;
    if (inRepoIssue || plan.link === "cross_repo") {
      issueRecorder = plan.link === "cross_repo" ? input.tracker : this;
      issueRepo = issueRecorder.repo;
      issueNumber = issueRecorder.issue({ title: input.title, body: input.texts[0]! + CHECKLIST, author: "dave-user", at: input.issueAt });
      issueRecorder.comment(issueNumber, "erin-user", "+1, I need this as well.", input.issueAt + 2 * HOUR);
      issueRef = `${issueRepo}#${issueNumber}`;
    }
    return { issueRef, issueNumber, issueRepo, issueRecorder };
  }

  /** The PR's description: how it links its issue (the plan's link kind), and a decoy mention. */
  private pullBody(input: PullInput, linked: LinkedIssueRecord): string {
    const { plan } = input;
    const { issueRepo, issueNumber } = linked;
    const ref = issueRepo === this.repo ? `#${issueNumber}` : `${issueRepo}#${issueNumber}`;
    const decoy = plan.extras.includes("decoy_mention") ? `\n\nRelated to #${input.decoyIssue}. Not a fix for it: fixx #${input.decoyIssue}.` : "";
    const summary = `This pull request implements the request.`;
    return {
      keyword: `${summary}\n\nFixes ${ref}`,
      keyword_lower: `${summary}\n\ncloses ${ref}`,
      keyword_colon: `${summary}\n\nResolves: ${ref}`,
      commit_keyword: summary,
      cross_repo: `${summary}\n\nCloses ${ref}`,
      url: `${summary}\n\nResolved ${WEB}/${issueRepo}/issues/${issueNumber}`,
      timeline: `Follow-up to the discussion in ${ref}.`,
      none: input.texts[0]!,
    }[plan.link] + decoy;
  }

  /** The pull request as GitHub lists it, as an issue, and its commits and files. */
  private recordPull(number: number, input: PullInput, body: string, files: ReturnType<typeof pullFiles>): void {
    this.data.pulls[number] = {
      id: this.id(),
      number,
      url: `${API}/repos/${this.repo}/pulls/${number}`,
      html_url: `${WEB}/${this.repo}/pull/${number}`,
      state: "closed",
      locked: false,
      title: input.title,
      user: user("alice-dev"),
      body,
      created_at: iso(input.prAt),
      updated_at: iso(input.mergedAt),
      closed_at: iso(input.mergedAt),
      merged_at: iso(input.mergedAt),
      merge_commit_sha: input.mergeCommit,
      draft: false,
      merged: true,
      head: { label: `alice-dev:pr-${input.index}`, ref: `pr-${input.index}`, sha: input.head, repo: { full_name: this.repo } },
      base: { label: "demo-org:main", ref: "main", sha: input.base, repo: { full_name: this.repo } },
      author_association: "CONTRIBUTOR",
      commits: input.commits.length,
      changed_files: files.length,
      additions: files.reduce((n, f) => n + f.additions, 0),
      deletions: files.reduce((n, f) => n + f.deletions, 0),
    };
    // GitHub lists pull requests among issues too, with a pull_request key.
    this.data.issues[number] = {
      id: this.id(),
      number,
      url: `${API}/repos/${this.repo}/issues/${number}`,
      html_url: `${WEB}/${this.repo}/pull/${number}`,
      title: input.title,
      body,
      user: user("alice-dev"),
      state: "closed",
      state_reason: null,
      created_at: iso(input.prAt),
      updated_at: iso(input.mergedAt),
      closed_at: iso(input.mergedAt),
      comments: 0,
      author_association: "CONTRIBUTOR",
      pull_request: { url: `${API}/repos/${this.repo}/pulls/${number}`, html_url: `${WEB}/${this.repo}/pull/${number}`, merged_at: iso(input.mergedAt) },
    };
    this.data.timelines[number] = [];
    this.data.issue_comments[number] = [];
    this.data.pull_files[number] = files;
    this.data.pull_commits[number] = input.commits.map((c, i) => ({
      sha: c.sha,
      html_url: `${WEB}/${this.repo}/commit/${c.sha}`,
      commit: { message: c.message, author: { name: "Alice Developer", email: "alice@demo.invalid", date: iso(c.at) }, committer: { name: "Demo Maintainer", email: "maintainer@demo.invalid", date: iso(c.at) } },
      author: user("alice-dev"),
      parents: [{ sha: i === 0 ? input.base : input.commits[i - 1]!.sha }],
    }));
  }

  /** The review rounds: each round's ask in reviews and inline comments, with the noise real reviews have. */
  private recordReviews(number: number, input: PullInput): void {
    const reviews: Record<string, unknown>[] = (this.data.reviews[number] = []);
    const comments: Record<string, unknown>[] = (this.data.review_comments[number] = []);
    const review = (author: string, state: string, text: string, at: number, commit: string) => {
      const id = this.id();
      reviews.push({ id, user: user(author), body: text, state, html_url: `${WEB}/${this.repo}/pull/${number}#pullrequestreview-${id}`, submitted_at: iso(at), commit_id: commit, author_association: "MEMBER" });
      return id;
    };
    const reviewComment = (reviewId: number, author: string, text: string, at: number, commit: string, fn: DemoFunction | undefined, inReplyTo?: number) => {
      const id = this.id();
      const where = fn ? input.moduleText(fn) : undefined;
      const lineIndex = where ? where.text.split("\n").findIndex((l) => l.startsWith(`def ${fn!.name}(`)) : -1;
      comments.push({
        id,
        pull_request_review_id: reviewId,
        url: `${API}/repos/${this.repo}/pulls/comments/${id}`,
        html_url: `${WEB}/${this.repo}/pull/${number}#discussion_r${id}`,
        path: where?.path ?? "README.md",
        line: lineIndex >= 0 ? lineIndex + 1 : 1,
        original_line: lineIndex >= 0 ? lineIndex + 1 : 1,
        side: "RIGHT",
        diff_hunk: `@@ -1,3 +1,6 @@`,
        commit_id: commit,
        original_commit_id: commit,
        user: user(author),
        body: text,
        created_at: iso(at),
        updated_at: iso(at),
        author_association: "MEMBER",
        ...(inReplyTo ? { in_reply_to_id: inReplyTo } : {}),
      });
      return id;
    };

    this.comment(number, "codecov[bot]", "## Codecov Report\nAll modified and coverable lines are covered by tests :white_check_mark:\n> Project coverage is 94.12%. Comparing base to head.", input.prAt + 10 * MIN);
    const headBefore = (round: number) => input.commits[Math.min(input.commits.length - 1, (input.commits.length - input.roundAt.length) - 1 + round)]!.sha;
    input.roundAt.forEach((at, r) => {
      const stageText = input.texts[r + 1]!;
      const commit = headBefore(r);
      const fn = input.fns[0];
      if (r === 0) {
        // Round one: the ask in a CHANGES_REQUESTED review, a remark repeated by mistake, and noise.
        const id = review("maintainer-bob", "CHANGES_REQUESTED", `Thanks for this! One change before we merge:\n\n${stageText}`, at, commit);
        const remark = `Please cover this case in the tests as well.`;
        const first = reviewComment(id, "maintainer-bob", remark, at, commit, fn);
        reviewComment(id, "maintainer-bob", remark, at + MIN, commit, fn);
        reviewComment(id, "alice-dev", "Will do.", at + 2 * HOUR, commit, fn, first);
        if (input.index % 3 === 0) reviewComment(review("carol-reviews", "COMMENTED", "", at + 30 * MIN, commit), "carol-reviews", "Why not use a list comprehension here?", at + 30 * MIN, commit, fn);
        if (input.index % 4 === 1 && fn) {
          review("carol-reviews", "DISMISSED", `Please rename \`${fn.name}\` to something shorter.`, at + 40 * MIN, commit);
        }
        if (input.plan.extras.includes("decoy_mention")) reviewComment(id, "maintainer-bob", "Do it the way I did in my commit 3f2a9c1, see the diff above.", at + 3 * MIN, commit, fn);
      } else {
        // Round two: the ask spread over inline comments, one carrying a suggestion block.
        const id = review("carol-reviews", "COMMENTED", "A couple more things.", at, commit);
        const sentences = stageText.split(/(?<=\.)\s+(?=`)/);
        sentences.forEach((sentence, i) => {
          const target = input.fns[i] ?? fn;
          const suggestion = i === 0 && target && !target.manyOf ? `\n\n\`\`\`suggestion\ndef ${target.name}(value, precision=None):\n\`\`\`` : "";
          reviewComment(id, "carol-reviews", sentence + suggestion, at + i * MIN, commit, target);
        });
      }
      const answered = at + 5 * HOUR;
      this.comment(number, "alice-dev", r % 2 === 0 ? "Thanks, done!" : "Rebased on main and addressed the review.", answered + 5 * MIN);
      this.comment(number, "github-actions[bot]", "All checks have passed.", answered + 20 * MIN);
    });
    review("maintainer-bob", "APPROVED", "LGTM, thanks!", input.approvedAt, input.head);
  }

  pullRequest(input: PullInput): { number: number; issue: string | null; problemTitle: string; problemBody: string } {
    const { plan } = input;
    const linked = this.linkedIssue(input);
    const { issueRef, issueNumber, issueRecorder } = linked;
    const number = this.next++;
    const body = this.pullBody(input, linked);
    this.recordPull(number, input, body, pullFiles(input.diff));
    this.recordReviews(number, input);
    this.event(number, { event: "merged", actor: user("maintainer-bob"), commit_id: input.mergeCommit, created_at: iso(input.mergedAt) });
    if (plan.extras.includes("post_merge_comment")) {
      const fn = input.fns[0];
      this.comment(number, "dave-user", `Could \`${fn?.name ?? "this"}\` also accept a list of values?`, input.mergedAt + 2 * DAY);
    }

    if (issueRef) {
      const source = { type: "issue", issue: { number, title: input.title, html_url: `${WEB}/${this.repo}/pull/${number}`, pull_request: { url: `${API}/repos/${this.repo}/pulls/${number}` }, repository: { full_name: this.repo } } };
      issueRecorder.event(issueNumber, { event: "cross-referenced", actor: user("alice-dev"), created_at: iso(input.prAt), source });
      if (plan.link === "timeline") issueRecorder.event(issueNumber, { event: "connected", actor: user("alice-dev"), created_at: iso(input.prAt) });
      issueRecorder.closeBy(issueNumber, input.mergeCommit, input.mergedAt);
    }
    if (plan.extras.includes("decoy_mention")) {
      this.event(input.decoyIssue, { event: "cross-referenced", actor: user("alice-dev"), created_at: iso(input.prAt), source: { type: "issue", issue: { number, pull_request: { url: `${API}/repos/${this.repo}/pulls/${number}` }, repository: { full_name: this.repo } } } });
    }
    const problemTitle = input.title;
    const problemBody = issueRef ? input.texts[0]! + CHECKLIST : input.texts[0]!;
    return { number, issue: issueRef, problemTitle, problemBody };
  }
}

/** The files of a pull request as GitHub's pulls.listFiles shows them. */
function pullFiles(diff: string) {
  return parseGitDiff(diff).map((f) => {
      const patch = f.raw.split("\n").findIndex((l) => l.startsWith("@@ "));
      const body = patch >= 0 ? f.raw.split("\n").slice(patch).join("\n") : undefined;
      const additions = body ? body.split("\n").filter((l) => l.startsWith("+")).length : 0;
      const deletions = body ? body.split("\n").filter((l) => l.startsWith("-")).length : 0;
      return {
        sha: null,
        filename: f.path,
        status: f.status === "mode_changed" ? "changed" : f.status === "deleted" ? "removed" : f.status,
        additions,
        deletions,
        changes: additions + deletions,
        ...(body ? { patch: body.trimEnd() } : {}),
        ...(f.oldPath !== f.path ? { previous_filename: f.oldPath } : {}),
      };
    });
}

interface LinkedIssueRecord {
  issueRef: string | null;
  issueNumber: number;
  issueRepo: string;
  issueRecorder: GithubRecorder;
}

function hashString(text: string): number {
  let h = 0;
  for (const ch of text) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return h;
}
