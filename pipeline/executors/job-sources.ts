import { dirname } from "node:path";
import { hashValue } from "../canonical.ts";
import { RunAbort } from "../failures.ts";
import { git, isRemoteCloneUrl } from "../git.ts";
import type { Logger } from "../logger.ts";
import type { CheckoutOrigin } from "../checkouts/checkout.ts";
import { GitService, type GitServiceSettings } from "./git-service.ts";
import { assertNoCredentials, type JobSource } from "./queue-protocol.ts";

/**
 * Where the queue's workers get a job's repository: the clone source its mirror records, or this
 * run's git service when that source is a path of this machine (or the settings serve all).
 */
export class JobSources {
  private readonly originUrls = new Map<string, Promise<string>>();
  private gitService?: Promise<GitService>;

  constructor(
    private readonly settings: GitServiceSettings,
    private readonly prefix: string,
    private readonly log: Logger,
  ) {}

  /** Where the workers clone from: the clone source recorded in the mirror the checkout came from. */
  async sourceFor(repo: string, origin: CheckoutOrigin): Promise<JobSource> {
    let url = this.originUrls.get(origin.mirror);
    if (!url) {
      url = git([`--git-dir=${origin.mirror}`, "config", "--get", "remote.origin.url"]).then((u) => u.trim());
      this.originUrls.set(origin.mirror, url);
    }
    const clone = await url;
    const settings = this.settings;
    // A path of this machine (file:// is one too) means nothing on another host: the workers fetch
    // the coordinator's mirror, which holds the commit, from the git service instead.
    if (!isRemoteCloneUrl(clone) || /^file:/i.test(clone) || settings.serve === "all") {
      const service = await this.startGitService(dirname(origin.mirror));
      return { repo, clone_url: service.serve(origin.mirror), served: true, commit: origin.commit, patches: origin.patches };
    }
    assertNoCredentials(clone);
    return { repo, clone_url: clone, served: false, commit: origin.commit, patches: origin.patches };
  }

  /** The git service, started the first time a job needs it; its token from the variable the settings name. */
  private startGitService(mirrorRoot: string): Promise<GitService> {
    const settings = this.settings;
    this.gitService ??= (async () => {
      let token: string | undefined;
      if (settings.token_env) {
        token = process.env[settings.token_env];
        if (!token)
          throw new RunAbort(
            `execution.queue.git_service.token_env names ${settings.token_env}, which is not set (or empty) here: export the token the workers were given`,
          );
      }
      // A service that cannot start (its address taken, say) leaves no job a way to its repositories.
      const start = (listen: string) => GitService.start({ listen, url: settings.url, token, log: this.log });
      const fail = (error: Error) => {
        throw new RunAbort(error.message);
      };
      // Port 0: one derived from where the mirrors live, so that a coordinator restarted on the same
      // work gives the same URLs (its jobs keep their ids, and jobs already queued stay valid);
      // any free port when that one is taken.
      const stable = settings.listen.replace(
        /:0$/,
        `:${20000 + (Number.parseInt(hashValue({ mirrors: mirrorRoot, prefix: this.prefix }).slice(0, 8), 16) % 20000)}`,
      );
      const service =
        stable === settings.listen ? await start(settings.listen).catch(fail) : await start(stable).catch(() => start(settings.listen).catch(fail));
      this.log.info(`queue: serving this run's repositories to the workers at ${service.url}${token ? " (with a token)" : ""}`);
      return service;
    })();
    return this.gitService;
  }

  /** Stops the git service, if one was started. */
  async close(): Promise<void> {
    if (this.gitService) await (await this.gitService.catch(() => undefined))?.close();
  }
}
