import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { sha256 } from "../canonical.ts";
import { isRemoteCloneUrl } from "../git.ts";
import { RepoProfile } from "../schemas/repo-profile.ts";
import { describeFirstIssue, readReviewed } from "../validation.ts";
import { describeInvalid } from "../decode.ts";
import type { ExternalFile } from "../decode.ts";

export interface LoadedProfile {
  file: string;
  sha256: string;
  profile: RepoProfile;
}

export interface ProfileSet {
  profiles: Map<string, LoadedProfile>;
  /** Profiles that failed validation, by repository (when the file name tells it) with the reason. */
  errors: Map<string, string>;
  /** The directory they were read from, as the config names it (for messages). */
  dir?: string;
}

/** The file name a repository's profile must have: `owner__name.json`. */
export function profileFileName(repo: string): string {
  return `${repo.replace("/", "__")}.json`;
}

/**
 * Validates repository profiles. A bad profile does not stop the others: its repository's
 * records are rejected with the error, which names the file and field.
 */
/**
 * The profiles of a directory named in a config (`dir` as written there, resolved against
 * `baseDir`), read the way the engine hands them to a stage: paths relative to the config.
 */
export function loadProfilesDir(dir: string, baseDir: string): ProfileSet & { dir: string } {
  const absolute = resolve(baseDir, dir);
  const names = existsSync(absolute)
    ? readdirSync(absolute)
        .filter((f) => f.endsWith(".json"))
        .sort()
    : [];
  return { dir: absolute, ...loadProfiles(names.map((f) => ({ path: join(dir, f), text: readFileSync(join(absolute, f), "utf8") }))) };
}

export function loadProfiles(files: ExternalFile[]): ProfileSet {
  const profiles = new Map<string, LoadedProfile>();
  const errors = new Map<string, string>();
  for (const file of files) {
    if (!file.path.endsWith(".json")) continue;
    const repoFromName = basename(file.path, ".json").replace("__", "/");
    if (file.invalid?.length) {
      errors.set(repoFromName, `${file.path}: not valid UTF-8 at ${describeInvalid(file.invalid)}`);
      continue;
    }
    let raw: unknown;
    try {
      raw = JSON.parse(file.text);
    } catch (error) {
      errors.set(repoFromName, `${file.path}: not valid JSON (${(error as Error).message})`);
      continue;
    }
    const parsed = RepoProfile.safeParse(raw);
    if (!parsed.success) {
      errors.set(repoFromName, `${file.path}: ${describeFirstIssue(parsed.error, raw)}`);
      continue;
    }
    if (basename(file.path) !== profileFileName(parsed.data.repo)) {
      errors.set(repoFromName, `${file.path}: field repo: names ${parsed.data.repo}, so the file must be called ${profileFileName(parsed.data.repo)}`);
      continue;
    }
    profiles.set(parsed.data.repo, { file: file.path, sha256: sha256(file.text), profile: parsed.data });
  }
  return { profiles, errors };
}

/**
 * Where to clone a repository from: the profile's clone_url (a URL as it is, a local path relative
 * to the profile file), or GitHub's clone URL when the profile names none.
 * `resolvePath` resolves the profile's own path (relative to the config) to an absolute one.
 */
export function cloneSourceOf(repo: string, loaded: LoadedProfile | undefined, resolvePath: (path: string) => string): string {
  const url = loaded?.profile.clone_url;
  if (!loaded || !url) return `https://github.com/${repo}.git`;
  if (isRemoteCloneUrl(url)) return url;
  return resolve(dirname(resolvePath(loaded.file)), url);
}

/** A profile's file, validated: a clear error naming the file and field when it is not one. */
export function readProfile(path: string): RepoProfile {
  return readReviewed(path, RepoProfile, { format: "json" });
}
