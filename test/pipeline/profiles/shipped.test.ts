import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { loadProfiles } from "../../../pipeline/profiles/load.ts";
import { loadConfig } from "../../../pipeline/project/config.ts";
import { BUILT_STAGES } from "../../../stages/index.ts";

const DIR = fileURLToPath(new URL("../../../data/repos/", import.meta.url));
/** Every repository of SWE-bench Lite's dev and test splits. */
const SWEBENCH_LITE = [
  "astropy/astropy",
  "django/django",
  "pallets/flask",
  "matplotlib/matplotlib",
  "pylint-dev/pylint",
  "pytest-dev/pytest",
  "psf/requests",
  "scikit-learn/scikit-learn",
  "mwaskom/seaborn",
  "sphinx-doc/sphinx",
  "sympy/sympy",
  "pydata/xarray",
  "pylint-dev/astroid",
  "marshmallow-code/marshmallow",
  "pvlib/pvlib-python",
  "pydicom/pydicom",
  "pyvista/pyvista",
  "sqlfluff/sqlfluff",
];

describe("the shipped repository profiles", () => {
  const files = readdirSync(DIR)
    .filter((f) => f.endsWith(".json"))
    .sort();
  const loaded = loadProfiles(files.map((f) => ({ path: join(DIR, f), text: readFileSync(join(DIR, f), "utf8") })));

  it("all validate, and cover every SWE-bench Lite repository and at least one more", () => {
    expect([...loaded.errors]).toEqual([]);
    const repos = [...loaded.profiles.keys()].sort();
    expect(repos).toEqual(expect.arrayContaining(SWEBENCH_LITE));
    expect(repos.length).toBeGreaterThanOrEqual(19);
  });

  it("each says what it was checked on here, with the date and F2P agreement, or why it never was", () => {
    for (const [repo, { profile }] of loaded.profiles) {
      expect(profile.verified.length > 0 || Boolean(profile.unverified), repo).toBe(true);
      expect(profile.verified.length > 0 && Boolean(profile.unverified), repo).toBe(false);
      // A verified task is a task of that repository.
      for (const v of profile.verified) expect(v.task.startsWith(`${repo.replace("/", "__")}-`), `${repo}: ${v.task}`).toBe(true);
    }
  });

  it("are what the v1 benchmark config mines: it validates, and every repository it names has a profile", () => {
    const loadedConfig = loadConfig(fileURLToPath(new URL("../../../data/benchmarks/switch-swe-v1.yaml", import.meta.url)), BUILT_STAGES);
    const mine = loadedConfig.config.stages.mine as { github: { repos: { repo: string }[] } };
    const mined = mine.github.repos.map((r) => r.repo).sort();
    expect(mined).toEqual([...loaded.profiles.keys()].sort());
    expect(loadedConfig.config.stages.select as { near: number; far: number }).toMatchObject({ near: 100, far: 100 });
  });
});
