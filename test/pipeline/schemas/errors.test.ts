import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readProfile } from "../../../pipeline/profiles/load.ts";
import { readListedSessions } from "../../../pipeline/project/listed-sessions.ts";
import { HeldoutTask } from "../../../pipeline/schemas/heldout.ts";
import { SessionSpec } from "../../../pipeline/schemas/session.ts";
import { InputError, readJsonFile } from "../../../pipeline/validation.ts";
import { heldoutRecord, sessionOver, taskRecord } from "../../helpers/task-records.ts";
import { tempDir } from "../../helpers/tmp.ts";

/**
 * The schemas as a user meets them: a file they wrote or edited (a session specification checked
 * by `session check`, a held-out task, a benchmark's list of sessions, a repository profile) with
 * one bad field is refused with the file, the field and what was expected, in the schema's words.
 */
const tasks = [1, 2].map((n) => taskRecord({ id: `o__r-${n}`, repo: "o/r", files: [`d${n}/m.py`], stages: n === 1 ? 2 : 1 }));
const SPEC = sessionOver(tasks, {
  focus: "o__r-1",
  interruptions: ["o__r-2"],
  derived_checkouts: [{ task_id: "o__r-2", without: ["o__r-1"], commit: "b".repeat(40) }],
});
const AS_SESSION_CHECK_READS = "a session specification (manifests/<benchmark>/sessions/<session>.json)";

/** `value` edited by `edit`, written as JSON to a file of its own; its path. */
function written(value: unknown, edit: (v: any) => void = () => {}): string {
  const copy = structuredClone(value);
  edit(copy);
  const file = join(tempDir(), "file.json");
  writeFileSync(file, JSON.stringify(copy, null, 2));
  return file;
}

/** The message of what `read` throws, which must be an input error (the CLI prints it on one line, exit 2). */
function refusal(read: () => unknown): string {
  try {
    read();
  } catch (error) {
    expect(error).toBeInstanceOf(InputError);
    return (error as Error).message;
  }
  throw new Error("read without an error");
}

describe("a session specification with a bad field", () => {
  const read = (file: string) => () => readJsonFile(file, SessionSpec, AS_SESSION_CHECK_READS);
  const derived = SPEC.checkouts.findIndex((c) => c.derived);

  it("reads as written when nothing is wrong", () => {
    expect(read(written(SPEC))()).toEqual(SPEC);
  });

  it.each<[string, (s: any) => void, string]>([
    [
      "an abbreviated commit",
      (s) => (s.checkouts[derived].derived.commit = "bbbbbbb"),
      `field checkouts.${derived}.derived.commit: expected a full 40-character lowercase hex commit id`,
    ],
    [
      "a message carrying more than repository, checkout and text",
      (s) => (s.conditions.switched[0].message.role = "focus"),
      "field conditions.switched.0.message.role: unknown key (expected one of the documented keys; check its spelling)",
    ],
    [
      "a relative checkout",
      (s) => (s.conditions.control[1].message.checkout = "w01"),
      "field conditions.control.1.message.checkout: expected an absolute checkout path",
    ],
    ["a task id of another form", (s) => (s.interruptions = ["o/r#2"]), "field interruptions.0: expected owner__name-NUMBER, for example psf__requests-1234"],
    ["a missing budget", (s) => delete s.budget, "field budget: is required"],
    ["a locality neither near nor far", (s) => (s.locality = "close"), 'field locality: Invalid option: expected one of "near"|"far"'],
  ])("%s is refused naming the file and the field", (_, edit, expected) => {
    const file = written(SPEC, edit);
    const message = refusal(read(file));
    expect(message.startsWith(`${file}: ${expected}`), message).toBe(true);
    expect(message).toMatch(/\(expected a session specification \(manifests\/<benchmark>\/sessions\/<session>\.json\)\)$/);
  });
});

describe("a held-out task with a bad field", () => {
  it.each<[(h: any) => void, string]>([
    [(h) => (h.base_commit = h.base_commit.slice(0, 12)), "field base_commit: expected a full 40-character lowercase hex commit id"],
    [(h) => (h.repo = "r"), "field repo: expected owner/name, for example psf/requests"],
    [(h) => (h.fail_to_pass = []), "field fail_to_pass: Too small: expected array to have >=1 items"],
    [(h) => (h.upstream.pull_number = "7"), "field upstream.pull_number: expected number, got string"],
  ])("is refused naming the field: %#", (edit, expected) => {
    const file = written(heldoutRecord(tasks[0]!), edit);
    const message = refusal(() => readJsonFile(file, HeldoutTask, "a held-out task"));
    expect(message.startsWith(`${file}: ${expected}`), message).toBe(true);
    expect(message.endsWith("(expected a held-out task)"), message).toBe(true);
  });
});

describe("a benchmark's list of sessions", () => {
  it("refuses an entry that is not a file of the sessions directory, and a file that holds another session", () => {
    const dir = tempDir();
    mkdirSync(join(dir, "sessions"));
    writeFileSync(join(dir, "sessions", `${SPEC.session_id}.json`), JSON.stringify(SPEC));
    const list = (file: string, sessionId = SPEC.session_id) =>
      writeFileSync(
        join(dir, "sessions", "index.json"),
        JSON.stringify({ benchmark: "b", sessions: [{ session_id: sessionId, file, focus: "o__r-1", locality: "far" }] }),
      );
    list(`${SPEC.session_id}.json`);
    expect(readListedSessions(join(dir, "sessions")).map((s) => s.spec)).toEqual([SPEC]);
    list(`../elsewhere/${SPEC.session_id}.json`);
    expect(refusal(() => readListedSessions(join(dir, "sessions")))).toBe(
      `${join(dir, "sessions", "index.json")}: field sessions.0.file: expected a file name in the sessions directory (expected the benchmark's list of sessions)`,
    );
    list(`${SPEC.session_id}.json`, "session-o__r-9");
    expect(refusal(() => readListedSessions(join(dir, "sessions")))).toBe(
      `${join(dir, "sessions", `${SPEC.session_id}.json`)}: field session_id: is ${SPEC.session_id}, but ${join(dir, "sessions", "index.json")} lists session-o__r-9 in this file`,
    );
  });
});

describe("a repository profile with a bad field", () => {
  const profile = { repo: "o/r", clone_url: "../mirrors/o__r.bundle", classification: { package_roots: ["pkg"] }, environment: { python: "3.11" } };

  it.each<[(p: any) => void, string]>([
    [(p) => (p.repo = "r"), "field repo: expected owner/name, for example psf/requests"],
    [
      (p) => (p.environment.requirements_files = ["../requirements.txt"]),
      "field environment.requirements_files.0: expected a path relative to the repository root, without '..'",
    ],
    [
      (p) => (p.classification.test_runner_source = ["/usr/lib/pytest"]),
      "field classification.test_runner_source.0: expected a path relative to the repository root, without '..'",
    ],
    // A misspelt classification key is refused, not dropped (the rule it meant would silently not apply).
    [(p) => (p.classification.test_dir = ["tests"]), "field classification.test_dir: unknown key"],
    [(p) => (p.environment.python = "3"), "field environment.python: expected a Python minor version such as 3.11"],
    [(p) => (p.pypi_name = "not a name"), "field pypi_name: expected a package name such as setuptools"],
  ])("is refused naming the field: %#", (edit, expected) => {
    expect(readProfile(written(profile))).toMatchObject({ repo: "o/r" });
    const file = written(profile, edit);
    const message = refusal(() => readProfile(file));
    expect(message.startsWith(`${file}: ${expected}`), message).toBe(true);
  });
});
