import { z } from "zod";
import { Candidate } from "../../pipeline/schemas/candidate.ts";
import { RepoName } from "../../pipeline/schemas/common.ts";
import { defineStage, RecordError } from "../../pipeline/engine/stage.ts";
import { DEFAULT_TIMEOUT_SECONDS, type GithubClient } from "../../pipeline/github-client.ts";
import { redact } from "../../pipeline/github-plugins.ts";
import { transientCause, TransientFailure } from "../../pipeline/failures.ts";
import { candidateId, isForbidden, isNotFound, type PullSummary } from "./github-api.ts";
import { enrichRecord, minePull } from "./github.ts";
import { listMergedPulls } from "./listing.ts";
import { importSwebench } from "./swebench.ts";

const DateString = z.string().refine((s) => !Number.isNaN(Date.parse(s)), "expected a date such as 2024-01-31");

/**
 * A SWE-bench-family file (JSON or JSONL, relative to the config file), whole, or only the records
 * of some repositories or instance ids: a benchmark built from part of a published split names
 * the split's own file rather than a copy cut from it.
 */
const SwebenchSource = z.union([
  z.string().min(1),
  z.strictObject({
    file: z.string().min(1),
    repos: z.array(RepoName).min(1).optional(),
    instances: z.array(z.string().min(1)).min(1).optional(),
  }),
]);
export type SwebenchSource = z.infer<typeof SwebenchSource>;

/** Whether a source takes a record of this id and repository. */
function selects(source: SwebenchSource, candidate: Candidate): boolean {
  if (typeof source === "string") return true;
  return (!source.repos || source.repos.includes(candidate.repo)) && (!source.instances || source.instances.includes(candidate.id));
}

export const MineConfig = z.strictObject({
  /** SWE-bench-family files, whole or in part. */
  swebench: z.array(SwebenchSource).default([]),
  github: z
    .strictObject({
      api_url: z.string().url().default("https://api.github.com"),
      repos: z
        .array(
          z.strictObject({
            repo: RepoName,
            since: DateString.optional(),
            until: DateString.optional(),
            numbers: z.array(z.number().int().positive()).optional(),
          }),
        )
        .default([]),
      /**
       * Give each SWE-bench-family record its pull request's history from GitHub (discussion,
       * review rounds, linked issues), so it gets the requests a mined pull request gets. `auto`:
       * when a token is given (or the run replays a recording); `off`: the records keep their
       * problem statement alone.
       */
      enrich_swebench: z.enum(["auto", "off"]).default("auto"),
      /** Mine from the recorded HTTP cache alone, with no request sent. */
      offline: z.boolean().default(false),
      token_file: z.string().optional(),
      concurrency: z.number().int().positive().default(4),
      /** Milliseconds per second of retry backoff after a failure (rate-limit waits follow GitHub's reset times). */
      wait_unit_ms: z.number().int().positive().default(1000),
      /** Seconds to wait after a secondary rate limit that came without Retry-After; GitHub asks for at least 60. */
      secondary_wait_seconds: z.number().int().positive().default(60),
      /**
       * Ask GitHub's GraphQL API for each PR's closing references (the sidebar's links included).
       * `auto`: when a token is given, as GraphQL refuses anonymous requests; `off`: REST only.
       */
      graphql: z.enum(["auto", "off"]).default("auto"),
      /** Milliseconds between GraphQL queries: GitHub asks a second between POST requests. */
      graphql_spacing_ms: z.number().int().nonnegative().default(1000),
      /**
       * Seconds a request may wait for GitHub's answer, and then for its whole body. Three requests
       * in a row without an answer stop the stage: the API is taken as hung.
       */
      timeout_seconds: z.number().positive().default(DEFAULT_TIMEOUT_SECONDS),
    })
    .optional(),
});
export type MineConfig = z.infer<typeof MineConfig>;

