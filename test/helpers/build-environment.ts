/**
 * A process that builds one environment and nothing else, for tests that kill it mid-build:
 * `node --import tsx build-environment.ts <executor> <work dir> <checkout dir> <recipe JSON>`.
 * The revision layer's base checkout is the directory given (a plain folder is enough).
 */
import { createExecutor, DEFAULT_LIMIT_SETTINGS } from "../../pipeline/executors/index.ts";
import { environmentSpec } from "../../pipeline/executors/environment.ts";
import { EnvironmentRecipe } from "../../pipeline/schemas/repo-profile.ts";
import { silentLogger } from "../../pipeline/logger.ts";

const [executor, workDir, checkoutDir, recipeJson] = process.argv.slice(2) as ["docker" | "local", string, string, string];
const env = environmentSpec("demo-org/killed-build", EnvironmentRecipe.parse(JSON.parse(recipeJson)), "2024-06-01T00:00:00Z");
const built = await createExecutor({ executor, limits: DEFAULT_LIMIT_SETTINGS, python_downloads: "no" }, { workDir, log: silentLogger });
await built.ensureEnvironment(env, { commit: "0".repeat(40), checkout: async () => ({ dir: checkoutDir, dispose: async () => undefined }) });
