import { z } from "zod";
import { CommitSha, LocalityClass, RepoName, TaskId } from "./common.ts";
import { DerivedCheckout } from "./selection.ts";

/**
 * What the agent is sent: the repository, the active checkout and the cleaned requirement text,
 * nothing else (SPEC §2.8). Task ids and roles stay in the session's metadata, not the message.
 */
export const RequestMessage = z
  .object({
    repository: RepoName,
    checkout: z.string().regex(/^\/[^\0]+$/, "expected an absolute checkout path"),
    text: z.string().min(1),
  })
  .strict();

export const ScheduledRequest = z.object({
  task_id: TaskId,
  /** 1-based stage of `task_id`; absent for the finalization request. */
  stage: z.number().int().positive().optional(),
  finalization: z.boolean(),
  message: RequestMessage,
});
export type ScheduledRequest = z.infer<typeof ScheduledRequest>;

/** A session's two conditions: control (the focus task's requests alone) and switched (with the interruptions). */
export const Condition = z.enum(["control", "switched"]);
export type Condition = z.infer<typeof Condition>;

export const SessionSpec = z.object({
  session_id: z.string(),
  benchmark: z.string(),
  repo: RepoName,
  /**
   * Where to clone the repository (every checkout's base commit is in it): a URL, or a local path
   * (a bundle or a clone) relative to this file's directory. Written by emit, from the profile,
   * so a runner on another machine needs nothing else to provision the checkouts.
   */
  clone_url: z.string().min(1).optional(),
  focus: TaskId,
  interruptions: z.array(TaskId),
  locality: LocalityClass,
  seeds: z.object({ benchmark: z.string(), case: z.string() }),
  checkouts: z.array(
    z.object({
      path: z.string(),
      task_id: TaskId,
      base_commit: z.string(),
      /**
       * A checkout whose base holds the focus's fix, with that fix reversed out (SPEC §2.7, the
       * revert strategy): its files are `commit`, the base with the upstream change of each task
       * of `without` reversed (their held-out `upstream.patch`; files named in `rolled_back` set
       * back whole to their version at its `to`), which a runner makes again and checks against
       * this id (pipeline/checkouts/derived.ts).
       */
      derived: DerivedCheckout.optional(),
    }),
  ),
  budget: z.object({
    per_request_seconds: z.number().int().positive(),
    timeout_continuations: z.number().int().nonnegative(),
  }),
  conditions: z.object({
    control: z.array(ScheduledRequest),
    switched: z.array(ScheduledRequest),
  }),
});
export type SessionSpec = z.infer<typeof SessionSpec>;

/** `sessions/index.json` of an emitted benchmark: its sessions, the fixed denominators of every table. */
export const SessionIndex = z.object({
  benchmark: z.string(),
  sessions: z.array(
    z.object({
      session_id: z.string(),
      file: z.string().regex(/^[^/]+\.json$/, "expected a file name in the sessions directory"),
      focus: TaskId,
      locality: LocalityClass,
    }),
  ),
});
export type SessionIndex = z.infer<typeof SessionIndex>;
