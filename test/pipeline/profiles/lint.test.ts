import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatFindings, lintProfiles, readLintRecords } from "../../../pipeline/profiles/lint-files.ts";
import { type LintRecord, lintProfile, LINT_RULES } from "../../../pipeline/profiles/lint.ts";
import { PypiIndex } from "../../../pipeline/profiles/pypi.ts";
import { RepoProfile } from "../../../pipeline/schemas/repo-profile.ts";
import { fileTempDir } from "../../helpers/tmp.ts";

/** A package index answering PyPI's JSON API from a table: name → version → upload date (and Requires-Python). */
const INDEX: Record<string, Record<string, string | [string, string]>> = {
  setuptools: { "68.0.0": "2023-06-19", "69.5.1": "2024-04-13", "70.0.0": "2024-05-20" },
  pip: { "24.0": "2024-02-03" },
  wheel: { "0.43.0": "2024-03-11" },
  pytest: { "2.9.2": "2016-06-01", "3.0.0": "2016-08-19", "7.4.0": "2023-06-23" },
  trustme: { "0.1.0": "2017-07-18" },
  numpy: { "1.16.0": "2019-01-14", "1.23.0": ["2022-06-22", ">=3.8"], "1.26.0": ["2023-09-16", ">=3.9"] },
  demo: { "1.0.0": "2020-01-01", "1.1.0": "2020-06-01", "1.2.1": "2021-01-01" },
  hypothesis: { "4.18.1": "2019-04-29", "4.18.2": "2019-04-30" },
};
const BUILD_TOOLS = ["setuptools-scm", "tomli", "flit-core", "hatchling", "hatch-vcs", "poetry-core", "pdm-backend", "versioneer", "cython"];

