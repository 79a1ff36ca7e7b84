import { existsSync, readdirSync, rmSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { transientCause } from "../../../pipeline/failures.ts";
import { freshCheckout } from "../../../pipeline/checkouts/checkout.ts";
import { CommitNotInSource, git, IncompleteSource, MirrorCache } from "../../../pipeline/git.ts";
import { repoWithChange } from "../../helpers/git-repo.ts";
import { tempDir } from "../../helpers/tmp.ts";

describe("checkouts from an incomplete source", () => {
  it("refuses to check out a commit whose file contents the mirror lacks, naming the files, instead of leaving them out", async () => {
    const repo = await repoWithChange({ "pkg/a.py": "A = 1\n", "data/big.bin": "x".repeat(5000) }, { "pkg/a.py": "A = 2\n" });
    // a mirror that lost one blob, as a partial clone or a snapshot without large files has
    const mirror = join(tempDir(), "m.git");
    await git(["init", "--quiet", "--bare", mirror]);
    // pushed objects are kept loose (below the unpack limit), so one of them can be taken away
    await git([`--git-dir=${mirror}`, "config", "receive.unpackLimit", "100000"]);
    await git(["push", "--quiet", mirror, "main"], { cwd: repo.dir });
    const blob = (await git([`--git-dir=${mirror}`, "rev-parse", `${repo.base}:data/big.bin`])).trim();
    rmSync(join(mirror, "objects", blob.slice(0, 2), blob.slice(2)), { force: true });
    await expect(git([`--git-dir=${mirror}`, "cat-file", "-e", blob])).rejects.toThrow();
    const failure = freshCheckout(mirror, repo.base, [], tempDir());
    await expect(failure).rejects.toBeInstanceOf(IncompleteSource);
    await expect(failure).rejects.toThrow(/lacks the contents of 1 file\(s\) of .*\(data\/big\.bin\)/);
    // the next commit has the same file, so it cannot be checked out whole either
    await expect(freshCheckout(mirror, repo.head, [], tempDir())).rejects.toBeInstanceOf(IncompleteSource);
  });

  it("says which commits a clone source does not have", async () => {
    const repo = await repoWithChange({ "a.txt": "1\n" }, { "a.txt": "2\n" });
    const cache = new MirrorCache(tempDir());
    const absent = "f".repeat(40);
    await expect(cache.ensure("o/r", repo.dir, absent)).rejects.toBeInstanceOf(CommitNotInSource);
    expect(await cache.ensureSome("o/r", repo.dir, [repo.base, absent])).toMatchObject({ missing: [absent] });
  });
});

describe("a clone source that hangs", () => {
  // HTTP has git's own low-speed limit; git:// (like ssh) has none, and is bounded by git's silence.
  it.each(["http", "git"])(
    "gives up a clone from a %s server that accepts and never answers, as a transient fact about the server",
    async (scheme) => {
      const held: Socket[] = [];
      const server = createServer((socket) => held.push(socket));
      await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
      const { port } = server.address() as { port: number };
      try {
        const cache = new MirrorCache(tempDir(), () => ({}), 3);
        const source = `${scheme}://127.0.0.1:${port}/o/r.git`;
        const failure = await cache.ensure("o/r", source, "f".repeat(40)).then(
          () => undefined,
          (error: unknown) => error,
        );
        expect(transientCause(failure)).toBe(`git clone of ${source} stalled: the server sent nothing for 3 s`);
        // Nothing half-cloned is left where a mirror would be, nor beside it.
        expect(existsSync(join(cache.pathFor("o/r"), "HEAD"))).toBe(false);
        expect(readdirSync(cache.root)).toEqual([]);
      } finally {
        for (const socket of held) socket.destroy();
        server.close();
      }
      // Bounded so that a regression fails here instead of holding the suite (it takes seconds).
    },
    300_000,
  );
});

describe("local copies of repositories (--mirrors, SWITCH_SWE_MIRRORS)", () => {
  it("clones from a copy at hand instead of the source, which is never asked", async () => {
    const { gitDir, head } = await repoWithChange({ "a.py": "x\n" }, { "a.py": "y\n" });
    const copies = tempDir();
    await git(["clone", "--quiet", "--bare", gitDir, join(copies, "acme__calc.git")]);
    const cache = new MirrorCache(tempDir());
    cache.localCopies = copies;
    // No server listens on port 9 of loopback: a clone from this source would fail at once.
    const mirror = await cache.ensure("acme/calc", "http://127.0.0.1:9/acme/calc.git", head);
    expect((await git([`--git-dir=${mirror}`, "rev-parse", "HEAD"])).trim()).toBe(head);
    // A repository with no copy there still goes to its own source.
    await expect(cache.ensure("acme/other", "http://127.0.0.1:9/acme/other.git", head)).rejects.toThrow(/127\.0\.0\.1:9/);
  });
});
