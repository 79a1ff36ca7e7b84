import { describe, expect, it } from "vitest";
import { decodeStrict } from "../../../pipeline/decode.ts";
import { importSwebench } from "../../../stages/mine/swebench.ts";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { PipelineSettings } from "../../../pipeline/engine/settings.ts";
import { join } from "node:path";
import { runProjectOnce, type ProjectRun } from "../../../pipeline/project/project.ts";
import { silentLogger } from "../../../pipeline/logger.ts";
import { BUILT_STAGES } from "../../../stages/index.ts";
import { tempDir } from "../../helpers/tmp.ts";

const base = "b40a0f4e33823e6d0f341f7e8684e359a99060d1";
const record = (over: Record<string, unknown> = {}) => ({
  instance_id: "pvlib__pvlib-python-1707",
  repo: "pvlib/pvlib-python",
  base_commit: base,
  patch: "diff --git a/pvlib/iam.py b/pvlib/iam.py\n--- a/pvlib/iam.py\n+++ b/pvlib/iam.py\n@@ -1 +1 @@\n-a\n+b\n",
  test_patch:
    "diff --git a/pvlib/tests/test_iam.py b/pvlib/tests/test_iam.py\n--- a/pvlib/tests/test_iam.py\n+++ b/pvlib/tests/test_iam.py\n@@ -1 +1 @@\n-a\n+b\n",
  problem_statement: "iam fails",
  created_at: "2023-03-24T10:46:42Z",
  version: "0.9",
  FAIL_TO_PASS: '["pvlib/tests/test_iam.py::test_x[1-2]"]',
  PASS_TO_PASS: ["pvlib/tests/test_iam.py::test_y"],
  environment_setup_commit: base,
  hints_text: "kept",
  ...over,
});

