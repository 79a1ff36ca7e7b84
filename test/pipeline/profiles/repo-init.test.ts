import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { draftProfile, readDraftTasks } from "../../../pipeline/profiles/draft.ts";
import { recipeFor } from "../../../pipeline/profiles/recipes.ts";
import { git } from "../../../pipeline/git.ts";
import { RepoProfile } from "../../../pipeline/schemas/repo-profile.ts";
import { tempDir } from "../../helpers/tmp.ts";

function tree(files: Record<string, string>): string {
  const dir = tempDir();
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

describe("repo init", () => {
  it("drafts a valid profile from a src-layout project with a test extra", async () => {
    const clone = tree({
      "pyproject.toml":
        '[project]\nname="x"\nrequires-python=">=3.9"\nclassifiers=["Programming Language :: Python :: 3.10","Programming Language :: Python :: 3.12"]\n[project.optional-dependencies]\ntest = ["pytest"]\n',
      "src/xpkg/__init__.py": "",
      "src/xpkg/testing/__init__.py": "",
      "src/xpkg/testing/helpers.py": "",
      "tests/test_a.py": "",
      "docs/index.rst": "",
      "tox.ini": "[testenv]\ncommands = pytest -x {posargs}\n",
      "requirements/test.txt": "hypothesis\n",
    });
    const out = join(tempDir(), "x__y.json");
    const result = await draftProfile("x/y", clone, { out });
    const profile = RepoProfile.parse(JSON.parse(readFileSync(out, "utf8")));
    expect(profile.repo).toBe("x/y");
    // 3.10 and 3.12 are classified; of the versions the executors offer without a download, 3.11
    expect(profile.environment.python).toBe("3.11");
    expect(profile.environment.project).toEqual({ editable: true, extras: ["test"] });
    expect(profile.environment.requirements_files).toEqual(["requirements/test.txt"]);
    expect(profile.environment.test_runner).toBe("pytest");
    expect(profile.classification.package_roots).toEqual(["src/xpkg"]);
    expect(profile.classification.overrides).toEqual([
      { globs: ["src/xpkg/testing/**"], class: "source", why: expect.stringContaining("public testing helpers") },
    ]);
    expect(profile.classification.docs_dirs).toContain("docs");
    expect(result.notes.join("\n")).toMatch(/tox runs 'pytest -x \{posargs\}'/);
  });

  it("refuses to overwrite a profile without --force", async () => {
    const clone = tree({ "setup.py": "python_requires='>=3.7'\n", "pkg/__init__.py": "" });
    const out = join(tempDir(), "a__b.json");
    await draftProfile("a/b", clone, { out });
    await expect(draftProfile("a/b", clone, { out })).rejects.toThrow(/exists; pass --force/);
    const again = await draftProfile("a/b", clone, { out, force: true });
    // requires-python >=3.7: the oldest offered version above it
    expect(again.profile.environment.python).toBe("3.9");
    expect(again.notes.join("\n")).toMatch(/3\.9 is not among them/);
  });

  it("drafts from the tasks' own base revisions, one recipe per era, not from HEAD", async () => {
    const clone = tree({});
    const commit = async (files: Record<string, string>, message: string) => {
      for (const [path, text] of Object.entries(files)) {
        mkdirSync(join(clone, path, ".."), { recursive: true });
        writeFileSync(join(clone, path), text);
      }
      await git(["add", "-A"], { cwd: clone });
      await git(["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message], { cwd: clone });
      return (await git(["rev-parse", "HEAD"], { cwd: clone })).trim();
    };
    await git(["init", "-q"], { cwd: clone });
    const old = await commit(
      {
        "setup.py": "classifiers=['Programming Language :: Python :: 3.8', 'Programming Language :: Python :: 3.9']\nextras_require={'testing': ['pytest']}\n",
        "pkg/__init__.py": "",
        "tests/test_a.py": "",
      },
      "old",
    );
    const middle = await commit({ "pkg/a.py": "" }, "middle");
    const recent = await commit(
      {
        "setup.py": "",
        "pyproject.toml": '[project]\nname="x"\nclassifiers=["Programming Language :: Python :: 3.11", "Programming Language :: Python :: 3.12"]\n',
        "requirements-dev.txt": "hypothesis\n",
      },
      "recent",
    );
    await commit({ "pyproject.toml": '[project]\nname="x"\nrequires-python=">=3.13"\n' }, "head");
    const tasksFile = join(tempDir(), "tasks.jsonl");
    writeFileSync(
      tasksFile,
      [
        { instance_id: "x__y-1", base_commit: old, version: "1.0" },
        { instance_id: "x__y-2", base_commit: middle, version: "1.0" },
        { instance_id: "x__y-3", base_commit: recent, version: "2.0" },
      ]
        .map((r) => JSON.stringify(r))
        .join("\n") + "\n",
    );
    const out = join(tempDir(), "x__y.json");
    const result = await draftProfile("x/y", clone, { out, tasks: readDraftTasks(tasksFile) });
    expect(result.profile.environment).toMatchObject({ python: "3.9", project: { extras: ["testing"] }, requirements_files: [] });
    expect(result.profile.environment_overrides).toEqual([
      {
        versions: ["2.0"],
        tasks: [],
        pythons: [],
        recipe: { python: "3.11", project: { editable: true, extras: [] }, requirements_files: ["requirements-dev.txt"] },
        why: expect.stringContaining(recent.slice(0, 12)),
      },
    ]);
    expect(recipeFor(result.profile, { id: "x__y-3", version: "2.0" }).python).toBe("3.11");
    expect(result.notes.join("\n")).toMatch(new RegExp(`from ${old.slice(0, 12)} .* to ${recent.slice(0, 12)}`));
    await expect(draftProfile("x/y", clone, { out, force: true, tasks: [{ id: "x__y-9", baseCommit: "0".repeat(40) }] })).rejects.toThrow(
      /x__y-9: base commit 0{40} is not in the clone/,
    );
  });
});
