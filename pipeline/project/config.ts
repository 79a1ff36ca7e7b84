import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { LineCounter, parseDocument } from "yaml";
import { z } from "zod";
import { StageName } from "../schemas/common.ts";
import { PipelineSettings } from "../engine/settings.ts";
import { firstIssue, InputError } from "../validation.ts";
import type { StageDefinition } from "../engine/stage.ts";

export const PipelineConfig = z.strictObject({
  /** Names the benchmark; used for `manifests/<name>/`. */
  name: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, "expected a lowercase name such as demo or switch-swe-v1"),
  /** The benchmark seed; every random choice derives from it. */
  seed: z.union([z.string().min(1), z.number().int()]).transform(String),
  /** Where artifacts, caches and the lock file go. Relative to the config file. */
  work_dir: z.string().min(1),
  ...PipelineSettings.shape,
  stages: z.partialRecord(StageName, z.unknown()).default({}),
});
export type PipelineConfig = z.infer<typeof PipelineConfig>;

export interface LoadedConfig {
  path: string;
  /** Relative paths inside the config are resolved against this. */
  baseDir: string;
  workDir: string;
  config: PipelineConfig;
}

export class ConfigError extends InputError {
  override name = "ConfigError";
}

/**
 * Loads and validates a pipeline config (YAML or JSON; JSON is YAML). Every stage's section is
 * validated up front by that stage's own schema, so a typo in the last stage fails before the
 * first one spends an hour. Errors name the file, the key, its line and what was expected.
 */
export function loadConfig(path: string, stages: StageDefinition<any>[]): LoadedConfig {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new ConfigError(`${path}: cannot read the config file (${(error as Error).message})`);
  }
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, uniqueKeys: true });
  if (document.errors.length) {
    const first = document.errors[0]!;
    throw new ConfigError(`${path}: line ${first.linePos?.[0]?.line ?? "?"}: not valid YAML or JSON: ${first.message.split("\n")[0]}`);
  }
  const raw = document.toJS() as unknown;
  const lineOf = (keyPath: (string | number)[]): string => {
    const node = document.getIn(keyPath, true) as { range?: [number, number] } | undefined;
    const parentPath = keyPath.slice(0, -1);
    const holder = node ?? (document.getIn(parentPath, true) as { range?: [number, number] } | undefined);
    const offset = holder?.range?.[0];
    return offset === undefined ? "" : ` (line ${lineCounter.linePos(offset).line})`;
  };

  const fail = (error: z.ZodError, input: unknown, prefix: string[]): never => {
    const issue = firstIssue(error, input);
    const keyPath = [...prefix, ...(issue.field ? issue.field.split(".") : [])];
    throw new ConfigError(`${path}: key ${keyPath.join(".") || "(top level)"}${lineOf(keyPath)}: ${issue.message}`);
  };
  const parsed = PipelineConfig.safeParse(raw ?? {});
  if (!parsed.success) fail(parsed.error, raw ?? {}, []);
  const config = parsed.data!;
  for (const name of Object.keys(config.stages) as StageName[]) {
    const stage = stages.find((s) => s.name === name);
    if (!stage) continue; // a section for a stage this build lacks is kept for the build that has it
    const result = stage.configSchema.safeParse(config.stages[name] ?? {});
    if (!result.success) fail(result.error, config.stages[name] ?? {}, ["stages", name]);
  }
  const baseDir = dirname(resolve(path));
  return { path, baseDir, workDir: resolve(baseDir, config.work_dir), config };
}

/** The pipeline-level settings of a loaded config, as the engine takes them. */
export function settingsOf(config: PipelineConfig): PipelineSettings {
  return { profiles_dir: config.profiles_dir, execution: config.execution, session: config.session };
}
