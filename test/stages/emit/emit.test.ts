import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { parse as parseCsv } from "csv-parse/sync";
import { describe, expect, it } from "vitest";
import { formatSummary } from "../../../pipeline/engine/engine.ts";
import { renderSchemaFiles } from "../../../pipeline/json-schemas.ts";
import { LocalityIndex } from "../../../pipeline/locality.ts";
import { ManifestEntry } from "../../../pipeline/schemas/manifest.ts";
import { SessionIndex, SessionSpec } from "../../../pipeline/schemas/session.ts";
import { emitStage } from "../../../stages/emit/index.ts";
import { runStageOver, type GivenArtifacts } from "../../helpers/given-artifacts.ts";
import { heldoutRecord, sessionOver, taskRecord } from "../../helpers/task-records.ts";
import { tempDir } from "../../helpers/tmp.ts";

/**
 * The emit stage over validate's sessions and the tasks' records (SPEC §2.10): what it writes and
 * what it joins. Seven tasks of o/r, each in a directory of its own; two sessions use six of them
 * (o__r-1 and o__r-2 each a focus and the other's interruption), o__r-7 none.
 */
const tasks = Array.from({ length: 7 }, (_, i) => taskRecord({ id: `o__r-${i + 1}`, repo: "o/r", files: [`d${i + 1}/m.py`], stages: i < 2 ? 3 : 2 }));
const byId = new Map(tasks.map((t) => [t.id, t]));

const session = (focus: number, interruptions: number[]) =>
  sessionOver(tasks, { focus: `o__r-${focus}`, interruptions: interruptions.map((n) => `o__r-${n}`) });

const specs = [session(1, [2, 3, 4, 5]), session(2, [1, 3, 4, 6])];
const checks = (names: string[], failed: string[] = []) => names.map((check) => ({ check, passed: !failed.includes(check) }));
const API = "http://127.0.0.1:1/repos/o/r/pulls/1";
const ISSUE = "https://github.com/o/r/issues/40";

const GIVEN: GivenArtifacts = {
  validate: {
    sessions: specs,
    reports: [
      { session_id: specs[0]!.session_id, passed: true, checks: checks(["projection", "locality"]), interruption_answers: [] },
      { session_id: specs[1]!.session_id, passed: true, checks: checks(["projection", "layout"]), interruption_answers: [] },
    ],
  },
  oracle: { tasks, heldout: tasks.map(heldoutRecord) },
  audit: {
    records: [
      {
        task_id: "o__r-1",
        source: "repository",
        severity: 0,
        signals: { reference_lines: 0, open_sentences: 0, test_calls: 0, leaked_names: 0, tests_added: 1, shared_names: 0 },
        links: [{ test: "tests/test_1.py::test_new", stages: [1, 3], evidence: [{ stage: 1, token: "new" }] }],
        flags: [],
      },
    ],
  },
  mine: {
    candidates: [
      {
        id: "o__r-1",
        repo: "o/r",
        pull_number: 1,
        base_commit: "a".repeat(40),
        created_at: "2024-01-01T00:00:00Z",
        source: { kind: "github", api_url: API },
        reference_diff: "diff --git a/d1/m.py b/d1/m.py\n",
        issues: [{ repo: "o/r", number: 40, url: ISSUE, title: "t", body: "b", author: "u", created_at: "2024-01-01T00:00:00Z", linked_by: "pr_body_keyword" }],
      },
    ],
  },
  locality: { pairs: [...new LocalityIndex(tasks.map((t) => ({ id: t.id, repo: "o/r", sourceFiles: t.source_files, sourceDirs: t.source_dirs }))).pairs()] },
};

/** A project whose profile of o/r names a local bundle beside it; the benchmark emitted to `out`. */
async function emit(dir: string, config: { out_dir: string; heldout_dir: string }, given: GivenArtifacts = GIVEN) {
  mkdirSync(join(dir, "data", "repos"), { recursive: true });
  writeFileSync(
    join(dir, "data", "repos", "o__r.json"),
    JSON.stringify({ repo: "o/r", clone_url: "../../mirrors/o__r.bundle", classification: { package_roots: [] }, environment: { python: "3.11" } }),
  );
  const run = await runStageOver(emitStage, given, { dir, config, settings: { profiles_dir: "data/repos" } });
  expect(run.summary.ok, formatSummary(run.summary)).toBe(true);
  return run;
}

