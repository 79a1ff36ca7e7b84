/**
 * GitHub REST objects in the shapes GitHub's published OpenAPI description gives them (every
 * required field, nulls where GitHub sends null), so the local API answers what GitHub answers.
 * Only identities and times come from the caller; the rest is what GitHub derives from them.
 */

export const WEB = "https://github.com";
export const API = "https://api.github.com";

export type Json = Record<string, unknown>;

/** A node id the way GitHub's look (a type prefix and an opaque tail), derived from the numeric id. */
export function nodeId(prefix: string, id: number): string {
  return `${prefix}_kw${Buffer.from(String(id)).toString("base64url")}`;
}

export function simpleUser(login: string, id: number, type: "User" | "Bot" | "Organization"): Json {
  const name = login.replace("[bot]", "");
  const url = `${API}/users/${encodeURIComponent(login)}`;
  return {
    login,
    id,
    node_id: nodeId(type === "Bot" ? "BOT" : "U", id),
    avatar_url: `https://avatars.githubusercontent.com/u/${id}?v=4`,
    gravatar_id: "",
    url,
    html_url: type === "Bot" ? `${WEB}/apps/${name}` : `${WEB}/${name}`,
    followers_url: `${url}/followers`,
    following_url: `${url}/following{/other_user}`,
    gists_url: `${url}/gists{/gist_id}`,
    starred_url: `${url}/starred{/owner}{/repo}`,
    subscriptions_url: `${url}/subscriptions`,
    organizations_url: `${url}/orgs`,
    repos_url: `${url}/repos`,
    events_url: `${url}/events{/privacy}`,
    received_events_url: `${url}/received_events`,
    type,
    user_view_type: "public",
    site_admin: false,
  };
}

/** The API and web addresses GitHub derives from a repository's name. */
function repositoryUrls(fullName: string): Json {
  const url = `${API}/repos/${fullName}`;
  const templated = {
    archive_url: "{archive_format}{/ref}",
    assignees_url: "assignees{/user}",
    blobs_url: "git/blobs{/sha}",
    branches_url: "branches{/branch}",
    collaborators_url: "collaborators{/collaborator}",
    comments_url: "comments{/number}",
    commits_url: "commits{/sha}",
    compare_url: "compare/{base}...{head}",
    contents_url: "contents/{+path}",
    git_commits_url: "git/commits{/sha}",
    git_refs_url: "git/refs{/sha}",
    git_tags_url: "git/tags{/sha}",
    issue_comment_url: "issues/comments{/number}",
    issue_events_url: "issues/events{/number}",
    issues_url: "issues{/number}",
    keys_url: "keys{/key_id}",
    labels_url: "labels{/name}",
    milestones_url: "milestones{/number}",
    notifications_url: "notifications{?since,all,participating}",
    pulls_url: "pulls{/number}",
    releases_url: "releases{/id}",
    statuses_url: "statuses/{sha}",
    trees_url: "git/trees{/sha}",
  };
  const plain = [
    "contributors",
    "deployments",
    "downloads",
    "events",
    "forks",
    "hooks",
    "languages",
    "merges",
    "stargazers",
    "subscribers",
    "subscription",
    "tags",
    "teams",
  ];
  return {
    url,
    ...Object.fromEntries(Object.entries(templated).map(([key, tail]) => [key, `${url}/${tail}`])),
    ...Object.fromEntries(plain.map((name) => [`${name}_url`, `${url}/${name}`])),
    html_url: `${WEB}/${fullName}`,
    git_url: `git://github.com/${fullName}.git`,
    ssh_url: `git@github.com:${fullName}.git`,
    clone_url: `${WEB}/${fullName}.git`,
    svn_url: `${WEB}/${fullName}`,
    mirror_url: null,
  };
}

/** A repository as GitHub embeds it (pull requests' head and base) and serves it (`repos.get`). */
export function repositoryObject(options: { id: number; fullName: string; owner: Json; createdAt: string; pushedAt: string; defaultBranch: string }): Json {
  const { id, fullName } = options;
  return {
    id,
    node_id: nodeId("R", id),
    name: fullName.split("/")[1],
    full_name: fullName,
    private: false,
    owner: options.owner,
    description: null,
    fork: false,
    ...repositoryUrls(fullName),
    homepage: null,
    language: "Python",
    forks_count: 0,
    forks: 0,
    stargazers_count: 0,
    watchers_count: 0,
    watchers: 0,
    size: 0,
    default_branch: options.defaultBranch,
    open_issues_count: 0,
    open_issues: 0,
    is_template: false,
    topics: [],
    has_issues: true,
    has_projects: false,
    has_wiki: false,
    has_pages: false,
    has_downloads: true,
    has_discussions: false,
    archived: false,
    disabled: false,
    visibility: "public",
    license: null,
    pushed_at: options.pushedAt,
    created_at: options.createdAt,
    updated_at: options.pushedAt,
  };
}

/** `repos.get` adds the counts a full repository has. */
export function fullRepositoryObject(repository: Json): Json {
  return { ...repository, network_count: 0, subscribers_count: 0 };
}

