import { existsSync, readFileSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { parse } from "yaml";
import { z } from "zod";
import { writeFileAtomic } from "./atomic.ts";
import { canonicalJson, sha256 } from "./canonical.ts";
import { git } from "./git.ts";
import { RepoName } from "./schemas/common.ts";

const FileChange = z.union([
  z.string(),
  z.null(),
  z.strictObject({ rename_from: z.string() }),
  z.strictObject({ base64: z.string() }),
]);

const CorpusSpec = z.strictObject({
  repositories: z.array(
    z.strictObject({
      repo: RepoName,
      start: z.iso.datetime(),
      initial: z.record(z.string(), FileChange),
      pull_requests: z.array(
        z.strictObject({
          number: z.number().int().positive(),
          title: z.string(),
          body: z.string(),
          changes: z.record(z.string(), FileChange),
        }),
      ),
    }),
  ),
});
type CorpusSpec = z.infer<typeof CorpusSpec>;

export interface CorpusResult {
  dir: string;
  recordsFile: string;
  repositories: string[];
  records: number;
  /** False when an identical corpus was already there and nothing was rebuilt. */
  built: boolean;
}

const IDENTITY = { GIT_AUTHOR_NAME: "Demo Author", GIT_AUTHOR_EMAIL: "author@demo.invalid", GIT_COMMITTER_NAME: "Demo Maintainer", GIT_COMMITTER_EMAIL: "maintainer@demo.invalid" };

/**
 * Builds the demo corpus: real git repositories with a merged pull request per entry, and their
 * records in SWE-bench's JSONL format. Author and committer dates are fixed, so the same spec
 * always gives the same commit ids and byte-identical records.
 */
export async function buildDemoCorpus(specPath: string, outDir: string): Promise<CorpusResult> {
  const specText = readFileSync(specPath, "utf8");
  const parsed = CorpusSpec.safeParse(parse(specText));
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`${specPath}: field ${issue.path.join(".")}: ${issue.message}`);
  }
  const spec = parsed.data;
  const recordsFile = join(outDir, "records.jsonl");
  const stampFile = join(outDir, "corpus.sha256");
  const stamp = sha256(specText);
  const repositories = spec.repositories.map((r) => r.repo);
  if (existsSync(recordsFile) && existsSync(stampFile) && readFileSync(stampFile, "utf8").trim() === stamp) {
    const records = readFileSync(recordsFile, "utf8").split("\n").filter(Boolean).length;
    return { dir: outDir, recordsFile, repositories, records, built: false };
  }
  const lines: string[] = [];
  for (const repoSpec of spec.repositories) lines.push(...(await buildRepository(repoSpec, join(outDir, "repos"))));
  await writeFileAtomic(recordsFile, lines.join(""));
  await writeFileAtomic(stampFile, stamp + "\n");
  return { dir: outDir, recordsFile, repositories, records: lines.length, built: true };
}

export function demoRepoPath(outDir: string, repo: string): string {
  return join(outDir, "repos", repo.replace("/", "__"));
}

async function buildRepository(spec: CorpusSpec["repositories"][number], reposDir: string): Promise<string[]> {
  const dir = join(reposDir, spec.repo.replace("/", "__"));
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  let clock = Date.parse(spec.start);
  const tick = () => {
    clock += 3600_000;
    const date = new Date(clock).toISOString().replace(/\.\d{3}Z$/, "Z");
    return { ...IDENTITY, GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date };
  };
  const run = (args: string[], env: Record<string, string> = {}) => git(args, { cwd: dir, env });
  await run(["init", "--quiet", "--initial-branch=main"]);
  await applyChanges(dir, spec.initial);
  await run(["add", "--all"]);
  await run(["commit", "--quiet", "--no-gpg-sign", "-m", "Initial commit"], tick());

  const records: string[] = [];
  for (const pr of spec.pull_requests) {
    const base = (await run(["rev-parse", "HEAD"])).trim();
    await run(["checkout", "--quiet", "-b", `pr-${pr.number}`]);
    await applyChanges(dir, pr.changes);
    await run(["add", "--all"]);
    const createdEnv = tick();
    await run(["commit", "--quiet", "--no-gpg-sign", "-m", pr.title], createdEnv);
    const head = (await run(["rev-parse", "HEAD"])).trim();
    await run(["checkout", "--quiet", "main"]);
    await run(["merge", "--quiet", "--no-ff", "--no-gpg-sign", "-m", `Merge pull request #${pr.number}\n\n${pr.title}`, `pr-${pr.number}`], tick());
    const diff = await run(["diff", "--binary", "--full-index", "-M", base, head]);
    const [patch, testPatch] = swebenchStyleSplit(diff);
    records.push(
      canonicalJson({
        instance_id: `${spec.repo.replace("/", "__")}-${pr.number}`,
        repo: spec.repo,
        base_commit: base,
        patch,
        test_patch: testPatch,
        problem_statement: `${pr.title}\n\n${pr.body}\n`,
        created_at: createdEnv.GIT_AUTHOR_DATE,
        version: "0.1",
        environment_setup_commit: base,
        FAIL_TO_PASS: "[]",
        PASS_TO_PASS: "[]",
      }) + "\n",
    );
  }
  return records;
}

/** Splits the way SWE-bench's records do (anything under tests/ is the test patch), so mine gets realistic input. */
function swebenchStyleSplit(diff: string): [string, string] {
  const sections = diff.split(/^(?=diff --git )/m).filter(Boolean);
  const isTest = (section: string) => / b\/tests\//.test(section.split("\n")[0]!);
  return [sections.filter((s) => !isTest(s)).join(""), sections.filter(isTest).join("")];
}

async function applyChanges(dir: string, changes: Record<string, z.infer<typeof FileChange>>): Promise<void> {
  for (const [path, change] of Object.entries(changes)) {
    const target = join(dir, path);
    if (change === null) await git(["rm", "--quiet", path], { cwd: dir });
    else if (typeof change === "string") {
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, change);
    } else if ("rename_from" in change) {
      await mkdir(dirname(target), { recursive: true });
      await git(["mv", change.rename_from, path], { cwd: dir });
    } else {
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, Buffer.from(change.base64, "base64"));
    }
  }
}
