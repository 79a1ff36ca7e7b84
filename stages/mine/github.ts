import { RecordError } from "../../pipeline/engine/stage.ts";
import { Candidate } from "../../pipeline/schemas/candidate.ts";
import { candidateId, goneStatus, isForbidden, type MinePullOptions, ownerAndName, type PullRequest, type PullSummary } from "./github-api.ts";
import { minePullHistory } from "./history.ts";
import { referenceChange } from "./reference-change.ts";

/**
 * The miner's two entrances for one pull request: a listed merged PR mined into a candidate, and
 * a SWE-bench-family record given its PR's history. The rooms they use: listing.ts (which PRs),
 * reference-change.ts (the change, from git), history.ts (commits, files, discussion, completed
 * from git where GitHub's lists stop), linking.ts (which issues, one function per way of finding
 * them) and issues.ts (the linked issues and their comments).
 */

/** Mines one merged pull request into a candidate: the reference change from git, and its history. */
export async function minePull(options: MinePullOptions, pull: PullSummary): Promise<Candidate> {
  const id = candidateId(pull.repo, pull.number);
  const pr = pull.pull;
  if (!pr.merged_at) throw new RecordError("not_merged", `${id}: pull request ${pull.repo}#${pull.number} is not merged`, { field: "merged_at" });
  const change = await referenceChange(options, pull, id);
  const history = await minePullHistory(options, pull, change);
  return Candidate.parse({
    id,
    repo: pull.repo,
    pull_number: pull.number,
    base_commit: change.base,
    created_at: pr.created_at,
    source: { kind: "github", api_url: history.pull_request.url },
    reference_diff: change.diff,
    issues: history.issues,
    notes: [...change.notes, ...history.notes],
    pull_request: history.pull_request,
  });
}

/** The record as it is, with a note saying why it was not enriched. */
const notEnriched = (candidate: Candidate, why: string) => Candidate.parse({ ...candidate, notes: [...candidate.notes, `not enriched: ${why}`] });

/**
 * A SWE-bench-family record with its pull request's history from GitHub (discussion, review
 * rounds, linked issues), so reconstruct gives it the requests a mined pull request gets. Its base
 * revision, patches, tests and problem statement stay the record's own. A pull request GitHub
 * does not have, refuses this token, or that was not merged, leaves the record as it is, with a
 * note saying why.
 */
export async function enrichRecord(options: MinePullOptions, candidate: Candidate): Promise<Candidate> {
  if (!candidate.pull_number) return notEnriched(candidate, "the record names no pull request");
  const where = `${candidate.repo}#${candidate.pull_number}`;
  let pr: PullRequest;
  try {
    pr = (await options.octokit.rest.pulls.get({ ...ownerAndName(candidate.repo), pull_number: candidate.pull_number })).data;
  } catch (error) {
    if (isForbidden(error)) return notEnriched(candidate, `${where}: ${error.message}`);
    const status = goneStatus(error);
    if (!status) throw error;
    return notEnriched(candidate, `GitHub has no pull request ${where} (${status})`);
  }
  if (!pr.merged_at) return notEnriched(candidate, `${where} was not merged`);
  let history;
  try {
    history = await minePullHistory(options, { repo: candidate.repo, number: candidate.pull_number, pull: pr });
  } catch (error) {
    // The pull request is readable but part of its history is not (an issues permission missing): the record stands on its own.
    if (error instanceof RecordError && error.reason === "forbidden") return notEnriched(candidate, error.message);
    throw error;
  }
  return Candidate.parse({
    ...candidate,
    issues: history.issues,
    pull_request: history.pull_request,
    notes: [
      ...candidate.notes,
      ...history.notes,
      `enriched from GitHub: ${history.pull_request.discussion.length} discussion item(s) (review rounds become requests after the first), ${history.issues.length} linked issue(s) (${
        history.issues.map((i) => `${i.repo}#${i.number}`).join(", ") || "none"
      }: provenance of stage 1 only); stage 1 stays the record's own problem statement`,
    ],
  });
}
