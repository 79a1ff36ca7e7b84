import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { InputError, readReviewed } from "../../pipeline/validation.ts";
import { JudgeSetupError, loadJudgeAdapter } from "../../stages/audit/judge/client.ts";
import { loadAgent, SessionInputError } from "../../pipeline/session/agents.ts";
import { loadProvenance } from "../../stages/audit/rules/provenance.ts";
import { tempDir } from "../helpers/tmp.ts";

const Shape = z.strictObject({ name: z.string(), runs: z.number().int().positive() });

describe("readReviewed, the one reader of reviewed files", () => {
  // tempDir is removed after each test: each test writes its own files.
  const file = (name: string, text: string) => {
    const path = join(tempDir(), name);
    writeFileSync(path, text);
    return path;
  };

  it("reads YAML and JSON by the file's name, and names the file and field of a bad value", () => {
    expect(readReviewed(file("a.yaml", "name: x\nruns: 2\n"), Shape)).toEqual({ name: "x", runs: 2 });
    expect(readReviewed(file("a.json", '{"name":"x","runs":2}'), Shape)).toEqual({ name: "x", runs: 2 });
    const bad = file("b.yaml", "name: x\nruns: -1\n");
    expect(() => readReviewed(bad, Shape, { what: "a shape" })).toThrow(new RegExp(`^${bad}: field runs: .*\\(expected a shape\\)$`));
    expect(() => readReviewed(bad, Shape)).toThrow(InputError);
  });

  it("names the file, line and column of a syntax error, and the file of one that cannot be read", () => {
    const broken = file("c.yaml", "name: [x\nruns: 2\n");
    expect(() => readReviewed(broken, Shape)).toThrow(new RegExp(`^${broken}: not valid YAML \\(.*line \\d+, column \\d+`));
    const json = file("c.json", '{"name": ');
    expect(() => readReviewed(json, Shape)).toThrow(new RegExp(`^${json}: not valid JSON \\(`));
    expect(() => readReviewed(join(tempDir(), "none.yaml"), Shape)).toThrow(new RegExp(`none\\.yaml: not readable \\(ENOENT`));
  });

  it("keeps a caller's error class, and an empty file may stand for a value", () => {
    expect(() => readReviewed(file("d.yaml", "name: [x"), Shape, { error: (m) => new RangeError(m) })).toThrow(RangeError);
    expect(readReviewed(file("e.yaml", ""), z.object({}).loose(), { empty: {} })).toEqual({});
  });

  it("the judge's adapter and the rules' provenance keep the file's name on a YAML syntax error", () => {
    const adapter = file("judge.yaml", "provider: [anthropic\n");
    expect(() => loadJudgeAdapter(adapter)).toThrow(JudgeSetupError);
    expect(() => loadJudgeAdapter(adapter)).toThrow(new RegExp(`^${adapter}: not valid YAML`));
    const rules = file("rules.yaml", "rules:\n  a: [\n");
    expect(() => loadProvenance(rules)).toThrow(new RegExp(`^${rules}: not valid YAML`));
  });

  it("an agent description: the shipped ones load, a broken one is refused naming its file", () => {
    for (const name of ["aider", "claude-code-environment"]) expect(loadAgent(`data/agents/${name}.yaml`).name).toBeTruthy();
    const broken = file("agent.yaml", "name: [x\n");
    expect(() => loadAgent(broken)).toThrow(SessionInputError);
    expect(() => loadAgent(broken)).toThrow(new RegExp(`^${broken}: not valid YAML .*expected an agent description`));
    expect(() => loadAgent(file("list.yaml", "- a\n"))).toThrow(/list\.yaml: field \(root\): .*expected an agent description/);
  });
});