describe("SWE-bench-family import", () => {
  it("imports JSONL with test lists given as JSON strings or lists, and keeps extra fields", () => {
    const { candidates, rejects } = importSwebench(
      "a.jsonl",
      [record(), record({ instance_id: "pvlib__pvlib-python-2", FAIL_TO_PASS: ["t::a"] })].map((r) => JSON.stringify(r)).join("\n") + "\n",
    );
    expect(rejects).toEqual([]);
    expect(candidates[0]).toMatchObject({
      id: "pvlib__pvlib-python-1707",
      pull_number: 1707,
      source: { kind: "swebench", file: "a.jsonl", line: 1 },
      upstream_fail_to_pass: ["pvlib/tests/test_iam.py::test_x[1-2]"],
      upstream_pass_to_pass: ["pvlib/tests/test_iam.py::test_y"],
      extra: { hints_text: "kept" },
      version: "0.9",
      created_at: "2023-03-24T10:46:42.000Z",
    });
    expect(candidates[0]!.reference_diff).toBe(record().patch + record().test_patch);
    expect(candidates[1]!.upstream_fail_to_pass).toEqual(["t::a"]);
  });

  it("imports a JSON array with each element's line number", () => {
    const text = "[\n" + JSON.stringify(record()) + ",\n" + JSON.stringify(record({ instance_id: "pvlib__pvlib-python-3" })) + "\n]\n";
    const { candidates } = importSwebench("a.json", text);
    expect(candidates.map((c) => c.source)).toEqual([
      { kind: "swebench", file: "a.json", line: 2 },
      { kind: "swebench", file: "a.json", line: 3 },
    ]);
  });

  it("rejects a malformed line and a bad field by file, line and field; the rest imports", () => {
    const text = [
      JSON.stringify(record()),
      "{not json",
      JSON.stringify(record({ instance_id: "pvlib__pvlib-python-9", base_commit: "abc123" })),
      JSON.stringify(record({ instance_id: "pvlib__pvlib-python-10", patch: undefined })),
      JSON.stringify(record({ instance_id: "pvlib__pvlib-python-11", FAIL_TO_PASS: "not a list" })),
      JSON.stringify(record({ instance_id: "psf__requests-12" })),
    ].join("\n");
    const { candidates, rejects } = importSwebench("lite.jsonl", text);
    expect(candidates.map((c) => c.id)).toEqual(["pvlib__pvlib-python-1707"]);
    expect(rejects.map((r) => [r.record_id, r.reason, r.line, r.field])).toEqual([
      ["lite.jsonl:2", "malformed_record", 2, undefined],
      ["pvlib__pvlib-python-9", "invalid_field", 3, "base_commit"],
      ["pvlib__pvlib-python-10", "missing_field", 4, "patch"],
      ["pvlib__pvlib-python-11", "invalid_field", 5, "FAIL_TO_PASS"],
      ["psf__requests-12", "invalid_field", 6, "instance_id"],
    ]);
    expect(rejects[1]!.message).toMatch(/^lite\.jsonl line 3, record pvlib__pvlib-python-9: field base_commit: /);
  });

  it("says a wrong-type field is of the wrong type, not missing", () => {
    const { rejects } = importSwebench("t.jsonl", JSON.stringify(record({ problem_statement: 42, created_at: undefined })) + "\n");
    expect(rejects.map((r) => [r.reason, r.message])).toEqual([
      ["invalid_field", "t.jsonl line 1, record pvlib__pvlib-python-1707: field problem_statement: expected string, got number"],
    ]);
    const missing = importSwebench("t.jsonl", JSON.stringify(record({ created_at: undefined })) + "\n").rejects;
    expect(missing.map((r) => [r.reason, r.message])).toEqual([
      ["missing_field", "t.jsonl line 1, record pvlib__pvlib-python-1707: field created_at: is required"],
    ]);
  });

  it("accepts a byte-order mark on JSONL and JSON arrays and loses no record to it", () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const lines = Buffer.concat([
      bom,
      Buffer.from([record(), record({ instance_id: "pvlib__pvlib-python-2" })].map((r) => JSON.stringify(r)).join("\n") + "\n"),
    ]);
    expect(importSwebench("bom.jsonl", decodeStrict(lines).text).candidates).toHaveLength(2);
    const array = Buffer.concat([bom, Buffer.from(JSON.stringify([record(), record({ instance_id: "pvlib__pvlib-python-2" })]))]);
    const decoded = decodeStrict(array);
    expect(decoded.invalid).toEqual([]);
    expect(importSwebench("bom.json", decoded.text).candidates).toHaveLength(2);
  });

  it("rejects a line that is not valid UTF-8 by file, line and byte offset, and imports the others unchanged", () => {
    const good = JSON.stringify(record()) + "\n";
    const bad = Buffer.concat([
      Buffer.from(JSON.stringify(record({ instance_id: "pvlib__pvlib-python-5" })).slice(0, 40)),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('"}\n'),
    ]);
    const third = JSON.stringify(record({ instance_id: "pvlib__pvlib-python-6", problem_statement: "naïve café ✓" })) + "\n";
    const { text, invalid } = decodeStrict(Buffer.concat([Buffer.from(good), bad, Buffer.from(third)]));
    expect(invalid).toEqual([{ line: 2, byteOffset: Buffer.byteLength(good) + 40 }]);
    const { candidates, rejects } = importSwebench("u.jsonl", text, invalid);
    expect(candidates.map((c) => c.id)).toEqual(["pvlib__pvlib-python-1707", "pvlib__pvlib-python-6"]);
    expect(candidates[1]!.problem_statement).toBe("naïve café ✓");
    expect(rejects).toEqual([
      {
        record_id: "u.jsonl:2",
        reason: "malformed_record",
        message: `u.jsonl line 2: not valid UTF-8 (byte offset ${Buffer.byteLength(good) + 40}); the record was not read`,
        file: "u.jsonl",
        line: 2,
      },
    ]);
    // In a pretty-printed JSON array the bad line is one field of one element: that element is
    // rejected whole, named by the lines it spans, and the elements around it import unchanged.
    const pretty = (r: object) =>
      JSON.stringify(r, null, 2)
        .split("\n")
        .map((l) => `  ${l}`)
        .join("\n");
    const arrayText = `[\n${pretty(record())},\n${pretty(record({ instance_id: "pvlib__pvlib-python-5", problem_statement: "BAD" }))},\n${pretty(record({ instance_id: "pvlib__pvlib-python-6" }))}\n]\n`;
    const at = arrayText.indexOf("BAD");
    const arrayBytes = Buffer.concat([Buffer.from(arrayText.slice(0, at)), Buffer.from([0xff]), Buffer.from(arrayText.slice(at + 3))]);
    const decodedArray = decodeStrict(arrayBytes);
    const badLine = arrayText.slice(0, at).split("\n").length;
    expect(decodedArray.invalid).toEqual([{ line: badLine, byteOffset: Buffer.byteLength(arrayText.slice(0, at)) }]);
    const fromArray = importSwebench("u.json", decodedArray.text, decodedArray.invalid, arrayBytes);
    expect(fromArray.candidates.map((c) => c.id)).toEqual(["pvlib__pvlib-python-1707", "pvlib__pvlib-python-6"]);
    expect(fromArray.candidates.every((c) => c.problem_statement === record().problem_statement)).toBe(true);
    const elementStart = arrayText.slice(0, arrayText.indexOf('"pvlib__pvlib-python-5"')).split("\n").length - 1;
    expect(fromArray.rejects).toEqual([expect.objectContaining({ record_id: `u.json:${elementStart}`, reason: "malformed_record", line: elementStart })]);
    expect(fromArray.rejects[0]!.message).toMatch(
      new RegExp(`u\\.json line ${badLine}: not valid UTF-8 .*the record of lines ${elementStart}-\\d+ was not read`),
    );
    // Overlong forms and surrogates are not UTF-8 either.
    expect(decodeStrict(Buffer.from([0x61, 0xc0, 0xaf])).invalid).toEqual([{ line: 1, byteOffset: 1 }]);
    expect(decodeStrict(Buffer.from([0xed, 0xa0, 0x80])).invalid).toEqual([{ line: 1, byteOffset: 0 }]);
  });

  it("rejects exactly the element of a one-line JSON array (what json.dump writes) that holds a bad byte, wherever it is, and reads the others byte for byte", () => {
    const records = [
      record({ problem_statement: "first: naïve ✓" }),
      record({ instance_id: "pvlib__pvlib-python-2", problem_statement: "second: MARK" }),
      record({ instance_id: "pvlib__pvlib-python-3", problem_statement: 'third: \\u00e9 and "quoted" [x], {y}' }),
    ];
    const oneLine = JSON.stringify(records);
    for (const [position, id] of records.map((r, i) => [i, r.instance_id] as const)) {
      // the bad byte goes into this element's problem statement
      const marker = position === 1 ? "MARK" : position === 0 ? "naïve" : "quoted";
      const at = Buffer.byteLength(oneLine.slice(0, oneLine.indexOf(marker)));
      const whole = Buffer.from(oneLine);
      const bytes = Buffer.concat([whole.subarray(0, at), Buffer.from([0xff]), whole.subarray(at)]);
      const decoded = decodeStrict(bytes);
      expect(decoded.invalid).toEqual([{ line: 1, byteOffset: at }]);
      const { candidates, rejects } = importSwebench("dump.json", decoded.text, decoded.invalid, bytes);
      const others = records.filter((r) => r.instance_id !== id);
      expect(
        candidates.map((c) => c.id),
        `bad byte in element ${position + 1}`,
      ).toEqual(others.map((r) => r.instance_id));
      // the others exactly as the file holds them: no U+FFFD, nothing altered
      expect(candidates.map((c) => c.problem_statement)).toEqual(others.map((r) => r.problem_statement));
      expect(rejects).toEqual([
        {
          record_id: "dump.json:1",
          reason: "malformed_record",
          message: expect.stringMatching(
            new RegExp(`^dump\\.json line 1: not valid UTF-8 \\(byte offset ${at}\\); the record of line 1, bytes \\d+-\\d+, was not read$`),
          ),
          file: "dump.json",
          line: 1,
        },
      ]);
      // the bytes it names are the element's own: the bad byte lies inside them
      const [from, to] = /bytes (\d+)-(\d+)/.exec(rejects[0]!.message)!.slice(1).map(Number);
      expect(at).toBeGreaterThanOrEqual(from!);
      expect(at).toBeLessThanOrEqual(to!);
      expect(
        JSON.parse(
          bytes
            .subarray(from!, to! + 1)
            .toString("latin1")
            .replace(/\xff/, ""),
        ).instance_id,
      ).toBe(id);
    }
    // two bad elements on the one line: both rejected, the third read
    const two = Buffer.from(oneLine.replace("naïve", "\u0000").replace("MARK", "\u0001"), "utf8");
    const twoBad = Buffer.from(two.map((b) => (b === 0 || b === 1 ? 0xfe : b)));
    const result = importSwebench("two.json", decodeStrict(twoBad).text, decodeStrict(twoBad).invalid, twoBad);
    expect(result.candidates.map((c) => c.id)).toEqual(["pvlib__pvlib-python-3"]);
    expect(result.rejects.map((r) => r.reason)).toEqual(["malformed_record", "malformed_record"]);
  });

  it("reads both records around a bad byte that stands between them (`}, \\xff{`) and rejects the byte alone, on one line or pretty-printed", () => {
    const records = [record({ problem_statement: "first" }), record({ instance_id: "pvlib__pvlib-python-2", problem_statement: "second: naïve" })];
    for (const [layout, text] of [
      ["one line", JSON.stringify(records)],
      ["pretty", JSON.stringify(records, null, 2)],
    ] as const) {
      const between = text.indexOf("{", text.indexOf("}", text.indexOf('"first"')) + 1);
      const at = Buffer.byteLength(text.slice(0, between));
      const whole = Buffer.from(text);
      const bytes = Buffer.concat([whole.subarray(0, at), Buffer.from([0xff, 0xfe]), whole.subarray(at)]);
      const decoded = decodeStrict(bytes);
      const { candidates, rejects } = importSwebench("u.json", decoded.text, decoded.invalid, bytes);
      expect(
        candidates.map((c) => [c.id, c.problem_statement]),
        layout,
      ).toEqual(records.map((r) => [r.instance_id, r.problem_statement]));
      const line = text.slice(0, between).split("\n").length;
      expect(rejects, layout).toEqual([
        {
          record_id: `u.json:${line}`,
          reason: "malformed_record",
          message: `u.json line ${line}: bytes that are not valid UTF-8 (byte offset ${at}-${at + 1}) between two records, part of neither; skipped, and the records either side read`,
          file: "u.json",
          line,
        },
      ]);
    }
  });
});

