import { parseGitDiff } from "../pipeline/changes/diff.ts";
import type { DemoFunction } from "./families.ts";
import {
  commitObject,
  fullRepositoryObject,
  issueObject,
  nodeId,
  pullLinks,
  repositoryObject,
  simpleUser,
  stateEvent,
  API,
  WEB,
  type Json,
} from "./github-shapes.ts";
import type { PullRequestPlan } from "./plan.ts";

/** An issue reference: repository and number. */
export interface IssueKey {
  repo: string;
  number: number;
}

/** What closed an issue, as GraphQL's `ClosedEvent.closer` names it. */
export type Closer = { type: "PullRequest"; repo: string; number: number } | { type: "Commit"; oid: string };

/** A repository's GitHub records, keyed the way the local API serves them (REST and GraphQL). */
export interface RepoRecords {
  repository: Json;
  issues: Record<string, Json>;
  pulls: Record<string, Json>;
  pull_commits: Record<string, Json[]>;
  pull_files: Record<string, Json[]>;
  reviews: Record<string, Json[]>;
  review_comments: Record<string, Json[]>;
  issue_comments: Record<string, Json[]>;
  timelines: Record<string, Json[]>;
  /** GraphQL `PullRequest.closingIssuesReferences`: the issues a pull request is linked to close. */
  closing_references: Record<string, IssueKey[]>;
  /** GraphQL `ClosedEvent.closer` of each closed issue, in the order the issue was closed. */
  closers: Record<string, Closer[]>;
  /** Deleted issues: GitHub answers 410 Gone for them and their comments and timeline. */
  deleted: number[];
  /** Transferred issues: GitHub answers 301 with their new home. */
  transferred: Record<string, IssueKey>;
}

/** A repository's records with nothing in them yet: a recorder's start, or a test's corpus to fill. */
export function emptyRecords(repository: Json, pulls: Record<string, Json> = {}): RepoRecords {
  return {
    repository,
    issues: {},
    pulls,
    pull_commits: {},
    pull_files: {},
    reviews: {},
    review_comments: {},
    issue_comments: {},
    timelines: {},
    closing_references: {},
    closers: {},
    deleted: [],
    transferred: {},
  };
}

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

function user(login: string): Json {
  const u = USERS[login]!;
  return simpleUser(login, u.id, u.type);
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
  commits: { sha: string; message: string; at: number; tree: string }[];
  diff: string;
  decoyIssue: number;
  tracker: GithubRecorder;
  moduleText: (fn: DemoFunction) => { path: string; text: string } | undefined;
}

const CHECKLIST =
  "\n\n<!-- Thanks for filing an issue! Please fill in the sections below. -->\n### Checklist\n- [x] I searched the existing issues\n- [ ] I can help with a pull request\n";

/**
 * Records what GitHub would hold for one repository. Issues and pull requests share one number
 * sequence, as on GitHub; every id and timestamp is derived from the plan, never from the clock.
 */
export class GithubRecorder {
  private next = 1;
  private nextId: number;
  private readonly data: RepoRecords;
  private readonly repository: Json;

  constructor(
    readonly repo: string,
    start: number,
  ) {
    this.nextId = 10_000 + (hashString(repo) % 1000) * 10_000;
    this.repository = repositoryObject({
      id: this.id(),
      fullName: repo,
      owner: user("maintainer-bob"),
      createdAt: iso(start),
      pushedAt: iso(start),
      defaultBranch: "main",
    });
    this.data = emptyRecords(fullRepositoryObject(this.repository));
  }

  private id(): number {
    return this.nextId++;
  }

  peekNumber(): number {
    return this.next;
  }

  /** How many issues `pullRequest` creates before the pull request itself takes a number. */
  static issuesBefore(plan: PullRequestPlan): number {
    return (plan.link === "none" || plan.link === "cross_repo" ? 0 : 1) + (plan.extras.includes("moved_issues") ? 2 : 0);
  }

  records(): RepoRecords {
    return this.data;
  }

  /** Creates an issue and returns its number. */
  issue(options: { title: string; body: string | null; author: string; at: number; open?: boolean }): number {
    const number = this.next++;
    this.data.issues[number] = issueObject({
      id: this.id(),
      repo: this.repo,
      number,
      title: options.title,
      body: options.body,
      user: user(options.author),
      state: "open",
      stateReason: null,
      createdAt: iso(options.at),
      updatedAt: iso(options.at),
      closedAt: null,
      comments: 0,
      authorAssociation: options.author === "maintainer-bob" ? "OWNER" : "NONE",
    });
    this.data.timelines[number] = [];
    this.data.issue_comments[number] = [];
    return number;
  }