/** Every file under `dir`, by its path inside it. */
function filesUnder(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else out[relative(dir, path)] = readFileSync(path, "utf8");
    }
  };
  walk(dir);
  return out;
}

const csv = (text: string) => parseCsv(text, { columns: true }) as Record<string, string>[];

describe("emit", () => {
  it("writes one manifest line for each task a session uses, joined from the oracle, the audit, mine and validate", async () => {
    const dir = tempDir();
    const { read } = await emit(dir, { out_dir: "out", heldout_dir: "out/heldout" });
    const manifest = readFileSync(join(dir, "out", "manifest.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => ManifestEntry.parse(JSON.parse(l)));
    expect(manifest.map((m) => m.task_id)).toEqual(["o__r-1", "o__r-2", "o__r-3", "o__r-4", "o__r-5", "o__r-6"]);
    expect(read("emit", "manifest")).toEqual(manifest);
    const [first, second] = manifest;
    expect(first).toMatchObject({
      roles: ["focus", "interruption"],
      // Where to clone from: the profile's bundle, relative to the manifest's directory.
      clone_url: "../mirrors/o__r.bundle",
      source: { kind: "github", ids: ["o__r-1", "o/r#40"], urls: [API, ISSUE] },
      requirement_tests: [{ test: "tests/test_1.py::test_new", stages: [1, 3] }],
      // The checks of both sessions it is in, each name once.
      validation: { passed: true, checks: checks(["projection", "locality", "layout"]) },
      requests: byId.get("o__r-1")!.requests,
      tests: { fail_to_pass: ["tests/test_1.py::test_new"], pass_to_pass: ["tests/test_1.py::test_old"] },
    });
    expect(second).toMatchObject({ source: { kind: "swebench", ids: ["o__r-2"], urls: [] }, requirement_tests: [] });
    expect(manifest.find((m) => m.task_id === "o__r-5")!.roles).toEqual(["interruption"]);
    expect(manifest.find((m) => m.task_id === "o__r-5")!.validation.checks.map((c) => c.check)).toEqual(["projection", "locality"]);
  });

  it("writes each session and their list, cloned from a path relative to the sessions' directory", async () => {
    const dir = tempDir();
    await emit(dir, { out_dir: "out", heldout_dir: "out/heldout" });
    const index = SessionIndex.parse(JSON.parse(readFileSync(join(dir, "out", "sessions", "index.json"), "utf8")));
    expect(index).toEqual({
      benchmark: "benchmark",
      sessions: specs.map((s) => ({ session_id: s.session_id, file: `${s.session_id}.json`, focus: s.focus, locality: "far" })),
    });
    for (const spec of specs) {
      const written = SessionSpec.parse(JSON.parse(readFileSync(join(dir, "out", "sessions", `${spec.session_id}.json`), "utf8")));
      expect(written).toEqual({ ...spec, clone_url: "../../mirrors/o__r.bundle" });
    }
  });

  it("writes the tables: the sessions with their figures, the tasks, the requests of both conditions, and only the pairs of used tasks", async () => {
    const dir = tempDir();
    await emit(dir, { out_dir: "out", heldout_dir: "out/heldout" });
    const table = (name: string) => csv(readFileSync(join(dir, "out", "tables", `${name}.csv`), "utf8"));
    const sessions = table("sessions");
    expect(sessions.map((s) => [s.session_id, s.focus, s.interruptions])).toEqual([
      ["session-o__r-1", "o__r-1", "o__r-2 o__r-3 o__r-4 o__r-5"],
      ["session-o__r-2", "o__r-2", "o__r-1 o__r-3 o__r-4 o__r-6"],
    ]);
    expect(sessions[0]).toMatchObject({
      focus_checkout: specs[0]!.checkouts.find((c) => c.task_id === "o__r-1")!.path,
      control_requests: "4",
      requests: String(specs[0]!.conditions.switched.length),
    });
    expect(table("tasks").map((t) => [t.task_id, t.roles, t.stages])).toEqual([
      ["o__r-1", "focus interruption", "3"],
      ["o__r-2", "focus interruption", "3"],
      ["o__r-3", "interruption", "2"],
      ["o__r-4", "interruption", "2"],
      ["o__r-5", "interruption", "2"],
      ["o__r-6", "interruption", "2"],
    ]);
    const requests = table("requests");
    expect(requests).toHaveLength(specs.reduce((n, s) => n + s.conditions.control.length + s.conditions.switched.length, 0));
    const control = requests.filter((r) => r.session_id === "session-o__r-1" && r.condition === "control");
    expect(control.map((r) => [r.position, r.task_id, r.stage, r.finalization])).toEqual([
      // csv-stringify's booleans: "1" and empty.
      ["1", "o__r-1", "1", ""],
      ["2", "o__r-1", "2", ""],
      ["3", "o__r-1", "3", ""],
      ["4", "o__r-1", "", "1"],
    ]);
    const pairs = table("locality_pairs");
    // 15 pairs among the six used tasks; none with o__r-7.
    expect(pairs).toHaveLength(15);
    expect(pairs.every((p) => p.task_a !== "o__r-7" && p.task_b !== "o__r-7" && p.class === "far")).toBe(true);
  });

  it("keeps the held-out assets of the used tasks apart when told to, and publishes the schemas and the profile", async () => {
    const dir = tempDir();
    await emit(dir, { out_dir: "out", heldout_dir: "heldout" });
    expect(
      readdirSync(join(dir, "heldout"))
        .filter((f) => !f.startsWith("."))
        .sort(),
    ).toEqual(["o__r-1", "o__r-2", "o__r-3", "o__r-4", "o__r-5", "o__r-6"].map((id) => `${id}.json`));
    expect(JSON.parse(readFileSync(join(dir, "heldout", "o__r-3.json"), "utf8"))).toEqual(heldoutRecord(byId.get("o__r-3")!));
    const released = filesUnder(join(dir, "out"));
    // Nothing an agent is shown holds a reference patch.
    expect(Object.keys(released).filter((p) => p.startsWith("heldout/") || released[p]!.includes("diff --git a/d"))).toEqual([]);
    for (const [name, text] of renderSchemaFiles()) expect(released[`schema/${name}`]).toBe(text);
    expect(JSON.parse(released["profile.json"]!)).toEqual({
      focus_tasks: 2,
      repositories: 1,
      interruptions_per_session: 4,
      median_requests: expect.any(Number),
      median_workspace_switches: expect.any(Number),
      median_focus_returns: expect.any(Number),
      sessions: { near: 0, far: 2 },
    });
    expect(csv(released["profile.csv"]!)).toEqual([expect.objectContaining({ focus_tasks: "2", near_sessions: "0", far_sessions: "2" })]);
  });

  it("writes the same bytes in another directory, and replaces what an earlier run published", async () => {
    const [a, b] = [tempDir(), tempDir()];
    await emit(a, { out_dir: "out", heldout_dir: "out/heldout" });
    await emit(b, { out_dir: "out", heldout_dir: "out/heldout" });
    const first = filesUnder(join(a, "out"));
    expect(filesUnder(join(b, "out"))).toEqual(first);
    expect(first["heldout/o__r-1.json"]).toBeDefined();
    // One session fewer: its own focus's held-out file and session file are gone, nothing of the earlier run is left.
    await emit(a, { out_dir: "out", heldout_dir: "out/heldout" }, { ...GIVEN, validate: { sessions: [specs[0]], reports: [GIVEN.validate!.reports![0]!] } });
    const again = filesUnder(join(a, "out"));
    expect(again["sessions/session-o__r-2.json"]).toBeUndefined();
    expect(again["heldout/o__r-6.json"]).toBeUndefined();
    expect(existsSync(join(a, "out", "heldout", "o__r-5.json"))).toBe(true);
  });
});
