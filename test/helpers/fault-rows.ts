import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { listTree } from "../../pipeline/atomic.ts";
import { demoCorpus } from "./demo-corpus.ts";
import { FakeGithub } from "../../demo/github-server.ts";
import { Project, type ProjectRun } from "../../pipeline/project/project.ts";
import { silentLogger } from "../../pipeline/logger.ts";
import { silentProgress } from "../../pipeline/progress.ts";
import { BUILT_STAGES } from "../../stages/index.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));

/** The pull requests every fault row mines: three that qualify and one regression (a cached reject). */
export const FAULT_PULLS = [3, 5, 9, 15];

/**
 * One fault row's pipeline: the demo's data copied into `base/<name>`, a config over four pull
 * requests of demo-org/geometry, outputs under `base/<name>/out`, and its own local GitHub API.
 * Every row's config differs from another's only in its API port, which no artifact records,
 * so a row's outputs can be compared byte for byte with a clean row's.
 */
export class FaultRow {
  readonly dir: string;
  readonly configPath: string;
  readonly workDir: string;
  server: FakeGithub;
  private port = 0;

  constructor(
    base: string,
    name: string,
    readonly corpusDir: string,
    private readonly executor: "local" | "docker",
    private readonly extra: { mine?: string; qualify?: string; select?: string } = {},
    private readonly pulls = FAULT_PULLS,
  ) {
    this.dir = join(base, name);
    this.configPath = join(this.dir, "demo", "pipeline.yaml");
    this.workDir = join(this.dir, "out", "work");
    this.server = new FakeGithub({ recordsDir: join(corpusDir, "github") });
  }

  async setUp(): Promise<this> {
    cpSync(join(root, "data", "demo"), join(this.dir, "demo"), { recursive: true });
    mkdirSync(join(this.dir, "audits"), { recursive: true });
    cpSync(join(root, "audits", "decisions.yaml"), join(this.dir, "audits", "decisions.yaml"));
    for (const name of ["demo-org__geometry.json", "demo-org__textkit.json", "demo-org__ledger.json"]) {
      const profile = join(this.dir, "demo", "repos", name);
      writeFileSync(
        profile,
        readFileSync(profile, "utf8").replace("../../../.switch-swe/demo-corpus", relative(join(this.dir, "demo", "repos"), this.corpusDir)),
      );
    }
    mkdirSync(this.workDir, { recursive: true });
    await this.startServer();
    return this;
  }

  /** Starts the local API again on the same port (after `server.stop()`), so the config stays the same. */
  async startServer(): Promise<void> {
    this.server = new FakeGithub({ recordsDir: join(this.corpusDir, "github") });
    this.port = Number(new URL(await this.server.start(this.port || undefined)).port);
    this.writeConfig();
  }

  writeConfig(extra: { mine?: string; qualify?: string; select?: string } = this.extra): void {
    writeFileSync(
      this.configPath,
      [
        "name: faults",
        "seed: 2026",
        "work_dir: ../out/work",
        "profiles_dir: repos",
        `execution: {${extra.qualify ?? `executor: ${this.executor}, jobs: 2, infrastructure_backoff_seconds: [0.2]`}}`,
        "stages:",
        "  mine:",
        "    github:",
        `      api_url: http://127.0.0.1:${this.port}`,
        `      repos: [{repo: demo-org/geometry, numbers: [${this.pulls.join(", ")}]}]`,
        "      wait_unit_ms: 1",
        ...(extra.mine ? [`      ${extra.mine}`] : []),
        "  split: {}",
        "  qualify: {runs: 2}",
        "  reconstruct: {curation_dir: curation}",
        "  audit: {decisions: ../audits/decisions.yaml, report_dir: ../out/audit}",
        "  oracle: {runs: 1}",
        `  select: {${extra.select ?? "near: 2, far: 2"}}`,
        "  emit: {out_dir: ../out/benchmark, heldout_dir: ../out/benchmark/heldout}",
        "",
      ].join("\n"),
    );
  }

  options(): ProjectRun {
    const { definition } = Project.open(this.configPath, { stages: BUILT_STAGES, log: silentLogger });
    return { ...definition, stages: BUILT_STAGES, log: silentLogger, progress: silentProgress };
  }

  /** Every artifact and every published file, by path: what must be byte-identical to a clean run. */
  outputs(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [label, dir] of [
      ["artifacts", join(this.workDir, "artifacts")],
      ["benchmark", join(this.dir, "out", "benchmark")],
      ["audit", join(this.dir, "out", "audit")],
    ] as const) {
      for (const path of listTree(dir)) out[`${label}/${path}`] = readFileSync(join(dir, path), "utf8");
    }
    return out;
  }
}

/** The demo corpus, built once under `base/corpus` for every row. */
export async function faultCorpus(base: string): Promise<string> {
  const corpusDir = join(base, "corpus");
  await demoCorpus(join(root, "data", "demo", "corpus.yaml"), corpusDir);
  return corpusDir;
}

/** A tmpfs of `size` mounted at `dir` (root only): a disk that fills up for real. */
export class SmallDisk {
  constructor(readonly dir: string) {}

  mount(size: string): this {
    mkdirSync(this.dir, { recursive: true });
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", this.dir]);
    return this;
  }

  /** The fault goes away: the same disk, larger, with whatever it holds. */
  grow(size: string): void {
    execFileSync("mount", ["-o", `remount,size=${size}`, this.dir]);
  }

  unmount(): void {
    if (existsSync(this.dir)) execFileSync("umount", ["-l", this.dir]);
  }
}

export const isRoot = process.getuid?.() === 0;