describe("a benchmark built from part of a published split", () => {
  it("takes only the repositories and instances a source names, and rejects an instance the file lacks", async () => {
    const dir = tempDir();
    const lines = [
      record(),
      record({ instance_id: "pvlib__pvlib-python-2" }),
      record({ instance_id: "sympy__sympy-3", repo: "sympy/sympy" }),
      record({ instance_id: "sympy__sympy-4", repo: "sympy/sympy" }),
    ];
    mkdirSync(join(dir, "repos"));
    writeFileSync(join(dir, "split.jsonl"), lines.map((r) => JSON.stringify(r)).join("\n") + "\n");
    const run: ProjectRun = {
      name: "part",
      seed: "1",
      workDir: join(dir, "work"),
      baseDir: dir,
      settings: PipelineSettings.parse({ profiles_dir: "repos" }),
      stageConfigs: {
        mine: {
          swebench: [
            { file: "split.jsonl", repos: ["sympy/sympy"] },
            { file: "split.jsonl", instances: ["pvlib__pvlib-python-2", "pvlib__pvlib-python-9"] },
          ],
        },
      },
      stages: BUILT_STAGES,
      log: silentLogger,
    };
    const summary = await runProjectOnce(run, { only: "mine" });
    expect(summary.stages.map((s) => s.error ?? s.status)).toEqual(["ran"]);
    const read = (name: string) =>
      readFileSync(join(dir, "work", "artifacts", "mine", name), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { id?: string; record_id?: string; reason?: string; message?: string });
    expect(read("candidates.jsonl").map((c) => c.id)).toEqual(["pvlib__pvlib-python-2", "sympy__sympy-3", "sympy__sympy-4"]);
    expect(read("rejects.jsonl")).toMatchObject([
      { record_id: "pvlib__pvlib-python-9", reason: "not_found", message: "split.jsonl: no record pvlib__pvlib-python-9 (named in stages.mine.swebench)" },
    ]);
  });
});
