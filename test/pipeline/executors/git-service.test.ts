import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { GitService, gitServiceAuthEnv } from "../../../pipeline/executors/git-service.ts";
import { git, GitError, MirrorCache } from "../../../pipeline/git.ts";
import { silentLogger } from "../../../pipeline/logger.ts";
import { repoWithChange } from "../../helpers/git-repo.ts";
import { tempDir } from "../../helpers/tmp.ts";

/** The coordinator's side: a bare mirror of a repository with a commit no ref points at. */
async function coordinatorMirror() {
  const repo = await repoWithChange({ "a.py": "x = 1\n" }, { "a.py": "x = 2\n" });
  const dir = tempDir();
  const mirror = await new MirrorCache(join(dir, "git")).ensure("org/lib", repo.dir, repo.base);
  // A commit reachable from no ref (a dropped branch's, say): workers still fetch it by id.
  const tree = (await git([`--git-dir=${mirror}`, "rev-parse", `${repo.base}^{tree}`])).trim();
  const dangling = (
    await git([`--git-dir=${mirror}`, "commit-tree", tree, "-m", "dangling"], {
      env: { GIT_AUTHOR_NAME: "T", GIT_AUTHOR_EMAIL: "t@t.invalid", GIT_COMMITTER_NAME: "T", GIT_COMMITTER_EMAIL: "t@t.invalid" },
    })
  ).trim();
  return { mirror, base: repo.base, dangling };
}

describe("the git service (the coordinator's repositories over smart HTTP, read-only)", () => {
  it("serves a mirror by name with its token: clones, fetches a commit no ref points at, refuses pushes, strangers and unknown names", async () => {
    const { mirror, base, dangling } = await coordinatorMirror();
    const service = await GitService.start({ listen: "127.0.0.1:0", token: "s3cret", log: silentLogger });
    try {
      const url = service.serve(mirror);
      // The URL names the repository, never the directory it lives in.
      expect(url).toBe(`${service.url}/org__lib.git`);
      expect(url).not.toContain(mirror);
      const worker = new MirrorCache(join(tempDir(), "git"), (source) => (source.startsWith(service.url) ? gitServiceAuthEnv("s3cret") : {}));
      const cloned = await worker.ensure("org/lib", url, base);
      expect((await git([`--git-dir=${cloned}`, "cat-file", "-t", base])).trim()).toBe("commit");
      expect(service.counts.fetches).toBeGreaterThan(0);
      // By id, as a job names it.
      const scratch = tempDir();
      await git(["init", "--quiet", "--bare", scratch]);
      await git([`--git-dir=${scratch}`, "fetch", "--quiet", url, dangling], { env: gitServiceAuthEnv("s3cret") });
      expect((await git([`--git-dir=${scratch}`, "cat-file", "-t", dangling])).trim()).toBe("commit");

      // No token, or another one: refused, with git's own words.
      const stranger = new MirrorCache(join(tempDir(), "git"));
      await expect(stranger.ensure("org/lib", url, base)).rejects.toThrow(GitError);
      const wrong = new MirrorCache(join(tempDir(), "git"), () => gitServiceAuthEnv("guess"));
      await expect(wrong.ensure("org/lib", url, base)).rejects.toThrow(/could not read Username|Authentication failed/);
      // A push, with the token, is refused: the service is read-only.
      await git([`--git-dir=${scratch}`, "update-ref", "refs/heads/pushed", dangling]);
      await expect(git([`--git-dir=${scratch}`, "push", url, "refs/heads/pushed"], { env: gitServiceAuthEnv("s3cret") })).rejects.toThrow(GitError);
      expect((await git([`--git-dir=${mirror}`, "for-each-ref", "refs/heads/pushed"])).trim()).toBe("");
      // Only what was served: a name it was not given, or a path out of it, is not found.
      for (const path of ["/other.git/info/refs?service=git-upload-pack", "/..%2F..%2Fetc/info/refs?service=git-upload-pack", "/org__lib.git/HEAD"]) {
        const answer = await fetch(service.url + path, { headers: { authorization: "Bearer s3cret" } });
        expect(answer.status, path).toBe(404);
      }
      const push = await fetch(`${url}/info/refs?service=git-receive-pack`, { headers: { authorization: "Bearer s3cret" } });
      expect(push.status).toBe(403);
      const basic = await fetch(`${url}/info/refs?service=git-upload-pack`, {
        headers: { authorization: `Basic ${Buffer.from("x:s3cret").toString("base64")}` },
      });
      expect(basic.status).toBe(200);
      expect(basic.headers.get("content-type")).toBe("application/x-git-upload-pack-advertisement");
    } finally {
      await service.close();
    }
  });

  it("will not serve on an address other machines reach without a token, and says why it cannot listen", async () => {
    await expect(GitService.start({ listen: "0.0.0.0:0", log: silentLogger })).rejects.toThrow(/without a token: set execution\.queue\.git_service\.token_env/);
    await expect(GitService.start({ listen: "nowhere", log: silentLogger })).rejects.toThrow(/is not host:port/);
    const first = await GitService.start({ listen: "127.0.0.1:0", log: silentLogger });
    try {
      const port = new URL(first.url).port;
      await expect(GitService.start({ listen: `127.0.0.1:${port}`, log: silentLogger })).rejects.toThrow(
        /cannot listen on 127\.0\.0\.1:\d+: the address is in use/,
      );
    } finally {
      await first.close();
    }
  });
});
