import { z } from "zod";
import { LocalityClass, RepoName, TaskId } from "./common.ts";

/** One session chosen by select: its focus, locality group, interruptions and case seed. */
export const SelectedSession = z.object({
  focus: TaskId,
  repo: RepoName,
  locality: LocalityClass,
  interruptions: z.array(TaskId),
  case_seed: z.string(),
  /** How many of the interruptions have a single request (taken because too few eligible ones had two or more): they cannot be resumed. */
  single_request_interruptions: z.number().int().min(0),
});

/** Stage 7's output. */
export const Selection = z.object({
  seed: z.string(),
  sessions: z.array(SelectedSession),
  /** How often each interruption task is reused across sessions. */
  interruption_reuse: z.record(z.string(), z.number().int().positive()),
  stratification: z.record(z.string(), z.unknown()),
});
export type Selection = z.infer<typeof Selection>;
export type SelectedSession = z.infer<typeof SelectedSession>;