/** An issue's (or a pull request's issue side) REST form; `pull_request` marks a pull request. */
export function issueObject(options: {
  id: number;
  repo: string;
  number: number;
  title: string;
  body: string | null;
  user: Json;
  state: "open" | "closed";
  stateReason: string | null;
  createdAt: string;
  updatedAt: string;
  closedAt: string | null;
  comments: number;
  authorAssociation: string;
  pullRequest?: { mergedAt: string | null };
}): Json {
  const url = `${API}/repos/${options.repo}/issues/${options.number}`;
  return {
    url,
    repository_url: `${API}/repos/${options.repo}`,
    labels_url: `${url}/labels{/name}`,
    comments_url: `${url}/comments`,
    events_url: `${url}/events`,
    html_url: `${WEB}/${options.repo}/${options.pullRequest ? "pull" : "issues"}/${options.number}`,
    id: options.id,
    node_id: nodeId(options.pullRequest ? "PR" : "I", options.id),
    number: options.number,
    title: options.title,
    user: options.user,
    labels: [],
    state: options.state,
    locked: false,
    assignee: null,
    assignees: [],
    milestone: null,
    comments: options.comments,
    created_at: options.createdAt,
    updated_at: options.updatedAt,
    closed_at: options.closedAt,
    author_association: options.authorAssociation,
    active_lock_reason: null,
    body: options.body,
    state_reason: options.stateReason,
    ...(options.pullRequest
      ? {
          draft: false,
          pull_request: {
            url: `${API}/repos/${options.repo}/pulls/${options.number}`,
            html_url: `${WEB}/${options.repo}/pull/${options.number}`,
            diff_url: `${WEB}/${options.repo}/pull/${options.number}.diff`,
            patch_url: `${WEB}/${options.repo}/pull/${options.number}.patch`,
            merged_at: options.pullRequest.mergedAt,
          },
        }
      : {}),
  };
}

/** The links every pull request carries, in the listing and on its own. */
export function pullLinks(repo: string, number: number, headSha: string): Json {
  const url = `${API}/repos/${repo}/pulls/${number}`;
  const issue = `${API}/repos/${repo}/issues/${number}`;
  return {
    url,
    html_url: `${WEB}/${repo}/pull/${number}`,
    diff_url: `${WEB}/${repo}/pull/${number}.diff`,
    patch_url: `${WEB}/${repo}/pull/${number}.patch`,
    issue_url: issue,
    commits_url: `${url}/commits`,
    review_comments_url: `${url}/comments`,
    review_comment_url: `${API}/repos/${repo}/pulls/comments{/number}`,
    comments_url: `${issue}/comments`,
    statuses_url: `${API}/repos/${repo}/statuses/${headSha}`,
    _links: {
      self: { href: url },
      html: { href: `${WEB}/${repo}/pull/${number}` },
      issue: { href: issue },
      comments: { href: `${issue}/comments` },
      review_comments: { href: `${url}/comments` },
      review_comment: { href: `${API}/repos/${repo}/pulls/comments{/number}` },
      commits: { href: `${url}/commits` },
      statuses: { href: `${API}/repos/${repo}/statuses/${headSha}` },
    },
  };
}

/** The fields `pulls.get` has and `pulls.list` leaves out. */
export const PULL_ONLY_FIELDS = [
  "merged",
  "mergeable",
  "rebaseable",
  "mergeable_state",
  "merged_by",
  "comments",
  "review_comments",
  "maintainer_can_modify",
  "commits",
  "additions",
  "deletions",
  "changed_files",
] as const;

/** A commit as `pulls.listCommits` lists it. */
export function commitObject(
  repo: string,
  commit: {
    sha: string;
    message: string;
    authorName: string;
    authorEmail: string;
    committerName: string;
    committerEmail: string;
    date: string;
    tree: string;
    parents: string[];
    author: Json | null;
  },
): Json {
  return {
    sha: commit.sha,
    node_id: nodeId("C", parseInt(commit.sha.slice(0, 8), 16)),
    url: `${API}/repos/${repo}/commits/${commit.sha}`,
    html_url: `${WEB}/${repo}/commit/${commit.sha}`,
    comments_url: `${API}/repos/${repo}/commits/${commit.sha}/comments`,
    commit: {
      url: `${API}/repos/${repo}/git/commits/${commit.sha}`,
      author: { name: commit.authorName, email: commit.authorEmail, date: commit.date },
      committer: { name: commit.committerName, email: commit.committerEmail, date: commit.date },
      message: commit.message,
      tree: { sha: commit.tree, url: `${API}/repos/${repo}/git/trees/${commit.tree}` },
      comment_count: 0,
      verification: { verified: false, reason: "unsigned", signature: null, payload: null, verified_at: null },
    },
    author: commit.author,
    committer: commit.author,
    parents: commit.parents.map((sha) => ({ sha, url: `${API}/repos/${repo}/commits/${sha}`, html_url: `${WEB}/${repo}/commit/${sha}` })),
  };
}

/** A timeline event of the state-change family (closed, reopened, connected, merged, ...). */
export function stateEvent(options: {
  id: number;
  repo: string;
  event: string;
  actor: Json;
  commitId: string | null;
  createdAt: string;
  stateReason?: string | null;
}): Json {
  return {
    id: options.id,
    node_id: nodeId(`${options.event.slice(0, 2).toUpperCase()}E`, options.id),
    url: `${API}/repos/${options.repo}/issues/events/${options.id}`,
    actor: options.actor,
    event: options.event,
    commit_id: options.commitId,
    commit_url: options.commitId ? `${API}/repos/${options.repo}/commits/${options.commitId}` : null,
    created_at: options.createdAt,
    performed_via_github_app: null,
    ...(options.stateReason !== undefined ? { state_reason: options.stateReason } : {}),
  };
}

/** GitHub's error body: a message and where its documentation is. */
export function basicError(message: string, documentation: string, status?: number): Json {
  return { message, documentation_url: documentation, ...(status ? { status: String(status) } : {}) };
}