export const mineStage = defineStage({
  name: "mine",
  summary: "collect candidates from SWE-bench-family record files and from merged pull requests on GitHub",
  example: "switch-swe mine --config data/demo/pipeline.yaml   |   GITHUB_TOKEN=... switch-swe mine --config mine.yaml --offline",
  version: "3",
  module: import.meta.url,
  configSchema: MineConfig,
  // A record's result depends on where it is asked and how, never on which other records are
  // listed, how many go at once or how long waits are.
  recordConfig: (config) => ({
    api_url: config.github?.api_url ?? null,
    enrich_swebench: config.github?.enrich_swebench ?? null,
    graphql: config.github?.graphql ?? null,
  }),
  // Profiles give each repository's clone_url; without one, GitHub's clone URL is used.
  settings: ["profiles"],
  inputs: {},
  outputs: [{ name: "candidates", schema: Candidate, key: (c: Candidate) => c.id }],
  externalFiles: (config) => config.swebench.map((source) => (typeof source === "string" ? source : source.file)),
  flags: [
    { flag: "--offline", description: "mine GitHub from the recorded HTTP cache only", key: "github.offline" },
    { flag: "--token-file <file>", description: "read the GitHub token from this file instead of GITHUB_TOKEN", key: "github.token_file" },
  ],
  async run(ctx) {
    const seen = new Map<string, string>();
    const candidates: Candidate[] = [];
    const keep: Keep = (candidate, where) => {
      const first = seen.get(candidate.id);
      if (first) {
        ctx.reject({
          record_id: candidate.id,
          reason: "duplicate_record",
          message: `${where}: record ${candidate.id} was already read from ${first}; the first one is kept`,
          field: "instance_id",
        });
        return;
      }
      seen.set(candidate.id, where);
      candidates.push(candidate);
    };
    const imported: Candidate[] = [];
    for (const source of ctx.config.swebench) {
      const path = typeof source === "string" ? source : source.file;
      const file = ctx.files.find((f) => f.path === path)!;
      const result = importSwebench(file.path, file.text, file.invalid, file.bytes);
      const taken = result.candidates.filter((c) => selects(source, c));
      for (const reject of result.rejects) ctx.reject(reject);
      if (typeof source !== "string") {
        for (const id of source.instances ?? [])
          if (!taken.some((c) => c.id === id) && !result.rejects.some((r) => r.record_id === id))
            ctx.reject({ record_id: id, reason: "not_found", message: `${file.path}: no record ${id} (named in stages.mine.swebench)`, field: "instances" });
        ctx.log.info(`${file.path}: ${taken.length} of ${result.candidates.length} record(s) taken`);
      }
      imported.push(...taken);
    }
    const github = githubMining(ctx);
    // SWE-bench-family records, with their pull requests' history where GitHub can give it.
    for (const candidate of imported)
      keep(candidate, candidate.source.kind === "swebench" ? `${candidate.source.file} line ${candidate.source.line}` : candidate.id);
    const swebench = candidates.splice(0, candidates.length);
    candidates.push(...(await withHistories(ctx, swebench, github)));
    if (github) await mineRepositories(ctx, github, keep);
    return { candidates };
  },
});

type MineContext = Parameters<typeof mineStage.run>[0];
type Keep = (candidate: Candidate, where: string) => void;

/** What mining GitHub needs: the client, the options of minePull, and how its failures are reported. */
interface GithubMining {
  settings: NonNullable<MineConfig["github"]>;
  client: ReturnType<MineContext["github"]>;
  options: Parameters<typeof minePull>[0];
  useGraphql: boolean;
  cloneSource: (repo: string) => string;
  asTransient: (error: unknown) => never;
}

function githubMining(ctx: MineContext): GithubMining | undefined {
  const gh = ctx.config.github;
  if (!gh) return undefined;
  const client = ctx.github({
    baseUrl: gh.api_url,
    offline: gh.offline,
    tokenFile: gh.token_file,
    waitUnitMs: gh.wait_unit_ms,
    secondaryFallbackSeconds: gh.secondary_wait_seconds,
    timeoutSeconds: gh.timeout_seconds,
    graphqlSpacingMs: gh.graphql_spacing_ms,
  });
  const cloneSource = (repo: string) => ctx.resources.cloneSource(repo);
  const useGraphql = gh.graphql === "auto" && client.token !== undefined;
  const asTransient = (error: unknown): never => {
    if (error instanceof RecordError) throw error;
    // Anything else (exhausted retries, a broken recording) must not leak the token, and keeps
    // its kind: an unreachable API is transient, not a bug.
    const message = redact((error as Error).message, client.token);
    // GitHub refusing this token something is a fact about the token, not a moment's failure.
    if (isForbidden(error)) throw new RecordError("forbidden", message);
    // A transient failure keeps its class: GithubUnreachable stops the stage at once (RunAbort).
    if (error instanceof TransientFailure) {
      error.message = message;
      throw error;
    }
    throw transientCause(error) !== undefined ? new TransientFailure(message) : new Error(message);
  };
  return {
    settings: gh,
    client,
    options: { octokit: client.octokit, graphql: useGraphql ? client.graphql : undefined, mirrors: ctx.mirrors, cloneSource },
    useGraphql,
    cloneSource,
    asTransient,
  };
}

