import { BUILT_STAGES } from "../../../stages/index.ts";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { qualifyRecords } from "../../../pipeline/fidelity/measure.ts";
import { acceptedPythons, choosePython, NoAcceptedPython, recipeFor } from "../../../pipeline/profiles/recipes.ts";
import { silentLogger } from "../../../pipeline/logger.ts";
import { RepoProfile } from "../../../pipeline/schemas/repo-profile.ts";
import { dockerForTests } from "../../helpers/docker.ts";
import { repoWithChange } from "../../helpers/git-repo.ts";
import { fileTempDir } from "../../helpers/tmp.ts";

const docker = await dockerForTests();

const profileOf = (environment: Record<string, unknown>, overrides: unknown[] = []) =>
  RepoProfile.parse({ repo: "o/r", environment, environment_overrides: overrides, unverified: "a test's" });
const offer = (installed: string[], downloads = false) => ({ installed, downloads, describe: "test" });

describe("a recipe's Python preferences", () => {
  it("takes the first accepted version the executor has, or the first of all where uv can download it", () => {
    expect(choosePython(["3.10", "3.9", "3.11"], offer(["3.9", "3.11", "3.13"]))).toBe("3.9");
    expect(choosePython(["3.10", "3.9"], offer(["3.9", "3.11", "3.13"], true))).toBe("3.10");
    expect(choosePython(["3.11"], offer(["3.9", "3.11"]))).toBe("3.11");
  });

  it("fails with both lists when no accepted version can be had", () => {
    expect(() => choosePython(["3.6", "3.7"], offer(["3.9", "3.11", "3.13"]))).toThrow(NoAcceptedPython);
    expect(() => choosePython(["3.6", "3.7"], offer(["3.9", "3.11", "3.13"]))).toThrow(
      /accepts Python 3\.6, 3\.7; the executor offers 3\.9, 3\.11, 3\.13 .*no uv-managed download/,
    );
  });

  it("applies the overrides of the Python chosen, after the era's, and records what was accepted", () => {
    const profile = profileOf({ python: ["3.10", "3.9"], pins: ["numpy==1.23.0"] }, [
      { versions: ["1.0"], recipe: { python: ["3.6", "3.9"], pins: ["numpy==1.16.0"] } },
      { pythons: ["3.9"], versions: ["1.0"], recipe: { pins: ["numpy==1.19.5"] } },
      { pythons: ["3.9"], recipe: { pip_requirements: ["pytest<8"] } },
    ]);
    expect(acceptedPythons(profile, { id: "o__r-1", version: "1.0" })).toEqual(["3.6", "3.9"]);
    const old = recipeFor(profile, { id: "o__r-1", version: "1.0" }, "3.9");
    expect(old).toMatchObject({ python: "3.9", python_accepted: ["3.6", "3.9"], pins: ["numpy==1.19.5"], pip_requirements: ["pytest<8"] });
    const first = recipeFor(profile, { id: "o__r-2", version: "2.0" });
    expect(first).toMatchObject({ python: "3.10", python_accepted: ["3.10", "3.9"], pins: ["numpy==1.23.0"], pip_requirements: [] });
    // one version alone is recorded as no list
    expect(recipeFor(profileOf({ python: "3.11" }), { id: "o__r-3" }).python_accepted).toEqual([]);
    expect(() => recipeFor(profile, { id: "o__r-2", version: "2.0" }, "3.13")).toThrow(/does not accept Python 3\.13/);
  });

  it("refuses an override that would apply to nothing, or that changes the Python it is chosen by", () => {
    expect(() => profileOf({ python: "3.9" }, [{ recipe: { pins: ["a==1"] } }])).toThrow(/must name versions, tasks or pythons/);
    expect(() => profileOf({ python: "3.9" }, [{ pythons: ["3.9"], recipe: { python: "3.11" } }])).toThrow(/cannot change the Python/);
  });
});

// A real task qualified with the Docker executor from a profile that prefers Python 3.10, which
// no base image gives: with no downloads it runs on the first fallback and says so.
describe.skipIf(!docker)("qualify on a fallback Python", () => {
  let work: string;
  let records: string;
  let profiles: string;

  beforeAll(async () => {
    const repo = await repoWithChange(
      {
        "pkg/__init__.py": "",
        "pkg/calc.py": "def double(x):\n    return x + x\n",
        "tests/test_calc.py": "from pkg.calc import double\n\ndef test_double():\n    assert double(2) == 4\n",
      },
      {
        "pkg/calc.py":
          "import sys\n\ndef double(x):\n    return x + x\n\ndef triple(x):\n    return 3 * x\n\ndef python():\n    return '%d.%d' % sys.version_info[:2]\n",
        "tests/test_calc.py":
          "from pkg import calc\n\ndef test_double():\n    assert calc.double(2) == 4\n\ndef test_triple():\n    assert calc.triple(2) == 6\n",
      },
    );
    const [implementation, tests] = splitDiff(repo.diff);
    work = fileTempDir();
    records = join(work, "records.jsonl");
    const record = (id: string, version: string) => ({
      instance_id: id,
      repo: "o/r",
      base_commit: repo.base,
      patch: implementation,
      test_patch: tests,
      problem_statement: "Add triple.",
      FAIL_TO_PASS: JSON.stringify(["tests/test_calc.py::test_triple"]),
      PASS_TO_PASS: JSON.stringify(["tests/test_calc.py::test_double"]),
      version,
      environment_setup_commit: repo.base,
      created_at: "2024-03-01T00:00:00Z",
    });
    writeFileSync(records, [record("o__r-1", "1.0"), record("o__r-2", "2.0")].map((r) => JSON.stringify(r) + "\n").join(""));
    profiles = join(work, "profiles");
    mkdirSync(profiles);
    writeFileSync(
      join(profiles, "o__r.json"),
      JSON.stringify({
        repo: "o/r",
        clone_url: repo.dir,
        environment: { python: ["3.10", "3.9"], pip_requirements: ["pytest"] },
        environment_overrides: [{ versions: ["2.0"], recipe: { python: ["3.10"] }, why: "an era with no fallback" }],
        unverified: "a test's",
      }),
    );
  });

  it("runs the era on the fallback, records it, and fails the era without one with both lists", async () => {
    const { qualifications, rejects } = await qualifyRecords({
      stages: BUILT_STAGES,
      records,
      profilesDir: profiles,
      workDir: join(work, "run"),
      executor: "docker",
      runs: 1,
      jobs: 2,
      pythonDownloads: "no",
      log: silentLogger,
    });
    const q = qualifications.get("o__r-1")!;
    expect(q).toMatchObject({ python: "3.9", python_fallback: true, kept: true, fail_to_pass: ["tests/test_calc.py::test_triple"] });
    const reject = rejects.get("o__r-2")!;
    expect(reject.reason).toBe("build_failed");
    expect(reject.message).toMatch(/accepts Python 3\.10; the executor offers 3\.11, 3\.13, 3\.9/);
    const lines = readFileSync(join(work, "run", "artifacts", "qualify", "qualifications.jsonl"), "utf8");
    expect(lines).toContain('"python":"3.9"');
  });
});

/** A diff of pkg/ and tests/ as two patches: implementation, then tests. */
function splitDiff(diff: string): [string, string] {
  const files = diff.split(/(?=^diff --git )/m).filter(Boolean);
  return [files.filter((f) => !f.includes(" b/tests/")).join(""), files.filter((f) => f.includes(" b/tests/")).join("")];
}