  comment(number: number, author: string, body: string, at: number): void {
    const id = this.id();
    const list = (this.data.issue_comments[number] ??= []);
    list.push({
      id,
      node_id: nodeId("IC", id),
      url: `${API}/repos/${this.repo}/issues/comments/${id}`,
      html_url: `${WEB}/${this.repo}/${this.data.pulls[number] ? "pull" : "issues"}/${number}#issuecomment-${id}`,
      issue_url: `${API}/repos/${this.repo}/issues/${number}`,
      user: user(author),
      body,
      created_at: iso(at),
      updated_at: iso(at),
      author_association: author === "alice-dev" ? "CONTRIBUTOR" : author.endsWith("[bot]") ? "NONE" : "MEMBER",
      performed_via_github_app: null,
    });
    const issue = this.data.issues[number];
    if (issue) issue.comments = list.length;
  }

  /** A state-change event (closed, connected, merged, ...) on an issue's or pull request's timeline. */
  stateEvent(number: number, event: string, actor: string, at: number, commitId: string | null = null, stateReason?: string | null): void {
    (this.data.timelines[number] ??= []).push(
      stateEvent({ id: this.id(), repo: this.repo, event, actor: user(actor), commitId, createdAt: iso(at), stateReason }),
    );
  }

  /** A cross-referenced event: the issue is mentioned by the given pull request (its issue form). */
  crossReference(number: number, actor: string, at: number, source: Json): void {
    (this.data.timelines[number] ??= []).push({
      event: "cross-referenced",
      actor: user(actor),
      created_at: iso(at),
      updated_at: iso(at),
      source: { type: "issue", issue: source },
    });
  }

  /**
   * Closes an issue. When a commit message closed it, the closed event names that commit; when a
   * pull request did (its description or the sidebar), GitHub leaves `commit_id` null and only
   * GraphQL's `ClosedEvent.closer` says which pull request it was.
   */
  close(number: number, closer: Closer, at: number): void {
    const issue = this.data.issues[number]!;
    issue.state = "closed";
    issue.state_reason = "completed";
    issue.closed_at = iso(at);
    issue.updated_at = iso(at);
    this.stateEvent(number, "closed", "maintainer-bob", at, closer.type === "Commit" ? closer.oid : null, "completed");
    (this.data.closers[number] ??= []).push(closer);
  }

  /** Deletes an issue: GitHub answers 410 Gone for it from then on. */
  deleteIssue(number: number): void {
    this.data.deleted.push(number);
  }

  /** Moves an issue to another repository's recorder: GitHub answers 301 at its old address. */
  transferIssue(number: number, to: GithubRecorder, at: number): IssueKey {
    const old = this.data.issues[number]!;
    const moved = to.issue({
      title: String(old.title),
      body: old.body as string | null,
      author: String((old.user as Json).login),
      at: Date.parse(String(old.created_at)),
    });
    for (const c of this.data.issue_comments[number] ?? [])
      to.comment(moved, (c.user as Json).login as string, String(c.body), Date.parse(String(c.created_at)));
    // Its state, timeline and closers move with it; the transfer itself updates it.
    Object.assign(to.data.issues[moved]!, { state: old.state, state_reason: old.state_reason, closed_at: old.closed_at, updated_at: iso(at) });
    to.data.timelines[moved] = [...(this.data.timelines[number] ?? [])];
    if (this.data.closers[number]) to.data.closers[moved] = [...this.data.closers[number]!];
    const key = { repo: to.repo, number: moved };
    this.data.transferred[number] = key;
    return key;
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
    let moved: LinkedIssueRecord["moved"];
    if (plan.extras.includes("moved_issues")) {
      // Two issues the description names with closing keywords: one is deleted later (GitHub then
      // answers 410), the other moved to the tracker (GitHub then answers 301 at its old address).
      const deleted = this.issue({
        title: "Installing from a wheel prints a warning",
        body: "Spam? This looks like a duplicate of something else.",
        author: "erin-user",
        at: input.issueAt + MIN,
      });
      const transferred = this.issue({
        title: "Installation instructions are missing",
        body: `Nothing in the documentation says how to install ${this.repo.split("/")[1]}.`,
        author: "dave-user",
        at: input.issueAt + 2 * MIN,
      });
      this.comment(transferred, "maintainer-bob", "Good point, the docs should say it.", input.issueAt + HOUR);
      moved = { deleted, transferred };
    }
    return { issueRef, issueNumber, issueRepo, issueRecorder, moved };
  }

