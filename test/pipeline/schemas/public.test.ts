import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { checkSchemaFiles, PUBLIC_SCHEMAS } from "../../../pipeline/json-schemas.ts";
import { ManifestEntry } from "../../../pipeline/schemas/manifest.ts";
import { VerificationReport } from "../../../pipeline/schemas/verification.ts";
import { heldoutRecord, sessionOver, taskRecord } from "../../helpers/task-records.ts";

/**
 * The artifacts users in other languages read (session spec, manifest entry, held-out task,
 * verification report) are described twice: by the zod schemas the pipeline parses with, and by
 * the JSON Schemas committed under manifests/schema/. A reader validating with the JSON Schema
 * must accept what switch-swe writes and refuse what switch-swe would refuse.
 */
const SCHEMA_DIR = fileURLToPath(new URL("../../../manifests/schema/", import.meta.url));
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
const committed = (name: string) => ajv.compile(JSON.parse(readFileSync(join(SCHEMA_DIR, `${name}.schema.json`), "utf8")) as object);

const tasks = [1, 2].map((n) => taskRecord({ id: `o__r-${n}`, repo: "o/r", files: [`d${n}/m.py`], stages: n === 1 ? 2 : 1 }));
const session = sessionOver(tasks, {
  focus: "o__r-1",
  interruptions: ["o__r-2"],
  derived_checkouts: [{ task_id: "o__r-2", without: ["o__r-1"], commit: "b".repeat(40) }],
});
const task = tasks[0]!;
const manifest = ManifestEntry.parse({
  task_id: task.id,
  repo: "o/r",
  clone_url: "../mirrors/o__r.bundle",
  source: { kind: "swebench", ids: [task.id], urls: [] },
  base_commit: task.snapshot.base_commit,
  requests: task.requests,
  environment: task.snapshot.environment,
  tests: { fail_to_pass: task.verifier.fail_to_pass, pass_to_pass: task.verifier.pass_to_pass },
  source_files: task.source_files,
  source_dirs: task.source_dirs,
  requirement_tests: [{ test: task.verifier.fail_to_pass[0], stages: [1] }],
  validation: { passed: true, checks: [{ check: "projection", passed: true }] },
  roles: ["focus"],
});
const report = VerificationReport.parse({
  session_id: "session-o__r-1",
  task_id: task.id,
  condition: "switched",
  artifact_sha256: "c".repeat(64),
  dropped_paths: [{ path: "conftest.py", reason: "test_configuration" }],
  applied: true,
  tests: { [task.verifier.fail_to_pass[0]!]: "passed" },
  integrity_problems: [],
  timed_out: false,
  resolved: true,
  infrastructure_retries: 0,
});

type Edit = (value: any) => void;
/** Each public artifact: one as switch-swe writes it, and edits that break one field each. */
const CASES: [name: string, value: unknown, edits: [field: string, edit: Edit][]][] = [
  [
    "session-spec",
    session,
    [
      ["focus", (s) => (s.focus = "o-r-1")],
      ["locality", (s) => (s.locality = "middle")],
      ["checkouts.derived.commit", (s) => (s.checkouts.find((c: { derived?: unknown }) => c.derived).derived.commit = "b".repeat(12))],
      ["message: a key besides repository, checkout and text", (s) => (s.conditions.switched[0].message.label = "focus")],
      ["message.checkout", (s) => (s.conditions.control[0].message.checkout = "workspace/w00")],
      ["budget.per_request_seconds", (s) => (s.budget.per_request_seconds = 0)],
      ["a request's stage", (s) => (s.conditions.control[0].stage = 0)],
    ],
  ],
  [
    "manifest-entry",
    manifest,
    [
      ["base_commit", (m) => (m.base_commit = m.base_commit.toUpperCase())],
      ["roles", (m) => (m.roles = ["reviewer"])],
      ["source.kind", (m) => (m.source.kind = "gitlab")],
      ["environment: a field no recipe has", (m) => (m.environment.pins_extra = [])],
      ["requests.provenance.sources", (m) => (m.requests[0].provenance.sources = [])],
    ],
  ],
  [
    "heldout-task",
    heldoutRecord(task),
    [
      ["fail_to_pass", (h) => (h.fail_to_pass = [])],
      ["environment.test_runner", (h) => (h.environment.test_runner = "nose")],
      ["environment.requirements_files: a path leaving the checkout", (h) => (h.environment.requirements_files = ["../requirements.txt"])],
      ["environment.pip_requirements: a shell character", (h) => (h.environment.pip_requirements = ["pytest; rm -rf /"])],
      ["environment_as_of", (h) => delete h.environment_as_of],
      ["upstream.merge_commit", (h) => (h.upstream.merge_commit = "merge")],
    ],
  ],
  [
    "verification-report",
    report,
    [
      ["condition", (r) => (r.condition = "both")],
      ["artifact_sha256", (r) => (r.artifact_sha256 = "c".repeat(63))],
      ["infrastructure_retries", (r) => (r.infrastructure_retries = 3)],
      ["tests: a status", (r) => (r.tests[Object.keys(r.tests)[0]!] = "ok")],
      ["suspicious.rule", (r) => (r.suspicious = [{ rule: "looks_odd", path: null, line: null, detail: "" }])],
    ],
  ],
];

describe("the public artifacts' JSON Schemas", () => {
  it("are committed as the zod schemas export them, one for each public artifact", () => {
    expect(checkSchemaFiles(SCHEMA_DIR)).toEqual([]);
    expect(CASES.map(([name]) => name).sort()).toEqual(Object.keys(PUBLIC_SCHEMAS).sort());
  });

  it.each(CASES)("%s: the JSON Schema accepts what switch-swe writes and refuses, as zod does, each broken field", (name, value, edits) => {
    const schema: z.ZodType = PUBLIC_SCHEMAS[name]!;
    const validate = committed(name);
    expect(schema.safeParse(value).success).toBe(true);
    expect(validate(value), JSON.stringify(validate.errors)).toBe(true);
    for (const [field, edit] of edits) {
      const broken = structuredClone(value);
      edit(broken);
      expect(schema.safeParse(broken).success, `zod, ${field}`).toBe(false);
      expect(validate(broken), `JSON Schema, ${field}`).toBe(false);
    }
  });
});
