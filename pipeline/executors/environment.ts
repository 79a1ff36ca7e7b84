import { hashValue } from "../canonical.ts";
import type { EnvironmentRecipe } from "../schemas/repo-profile.ts";
import type { EnvironmentSpec } from "./types.ts";

/**
 * The version of how a recipe becomes an environment (recipe-scripts.ts). It joins every
 * environment's key: a change in how environments are built must not reuse images or virtual
 * environments built the old way. Bump it with any change to what the build scripts install.
 */
export const ENVIRONMENT_SCHEME = 5;

export function environmentSpec(repo: string, recipe: EnvironmentRecipe, asOf: string | null): EnvironmentSpec {
  return { repo, recipe, asOf, key: hashValue({ repo, recipe, asOf, scheme: ENVIRONMENT_SCHEME }) };
}