  /** The PR's description: how it links its issue (the plan's link kind), and a decoy mention. */
  private pullBody(input: PullInput, linked: LinkedIssueRecord): string | null {
    const { plan } = input;
    const { issueRepo, issueNumber } = linked;
    const ref = issueRepo === this.repo ? `#${issueNumber}` : `${issueRepo}#${issueNumber}`;
    const decoy = plan.extras.includes("decoy_mention") ? `\n\nRelated to #${input.decoyIssue}. Not a fix for it: fixx #${input.decoyIssue}.` : "";
    const moved = linked.moved ? `\n\nFixes #${linked.moved.deleted}. Closes #${linked.moved.transferred}.` : "";
    // A pull request opened with an empty description has a null body on GitHub.
    if (plan.link === "commit_keyword" && plan.extras.includes("many_commits")) return null;
    const summary = `This pull request implements the request.`;
    return (
      {
        keyword: `${summary}\n\nFixes ${ref}`,
        keyword_lower: `${summary}\n\ncloses ${ref}`,
        keyword_colon: `${summary}\n\nResolves: ${ref}`,
        commit_keyword: summary,
        cross_repo: `${summary}\n\nCloses ${ref}`,
        url: `${summary}\n\nResolved ${WEB}/${issueRepo}/issues/${issueNumber}`,
        timeline: `Follow-up to the discussion in ${ref}.`,
        // Linked in the "Development" sidebar: the description names no issue at all.
        sidebar: summary,
        none: input.texts[0]!,
      }[plan.link] +
      decoy +
      moved
    );
  }

  /** The pull request as GitHub lists it, as an issue, and its commits and files. */
  private recordPull(number: number, input: PullInput, body: string | null, files: Json[]): void {
    const head = { label: `alice-dev:pr-${input.index}`, ref: `pr-${input.index}`, sha: input.head, user: user("alice-dev"), repo: this.repository };
    const base = { label: "demo-org:main", ref: "main", sha: input.base, user: user("maintainer-bob"), repo: this.repository };
    const id = this.id();
    this.data.pulls[number] = {
      ...pullLinks(this.repo, number, input.head),
      id,
      node_id: nodeId("PR", id),
      number,
      state: "closed",
      locked: false,
      title: input.title,
      user: user("alice-dev"),
      body,
      labels: [],
      milestone: null,
      active_lock_reason: null,
      created_at: iso(input.prAt),
      updated_at: iso(input.mergedAt),
      closed_at: iso(input.mergedAt),
      merged_at: iso(input.mergedAt),
      merge_commit_sha: input.mergeCommit,
      assignee: null,
      assignees: [],
      requested_reviewers: [],
      requested_teams: [],
      head,
      base,
      author_association: "CONTRIBUTOR",
      auto_merge: null,
      draft: false,
      merged: true,
      mergeable: null,
      rebaseable: null,
      mergeable_state: "unknown",
      merged_by: user("maintainer-bob"),
      comments: 0,
      review_comments: 0,
      maintainer_can_modify: false,
      commits: input.commits.length,
      additions: files.reduce((n, f) => n + Number(f.additions), 0),
      deletions: files.reduce((n, f) => n + Number(f.deletions), 0),
      changed_files: files.length,
    };
    // GitHub lists pull requests among issues too, with a pull_request key.
    this.data.issues[number] = issueObject({
      id: this.id(),
      repo: this.repo,
      number,
      title: input.title,
      body,
      user: user("alice-dev"),
      state: "closed",
      stateReason: null,
      createdAt: iso(input.prAt),
      updatedAt: iso(input.mergedAt),
      closedAt: iso(input.mergedAt),
      comments: 0,
      authorAssociation: "CONTRIBUTOR",
      pullRequest: { mergedAt: iso(input.mergedAt) },
    });
    this.data.timelines[number] = [];
    this.data.issue_comments[number] = [];
    this.data.pull_files[number] = files;
    this.data.pull_commits[number] = input.commits.map((c, i) =>
      commitObject(this.repo, {
        sha: c.sha,
        message: c.message,
        authorName: "Alice Developer",
        authorEmail: "alice@demo.invalid",
        committerName: "Demo Maintainer",
        committerEmail: "maintainer@demo.invalid",
        date: iso(c.at),
        tree: c.tree,
        parents: [i === 0 ? input.base : input.commits[i - 1]!.sha],
        author: user("alice-dev"),
      }),
    );
  }

