import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { draftProfile } from "../../pipeline/cli/commands/repo-init.ts";
import { RepoProfile } from "../../pipeline/schemas/repo-profile.ts";
import { tempDir } from "../helpers/tmp.ts";

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
      "pyproject.toml": '[project]\nname="x"\nrequires-python=">=3.9"\nclassifiers=["Programming Language :: Python :: 3.10","Programming Language :: Python :: 3.12"]\n[project.optional-dependencies]\ntest = ["pytest"]\n',
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
    expect(profile.environment.python).toBe("3.10");
    expect(profile.environment.install).toEqual(["python -m pip install -e '.[test]'", "python -m pip install -r requirements/test.txt"]);
    expect(profile.classification.package_roots).toEqual(["src/xpkg"]);
    expect(profile.classification.overrides).toEqual([{ globs: ["src/xpkg/testing/**"], class: "source", why: expect.stringContaining("public testing helpers") }]);
    expect(profile.classification.docs_dirs).toContain("docs");
    expect(result.notes.join("\n")).toMatch(/tox runs 'pytest -x \{posargs\}'/);
  });

  it("refuses to overwrite a profile without --force", async () => {
    const clone = tree({ "setup.py": "python_requires='>=3.7'\n", "pkg/__init__.py": "" });
    const out = join(tempDir(), "a__b.json");
    await draftProfile("a/b", clone, { out });
    await expect(draftProfile("a/b", clone, { out })).rejects.toThrow(/exists; pass --force/);
    const again = await draftProfile("a/b", clone, { out, force: true });
    expect(again.profile.environment.python).toBe("3.8");
  });
});