/** The SWE-bench-family records, each enriched with its pull request's history when GitHub is asked (enrich_swebench) and can be. */
async function withHistories(ctx: MineContext, swebench: Candidate[], github: GithubMining | undefined): Promise<Candidate[]> {
  const gh = github?.settings;
  const enrich = Boolean(github && gh!.enrich_swebench === "auto" && (github.client.token !== undefined || gh!.offline));
  if (gh && gh.enrich_swebench === "auto" && !enrich && swebench.length) {
    ctx.log.warn(
      `${swebench.length} SWE-bench-family record(s) not enriched from GitHub: no token (their pull requests' reviews would cost ${swebench.length * 8} requests or so of the 60 an hour GitHub allows without one); each keeps its problem statement as its one request`,
    );
  }
  if (!enrich) {
    await ctx.mapRecords(swebench, { id: (c) => c.id, cache: false, work: () => undefined });
    return swebench;
  }
  const enriched = await ctx.mapRecords(swebench, {
    id: (c) => c.id,
    concurrency: gh!.concurrency,
    dependsOn: (c) => ({ record: c, api: gh!.api_url, graphql: github!.useGraphql }),
    work: (c) => enrichRecord(github!.options, c).catch(github!.asTransient),
  });
  const left = enriched.filter((c) => c.notes.some((n) => n.startsWith("not enriched")));
  // No SWE-bench-family file, nothing to say ("0 of 0 … enriched" says nothing).
  if (!swebench.length) return enriched;
  ctx.log.info(
    `${enriched.length - left.length} of ${swebench.length} SWE-bench-family record(s) enriched from GitHub${
      left.length
        ? `; ${left.length} not (${left
            .map((c) => c.id)
            .slice(0, 5)
            .join(", ")}${left.length > 5 ? ", …" : ""}: see each candidate's notes)`
        : ""
    }`,
  );
  return enriched;
}

/** The merged pull requests of the repositories the config names, each mined into a candidate. */
async function mineRepositories(ctx: MineContext, github: GithubMining, keep: Keep): Promise<void> {
  const gh = github.settings;
  const { octokit, counts, token } = github.client;
  if (gh.graphql === "auto" && !github.useGraphql && gh.repos.length) {
    ctx.log.warn(
      "no GitHub token: GitHub's GraphQL API (closing references, sidebar links) needs one, so issues are linked by closing keywords and commit closings only, and REST allows 60 requests an hour",
    );
  }
  const pulls = await listTargets(ctx, gh.repos, octokit, token);
  const mined = await ctx.mapRecords(pulls, {
    id: (p) => candidateId(p.repo, p.number),
    concurrency: gh.concurrency,
    dependsOn: (p) => ({ clone: github.cloneSource(p.repo), graphql: github.useGraphql }),
    work: (pull) => minePull(github.options, pull).catch(github.asTransient),
  });
  for (const candidate of mined) keep(candidate, candidate.source.kind === "github" ? candidate.source.api_url : candidate.id);
  ctx.log.info(
    `GitHub requests sent (each attempt of a retried one counted): REST ${counts.unconditional + counts.conditional} (${counts.conditional} conditional, ${counts.notModified} of them answered 304 Not Modified); GraphQL ${counts.graphql} (${counts.graphqlReused} answers reused unsent); ${counts.replayed} answered from the recording unsent`,
  );
}

/**
 * The merged pull requests of every repository the config names (a window or numbers): numbers
 * GitHub lacks or that were never merged are rejected with why; a repository that does not exist
 * is a result, an unreachable or failing API is not.
 */
async function listTargets(
  ctx: MineContext,
  targets: NonNullable<MineConfig["github"]>["repos"],
  octokit: GithubClient,
  token: string | undefined,
): Promise<PullSummary[]> {
  const pulls: PullSummary[] = [];
  for (const target of targets) {
    try {
      const listed = await listMergedPulls(octokit, target);
      pulls.push(...listed.pulls);
      for (const { number, status } of listed.missing) {
        ctx.reject({
          record_id: candidateId(target.repo, number),
          reason: "not_found",
          message: `${target.repo}#${number}: ${status === 410 ? "the pull request was deleted (410 Gone)" : "no such pull request (404)"}`,
          field: "numbers",
        });
      }
      for (const { number, message } of listed.forbidden) {
        ctx.reject({
          record_id: candidateId(target.repo, number),
          reason: "forbidden",
          message: redact(`${target.repo}#${number}: ${message}; the pull request is not mined (once the token may read it, run again with --force)`, token),
          field: "numbers",
        });
      }
      for (const { number, state } of listed.unmerged) {
        ctx.reject({
          record_id: candidateId(target.repo, number),
          reason: "not_merged",
          message: `${target.repo}#${number}: the pull request is ${state === "open" ? "still open" : "closed without being merged"}, so it has no reference change`,
          field: "numbers",
        });
      }
      if (!target.numbers?.length)
        ctx.log.info(
          `${target.repo}: ${listed.pulls.length} merged pull request(s) created in ${target.since ?? "the beginning"} .. ${target.until ?? "now"}, from ${listed.pages} page(s) of the list`,
        );
    } catch (error) {
      if (isForbidden(error)) {
        // The list itself refused: the whole target stops, said once; the other targets are mined.
        ctx.reject({
          record_id: target.repo,
          reason: "forbidden",
          message: redact(
            `${target.repo}: its pull requests are not listed: ${error.message}; nothing of ${target.repo} is mined (once the token may read it, run again with --force)`,
            token,
          ),
          field: "repo",
        });
        continue;
      }
      const reason = isNotFound(error) ? "not_found" : transientCause(error) !== undefined ? "transient_failure" : "internal_error";
      ctx.reject({
        record_id: target.repo,
        reason,
        message: redact(`${target.repo}: could not list pull requests: ${(error as Error).message}`, token),
        field: "repo",
      });
    }
  }
  return pulls;
}
