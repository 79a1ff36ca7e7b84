import { z } from "zod";
import { CommitSha, RepoName, TaskId } from "./common.ts";
import { EnvironmentRecipe } from "./repo-profile.ts";
import { Request } from "./task.ts";

/** One line of `manifest.jsonl`: a task the benchmark uses, fully described (SPEC §2.10). */
export const ManifestEntry = z.object({
  task_id: TaskId,
  repo: RepoName,
  /** Where to clone the repository: a URL, or a local path relative to the manifest's directory (from the profile). */
  clone_url: z.string().min(1).optional(),
  source: z.object({ kind: z.enum(["swebench", "github"]), ids: z.array(z.string()), urls: z.array(z.string()) }),
  base_commit: CommitSha,
  requests: z.array(Request),
  environment: EnvironmentRecipe,
  tests: z.object({ fail_to_pass: z.array(z.string()), pass_to_pass: z.array(z.string()) }),
  source_files: z.array(z.string()),
  source_dirs: z.array(z.string()),
  /** Requirement → test links kept for auditors. */
  requirement_tests: z.array(z.object({ test: z.string(), stages: z.array(z.number().int().positive()) })),
  validation: z.object({ passed: z.boolean(), checks: z.array(z.object({ check: z.string(), passed: z.boolean() })) }),
  roles: z.array(z.enum(["focus", "interruption"])),
});
export type ManifestEntry = z.infer<typeof ManifestEntry>;
