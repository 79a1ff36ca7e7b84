import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { formatSummary } from "../../../pipeline/engine/engine.ts";
import { freshCheckout } from "../../../pipeline/checkouts/checkout.ts";
import { blobId, completeSources } from "../../../pipeline/checkouts/complete-source.ts";
import { git } from "../../../pipeline/git.ts";
import { repoWithChange } from "../../helpers/git-repo.ts";
import { runLineStage } from "../../helpers/line-stage.ts";
import { tempDir } from "../../helpers/tmp.ts";

/**
 * A snapshot without its large files (SPEC §2.3's incomplete_source), completed from a published
 * archive that holds the same files, on real git and real tar: only a file whose git blob id is
 * the one the commit names is written, and a stage that could not check the commit out takes it
 * up on its next run, with no --force.
 */
const DATA = Buffer.from(Array.from({ length: 6000 }, (_, i) => (i * 7) % 251));

/** A mirror of a two-commit repository that lost the blob of data/table.bin, and that blob's id. */
async function incompleteMirror() {
  const repo = await repoWithChange({ "pkg/a.py": "A = 1\n", "pkg/data/table.bin": DATA }, { "pkg/a.py": "A = 2\n" });
  const mirror = join(tempDir(), "m.git");
  await git(["init", "--quiet", "--bare", mirror]);
  // Pushed objects are kept loose (below the unpack limit), so one of them can be taken away.
  await git([`--git-dir=${mirror}`, "config", "receive.unpackLimit", "100000"]);
  await git(["push", "--quiet", mirror, "main"], { cwd: repo.dir });
  const blob = (await git([`--git-dir=${mirror}`, "rev-parse", `${repo.base}:pkg/data/table.bin`])).trim();
  rmSync(join(mirror, "objects", blob.slice(0, 2), blob.slice(2)));
  return { repo, mirror, blob };
}

/** A release's source archive: the data file under the release's own prefix, beside a file of the same name and other contents. */
async function sdist() {
  const dir = tempDir();
  mkdirSync(join(dir, "pkg-1.0", "pkg", "data"), { recursive: true });
  mkdirSync(join(dir, "pkg-1.0", "old"), { recursive: true });
  writeFileSync(join(dir, "pkg-1.0", "pkg", "data", "table.bin"), DATA);
  writeFileSync(join(dir, "pkg-1.0", "old", "table.bin"), Buffer.concat([DATA, Buffer.from("x")]));
  const archive = join(dir, "pkg-1.0.tar.gz");
  execFileSync("tar", ["-czf", archive, "-C", dir, "pkg-1.0"]);
  return archive;
}

/** One mirror completed: completeSources over it alone. */
const completeOne = async (mirror: string, commits: string[], sources: string[]) => (await completeSources([{ mirror, commits }], sources))[0]!;

describe("completing a source that lacks file contents", () => {
  it("writes from an archive only the file whose blob id the commits name, after which the commit checks out whole", async () => {
    const { repo, mirror, blob } = await incompleteMirror();
    expect(blobId(DATA)).toBe(blob);
    const before = await completeOne(mirror, [repo.base, repo.head], [tempDir()]);
    expect(before).toMatchObject({ missing: 1, filled: [], left: [{ id: blob, paths: ["pkg/data/table.bin"] }] });

    const archive = await sdist();
    const done = await completeOne(mirror, [repo.base, repo.head], [archive]);
    expect(done).toEqual({ mirror, missing: 1, filled: [{ id: blob, paths: ["pkg/data/table.bin"], from: archive }], left: [] });
    expect(Buffer.from(await git([`--git-dir=${mirror}`, "cat-file", "blob", blob]), "latin1")).toHaveLength(DATA.length);
    const checkout = await freshCheckout(mirror, repo.base, [], tempDir());
    await checkout.dispose();
    // Nothing missing any more: no source is read (this one does not exist).
    expect(await completeOne(mirror, [repo.base], [join(tempDir(), "absent.tar.gz")])).toMatchObject({ missing: 0, filled: [], left: [] });
  });

  it("completes every mirror from one reading of the sources, each only with what it lacks", async () => {
    const [first, second] = [await incompleteMirror(), await incompleteMirror()];
    const whole = await incompleteMirror();
    await git([`--git-dir=${whole.mirror}`, "hash-object", "-w", "--stdin"], { input: DATA });
    const archive = await sdist();
    const done = await completeSources(
      [first, whole, second].map(({ mirror, repo }) => ({ mirror, commits: [repo.base] })),
      [archive],
    );
    expect(done.map((d) => [d.mirror, d.missing, d.filled.length, d.left.length])).toEqual([
      [first.mirror, 1, 1, 0],
      [whole.mirror, 0, 0, 0],
      [second.mirror, 1, 1, 0],
    ]);
    for (const { mirror, repo } of [first, second]) await (await freshCheckout(mirror, repo.base, [], tempDir())).dispose();
  });

  it("refuses a source that is neither a directory nor a tar archive, naming it", async () => {
    const { repo, mirror } = await incompleteMirror();
    const wheel = join(tempDir(), "pkg-1.0-py3-none-any.whl");
    writeFileSync(wheel, "PK");
    await expect(completeOne(mirror, [repo.base], [wheel])).rejects.toThrow(`--from ${wheel}: not a directory or a tar archive`);
    await expect(completeOne(mirror, [repo.base], [join(tempDir(), "none")])).rejects.toThrow(/no such file or directory/);
  });

  it("a stage's record that met the incomplete source is rejected and tried again on the next run, taken up once the source is complete", async () => {
    const { repo, mirror } = await incompleteMirror();
    const dir = tempDir();
    mkdirSync(join(dir, "repos"));
    writeFileSync(join(dir, "commits.txt"), `${repo.base}\n`);
    const run = () =>
      runLineStage(dir, "oracle", "commits.txt", async (_ctx, commit) => {
        const checkout = await freshCheckout(mirror, commit, [], tempDir());
        await checkout.dispose();
        return { id: commit, value: 1 };
      });
    const first = await run();
    expect(first.summary.stages[0], formatSummary(first.summary)).toMatchObject({ out: 0, rejected: 1, by_reason: { incomplete_source: 1 } });
    expect(first.rejects[0].message).toContain("switch-swe mirrors complete");
    // Not a transient failure: the stage is complete, its reject said.
    expect(first.summary.stages[0]!.status).not.toBe("incomplete");
    await completeOne(mirror, [repo.base], [await sdist()]);
    const second = await run();
    expect(second.summary.stages[0], formatSummary(second.summary)).toMatchObject({ out: 1, rejected: 0 });
  });
});