  /** The review rounds: each round's ask in reviews and inline comments, with the noise real reviews have. */
  private recordReviews(number: number, input: PullInput): void {
    const { review, reviewComment } = this.reviewWriters(number, input);
    this.comment(
      number,
      "codecov[bot]",
      "## Codecov Report\nAll modified and coverable lines are covered by tests :white_check_mark:\n> Project coverage is 94.12%. Comparing base to head.",
      input.prAt + 10 * MIN,
    );
    const headBefore = (round: number) => input.commits[Math.min(input.commits.length - 1, input.commits.length - input.roundAt.length - 1 + round)]!.sha;
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
        if (input.index % 3 === 0)
          reviewComment(
            review("carol-reviews", "COMMENTED", "", at + 30 * MIN, commit),
            "carol-reviews",
            "Why not use a list comprehension here?",
            at + 30 * MIN,
            commit,
            fn,
          );
        if (input.index % 4 === 1 && fn) {
          review("carol-reviews", "DISMISSED", `Please rename \`${fn.name}\` to something shorter.`, at + 40 * MIN, commit);
        }
        if (input.plan.extras.includes("decoy_mention"))
          reviewComment(id, "maintainer-bob", "Do it the way I did in my commit 3f2a9c1, see the diff above.", at + 3 * MIN, commit, fn);
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
    if (input.index % 5 === 2) review("carol-reviews", "PENDING", "", null, input.head);
    review("maintainer-bob", "APPROVED", "LGTM, thanks!", input.approvedAt, input.head);
  }

  /** Records a review, or an inline comment of one, on the pull request; each returns the new id. */
  private reviewWriters(number: number, input: PullInput) {
    const reviews: Json[] = (this.data.reviews[number] = []);
    const comments: Json[] = (this.data.review_comments[number] = []);
    const pullUrl = `${API}/repos/${this.repo}/pulls/${number}`;
    const review = (author: string, state: string, text: string, at: number | null, commit: string) => {
      const id = this.id();
      const html = `${WEB}/${this.repo}/pull/${number}#pullrequestreview-${id}`;
      // A PENDING review (started, never submitted) has no submitted_at; only its author sees it.
      reviews.push({
        id,
        node_id: nodeId("PRR", id),
        user: user(author),
        body: text,
        state,
        html_url: html,
        pull_request_url: pullUrl,
        _links: { html: { href: html }, pull_request: { href: pullUrl } },
        ...(at === null ? {} : { submitted_at: iso(at) }),
        commit_id: commit,
        author_association: "MEMBER",
      });
      return id;
    };
    const reviewComment = (reviewId: number, author: string, text: string, at: number, commit: string, fn: DemoFunction | undefined, inReplyTo?: number) => {
      const id = this.id();
      const where = fn ? input.moduleText(fn) : undefined;
      const lineIndex = where ? where.text.split("\n").findIndex((l) => l.startsWith(`def ${fn!.name}(`)) : -1;
      const url = `${API}/repos/${this.repo}/pulls/comments/${id}`;
      const html = `${WEB}/${this.repo}/pull/${number}#discussion_r${id}`;
      comments.push({
        id,
        node_id: nodeId("PRRC", id),
        pull_request_review_id: reviewId,
        url,
        html_url: html,
        pull_request_url: pullUrl,
        path: where?.path ?? "README.md",
        line: lineIndex >= 0 ? lineIndex + 1 : 1,
        original_line: lineIndex >= 0 ? lineIndex + 1 : 1,
        side: "RIGHT",
        subject_type: "line",
        diff_hunk: `@@ -1,3 +1,6 @@`,
        commit_id: commit,
        original_commit_id: commit,
        user: user(author),
        body: text,
        created_at: iso(at),
        updated_at: iso(at),
        author_association: "MEMBER",
        _links: { self: { href: url }, html: { href: html }, pull_request: { href: pullUrl } },
        ...(inReplyTo ? { in_reply_to_id: inReplyTo } : {}),
      });
      return id;
    };

    return { review, reviewComment };
  }