let server: Server;
let url: string;
const asked: string[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    const name = /^\/pypi\/([^/]+)\/json$/.exec(request.url ?? "")?.[1];
    asked.push(name ?? request.url ?? "");
    const project = name !== undefined ? (INDEX[name] ?? (BUILD_TOOLS.includes(name) ? { "1.0": "2015-01-01" } : undefined)) : undefined;
    if (!project) return void response.writeHead(404).end("{}");
    const releases = Object.fromEntries(
      Object.entries(project).map(([v, d]) => {
        const [date, requires] = Array.isArray(d) ? d : [d, null];
        return [
          v,
          [
            {
              packagetype: "sdist",
              filename: `${name}-${v}.tar.gz`,
              upload_time_iso_8601: `${date}T12:00:00.000000Z`,
              yanked: false,
              requires_python: requires,
            },
          ],
        ];
      }),
    );
    response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ info: { name }, releases }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/pypi`;
});
afterAll(() => server?.close());

const records: LintRecord[] = [
  { instance_id: "o__demo-1", repo: "o/demo", version: "1.0", created_at: "2018-07-01T00:00:00Z" },
  { instance_id: "o__demo-2", repo: "o/demo", version: "1.1", created_at: "2020-05-01T00:00:00Z" },
];
/** Records of an era older than pytest 3.0, which the pytest runner needs. */
const early: LintRecord[] = [{ instance_id: "o__demo-1", repo: "o/demo", version: "1.0", created_at: "2016-07-01T00:00:00Z" }, records[1]!];
const OFFERED = ["3.9", "3.11", "3.13"];

async function lint(profile: Record<string, unknown>, given = records) {
  const parsed = RepoProfile.parse({ repo: "o/demo", unverified: "a test's", ...profile });
  return lintProfile("o__demo.json", parsed, { offered: OFFERED, pypi: new PypiIndex({ url, cacheDir: fileTempDir() }), records: given });
}
const rules = (findings: { rule: string }[]) => [...new Set(findings.map((f) => f.rule))].sort();

describe("repo lint: each rule fires on a profile that breaks it", () => {
  it("a clean profile has no finding", async () => {
    expect(
      await lint(
        {
          environment: { python: "3.9", pip_requirements: ["numpy"], pins: ["setuptools==68.0.0"] },
          environment_overrides: [{ versions: ["1.0"], recipe: { as_of_exceptions: { pytest: "2016-09-01", numpy: "2019-02-01" } } }],
        },
        early,
      ),
    ).toEqual([]);
  });

  it("pin-vs-build-tools: a pin the build tools' requirement excludes", async () => {
    const findings = await lint({ environment: { python: "3.9", pins: ["setuptools==70.0.0"] } });
    expect(rules(findings)).toEqual(["pin-vs-build-tools"]);
    expect(findings[0]).toMatchObject({ file: "o__demo.json", field: "environment.pins" });
    expect(findings[0]!.message).toMatch(/setuptools==70\.0\.0 contradicts the build tools' requirement setuptools<70/);
  });

  it("pin-twice: one package pinned to two versions, named by the override that set them", async () => {
    const findings = await lint({
      environment: { python: "3.9" },
      environment_overrides: [{ versions: ["1.1"], recipe: { pins: ["numpy==1.23.0", "numpy==1.26.0"] } }],
    });
    expect(rules(findings)).toEqual(["pin-twice"]);
    expect(findings[0]!.field).toBe("environment_overrides[0].recipe.pins");
  });

  it("pin-vs-requirement: a pin outside a requirement's range", async () => {
    expect(rules(await lint({ environment: { python: "3.9", pip_requirements: ["numpy<1.20"], pins: ["numpy==1.23.0"] } }))).toEqual(["pin-vs-requirement"]);
    // the runner's own requirement counts too
    expect(rules(await lint({ environment: { python: "3.9", pins: ["pytest==2.9.2"] } }))).toEqual(["pin-vs-requirement"]);
  });

  it("pin-not-on-pypi and unknown-project", async () => {
    expect(rules(await lint({ environment: { python: "3.9", pins: ["numpy==9.9.9"] } }))).toEqual(["pin-not-on-pypi"]);
    expect(rules(await lint({ environment: { python: "3.9", pip_requirements: ["no-such-thing"] } }))).toEqual(["unknown-project"]);
  });

  it("python-not-offered: an era whose every Python needs a download; a fallback the executors offer mends it", async () => {
    const findings = await lint({ environment: { python: "3.9" }, environment_overrides: [{ versions: ["1.1"], recipe: { python: "3.10" } }] });
    expect(rules(findings)).toEqual(["python-not-offered"]);
    expect(findings[0]).toMatchObject({ field: "environment_overrides[0].recipe.python" });
    expect(await lint({ environment: { python: "3.9" }, environment_overrides: [{ versions: ["1.1"], recipe: { python: ["3.10", "3.11"] } }] })).toEqual([]);
  });

  it("python-floor: a floor PyPI does not bear out, or a pin below it where it applies", async () => {
    const floor = { python: "3.9", package: "hypothesis", version: "4.18.2", released: "2019-04-30T12:00:00Z", why: "crashes on 3.8+ before" };
    const clean = { python: "3.9", pip_requirements: ["hypothesis"], python_floors: [floor] };
    expect(await lint({ environment: clean })).toEqual([]);
    // uv compares upload times: a date before the upload would never admit the release
    const early = await lint({ environment: { ...clean, python_floors: [{ ...floor, released: "2019-04-30" }] } });
    expect(rules(early)).toEqual(["python-floor"]);
    expect(early[0]!.message).toMatch(/hypothesis 4\.18\.2 was uploaded at 2019-04-30T12:00:00\.000000Z, not at 2019-04-30/);
    expect(rules(await lint({ environment: { ...clean, python_floors: [{ ...floor, version: "4.99.0" }] } }))).toEqual(["python-floor"]);
    const pinned = await lint({ environment: { ...clean, pins: ["hypothesis==4.18.1"] } });
    expect(pinned.map((f) => [f.rule, f.field])).toContainEqual(["python-floor", "environment.pins"]);
    // a floor for a later Python than the recipe's does not apply, so a pin below it is no contradiction
    expect(await lint({ environment: { ...clean, pins: ["hypothesis==4.18.1"], python_floors: [{ ...floor, python: "3.11" }] } })).toEqual([]);
  });

  it("override-never-applies: a version that is no era, a task no record is, a Python no era accepts", async () => {
    // 1.3 is the development line after the released 1.2: a real era even though no record has it
    expect(await lint({ environment: { python: "3.9" }, environment_overrides: [{ versions: ["1.3"], recipe: { pins: ["numpy==1.26.0"] } }] })).toEqual([]);
    const findings = await lint({
      environment: { python: "3.9" },
      environment_overrides: [
        { versions: ["1.7"], recipe: { pins: ["numpy==1.26.0"] } },
        { tasks: ["o__demo-99"], recipe: { pins: ["numpy==1.26.0"] } },
        { pythons: ["3.13"], recipe: { pins: ["numpy==1.26.0"] } },
      ],
    });
    expect(rules(findings)).toEqual(["override-never-applies"]);
    expect(findings.map((f) => f.field).sort()).toEqual([
      "environment_overrides[0].versions",
      "environment_overrides[1].tasks",
      "environment_overrides[2].pythons",
    ]);
  });

  it("no-release-as-of: a requirement with no release by the era's date, or none for its Python; as_of_exceptions mends it", async () => {
    // the pytest runner needs pytest>=3.0, released after version 1.0's earliest record (2016-07-01)
    const findings = await lint({ environment: { python: "3.9", pip_requirements: ["trustme"] } }, early);
    expect(findings.map((f) => [f.rule, f.field, /version (\S+)/.exec(f.message)?.[1]])).toEqual([
      ["no-release-as-of", "environment.pip_requirements", "1.0"],
      ["no-release-as-of", "environment.test_runner", "1.0"],
    ]);
    expect(findings[1]!.message).toMatch(
      /pytest>=3\.0 \(the pytest runner's own requirement\) has no release for Python 3\.9 as of 2016-07-01.*the first is 3\.0\.0 of 2016-08-19/,
    );
    expect(
      await lint({ environment: { python: "3.9", pip_requirements: ["trustme"], as_of_exceptions: { pytest: "2016-09-01", trustme: "2017-08-01" } } }, early),
    ).toEqual([]);
    // numpy as of 2020 has only releases without Requires-Python, but numpy>=1.23 has none that old for 3.9
    expect(rules(await lint({ environment: { python: "3.9", pip_requirements: ["numpy>=1.23"] } }))).toEqual(["no-release-as-of"]);
    // numpy 1.23.0 exists as of 2022-07-01 but requires Python 3.8 or later: not for 3.7
    const late: LintRecord[] = [{ instance_id: "o__demo-3", repo: "o/demo", version: "1.2", created_at: "2022-07-01T00:00:00Z" }];
    expect(await lint({ environment: { python: "3.9", pip_requirements: ["numpy>=1.23"] } }, late)).toEqual([]);
    expect(rules(await lint({ environment: { python: ["3.7", "3.9"], pip_requirements: ["numpy>=1.23"] } }, late))).toEqual(["no-release-as-of"]);
  });

  it("lists every rule it has in its help, and asks PyPI once per project", async () => {
    expect(Object.keys(LINT_RULES).sort()).toEqual([
      "no-release-as-of",
      "override-never-applies",
      "pin-not-on-pypi",
      "pin-twice",
      "pin-vs-build-tools",
      "pin-vs-requirement",
      "python-floor",
      "python-not-offered",
      "unknown-project",
    ]);
    asked.length = 0;
    const cacheDir = fileTempDir();
    const pypi = new PypiIndex({ url, cacheDir });
    const profile = RepoProfile.parse({ repo: "o/demo", unverified: "x", environment: { python: "3.9", pip_requirements: ["numpy"] } });
    await lintProfile("a.json", profile, { offered: OFFERED, pypi, records });
    await lintProfile("a.json", profile, { offered: OFFERED, pypi: new PypiIndex({ url, cacheDir }), records });
    expect(asked.filter((n) => n === "numpy")).toHaveLength(1);
  });
});

// The shipped profiles against the real PyPI and the records in ../shared/data: CI runs this too
// (`repo lint`); without PyPI on a developer's machine it skips.
const SHARED = fileURLToPath(new URL("../../../../shared/data/", import.meta.url));
const reachable = await fetch("https://pypi.org/pypi/pip/json", { method: "HEAD", signal: AbortSignal.timeout(10_000) }).then(
  (r) => r.ok,
  () => false,
);
describe.skipIf(!reachable && !process.env.CI)("repo lint on the shipped profiles", () => {
  it("finds nothing in data/repos", async () => {
    const findings = await lintProfiles([fileURLToPath(new URL("../../../data/repos", import.meta.url))], {
      records: readLintRecords([`${SHARED}swebench-lite-dev.jsonl`, `${SHARED}swebench-lite-test-half.jsonl`]),
      pypiUrl: "https://pypi.org/pypi",
      cacheDir: fileTempDir(),
    });
    expect(formatFindings(findings)).toBe("");
  }, 300_000);
});