  pullRequest(input: PullInput): { number: number; issue: string | null; problemTitle: string; problemBody: string } {
    const { plan } = input;
    const linked = this.linkedIssue(input);
    const { issueRef, issueNumber, issueRecorder } = linked;
    const number = this.next++;
    const body = this.pullBody(input, linked);
    this.recordPull(number, input, body, pullFiles(this.repo, input.head, input.diff));
    this.recordReviews(number, input);
    const pull = this.data.pulls[number]!;
    pull.comments = this.data.issue_comments[number]!.length;
    pull.review_comments = this.data.review_comments[number]!.length;
    this.data.issues[number]!.comments = pull.comments;
    this.stateEvent(number, "merged", "maintainer-bob", input.mergedAt, input.mergeCommit);
    this.stateEvent(number, "closed", "maintainer-bob", input.mergedAt, null);
    if (plan.extras.includes("post_merge_comment")) {
      const fn = input.fns[0];
      this.comment(number, "dave-user", `Could \`${fn?.name ?? "this"}\` also accept a list of values?`, input.mergedAt + 2 * DAY);
    }

    const byPull: Closer = { type: "PullRequest", repo: this.repo, number };
    const closing: IssueKey[] = (this.data.closing_references[number] = []);
    const prIssue = this.data.issues[number]!;
    if (issueRef) {
      issueRecorder.crossReference(issueNumber, "alice-dev", input.prAt, prIssue);
      if (plan.link === "timeline" || plan.link === "sidebar") issueRecorder.stateEvent(issueNumber, "connected", "alice-dev", input.prAt);
      if (plan.link === "commit_keyword") {
        // A closing keyword in a commit message: the commit closes the issue once it reaches main
        // (a squash lands as the squash commit); the pull request does not list it as closing.
        const keywordCommit = [...input.commits].reverse().find((c) => /fixes #/i.test(c.message))!;
        issueRecorder.close(issueNumber, { type: "Commit", oid: plan.merge === "squash" ? input.mergeCommit : keywordCommit.sha }, input.mergedAt);
      } else {
        closing.push({ repo: issueRecorder.repo, number: issueNumber });
        issueRecorder.close(issueNumber, byPull, input.mergedAt);
      }
    }
    let movedRef: string | null = null;
    if (linked.moved) {
      // The deleted issue was never linked; the transferred one was closed by the merge, then moved.
      this.crossReference(linked.moved.transferred, "alice-dev", input.prAt, prIssue);
      this.close(linked.moved.transferred, byPull, input.mergedAt);
      const moved = this.transferIssue(linked.moved.transferred, input.tracker, input.mergedAt + DAY);
      closing.push(moved);
      movedRef = `${moved.repo}#${moved.number}`;
      this.deleteIssue(linked.moved.deleted);
    }
    if (plan.extras.includes("decoy_mention")) this.crossReference(input.decoyIssue, "alice-dev", input.prAt, prIssue);
    const problemTitle = input.title;
    const problemBody = issueRef ? input.texts[0]! + CHECKLIST : input.texts[0]!;
    return { number, issue: issueRef ?? movedRef, problemTitle, problemBody };
  }
}

/** The files of a pull request as GitHub's pulls.listFiles shows them. */
function pullFiles(repo: string, head: string, diff: string): Json[] {
  return parseGitDiff(diff).map((f) => {
    const lines = f.raw.split("\n");
    const patch = lines.findIndex((l) => l.startsWith("@@ "));
    const body = patch >= 0 ? lines.slice(patch).join("\n") : undefined;
    const additions = body ? body.split("\n").filter((l) => l.startsWith("+")).length : 0;
    const deletions = body ? body.split("\n").filter((l) => l.startsWith("-")).length : 0;
    const blob = /^index [0-9a-f]+\.\.([0-9a-f]+)/m.exec(f.raw)?.[1];
    const path = f.path.split("/").map(encodeURIComponent).join("/");
    return {
      sha: blob && !/^0+$/.test(blob) ? blob : null,
      filename: f.path,
      status: f.status === "mode_changed" ? "changed" : f.status === "deleted" ? "removed" : f.status,
      additions,
      deletions,
      changes: additions + deletions,
      blob_url: `${WEB}/${repo}/blob/${head}/${path}`,
      raw_url: `${WEB}/${repo}/raw/${head}/${path}`,
      contents_url: `${API}/repos/${repo}/contents/${path}?ref=${head}`,
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
  /** The deleted and the transferred issue a `moved_issues` pull request names. */
  moved?: { deleted: number; transferred: number };
}

function hashString(text: string): number {
  let h = 0;
  for (const ch of text) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return h;
}
