import { existsSync, readFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { writeFileAtomic } from "../atomic.ts";
import { TransientFailure } from "../failures.ts";
import { normaliseName } from "./pep440.ts";

/**
 * What the lint needs of a project on PyPI, from its JSON API (`<index>/<name>/json`): each
 * release with the time its first file was uploaded (uv's --exclude-newer compares upload times),
 * whether every file of it was yanked, whether it has an sdist, and the Python it requires.
 */
export const PypiRelease = z.strictObject({
  version: z.string(),
  uploaded: z.string(),
  yanked: z.boolean(),
  sdist: z.boolean(),
  /** The Requires-Python of its files, when they say one. */
  requires_python: z.string().nullable(),
});
export type PypiRelease = z.infer<typeof PypiRelease>;

const CachedProject = z.strictObject({ name: z.string(), fetched_at: z.string(), releases: z.array(PypiRelease).nullable() });

/** PyPI could not be asked (unreachable, an error page): nothing about the project is known. */
export class PypiUnreachable extends TransientFailure {
  override name = "PypiUnreachable";
}

/** The JSON API's answer for one project, reduced to what PypiRelease keeps. */
export function releasesOf(json: {
  releases?: Record<
    string,
    { upload_time_iso_8601?: string; upload_time?: string; yanked?: boolean; packagetype?: string; filename?: string; requires_python?: string | null }[]
  >;
}): PypiRelease[] {
  const out: PypiRelease[] = [];
  for (const [version, files] of Object.entries(json.releases ?? {})) {
    if (!files.length) continue;
    const times = files
      .map((f) => f.upload_time_iso_8601 ?? (f.upload_time ? `${f.upload_time}Z` : ""))
      .filter(Boolean)
      .sort();
    const requiresPython = files.map((f) => f.requires_python).find((r): r is string => Boolean(r)) ?? null;
    out.push({
      version,
      uploaded: times[0]!,
      yanked: files.every((f) => f.yanked),
      sdist: files.some((f) => f.packagetype === "sdist"),
      requires_python: requiresPython,
    });
  }
  return out.sort((a, b) => (a.uploaded < b.uploaded ? -1 : a.uploaded > b.uploaded ? 1 : a.version < b.version ? -1 : 1));
}

/**
 * PyPI's release lists, asked once per project and kept in `cacheDir` (a release's upload time
 * never changes). A kept list is asked again only when a version that is wanted is not in it (a
 * newer release, say). A project PyPI does not know (404) is kept as unknown.
 */
export class PypiIndex {
  private readonly memory = new Map<string, Promise<PypiRelease[] | null>>();

  constructor(private readonly options: { url: string; cacheDir: string; timeoutMs?: number }) {}

  releases(name: string, wantVersion?: string): Promise<PypiRelease[] | null> {
    const key = normaliseName(name);
    const known = this.memory.get(key);
    if (known && !wantVersion) return known;
    const pending = (known ?? Promise.resolve(undefined))
      .catch(() => undefined)
      .then((previous) => {
        if (previous !== undefined && (!wantVersion || previous === null || previous.some((r) => r.version === wantVersion))) return previous;
        return this.load(key, wantVersion);
      });
    this.memory.set(key, pending);
    pending.catch(() => this.memory.delete(key));
    return pending;
  }

  private cachePath(key: string): string {
    return join(this.options.cacheDir, `${key}.json`);
  }

  private async load(key: string, wantVersion?: string): Promise<PypiRelease[] | null> {
    const path = this.cachePath(key);
    if (existsSync(path)) {
      const cached = CachedProject.safeParse(JSON.parse(readFileSync(path, "utf8")));
      if (cached.success && (!wantVersion || cached.data.releases === null || cached.data.releases.some((r) => r.version === wantVersion)))
        return cached.data.releases;
    }
    const url = `${this.options.url.replace(/\/+$/, "")}/${key}/json`;
    let response: Response;
    try {
      response = await fetch(url, { headers: { accept: "application/json" }, signal: AbortSignal.timeout(this.options.timeoutMs ?? 30_000) });
    } catch (error) {
      throw new PypiUnreachable(`cannot ask ${url}: ${(error as Error).message}`);
    }
    let releases: PypiRelease[] | null;
    if (response.status === 404) releases = null;
    else if (!response.ok) throw new PypiUnreachable(`${url} answered ${response.status}`);
    else releases = releasesOf((await response.json()) as Parameters<typeof releasesOf>[0]);
    await mkdir(this.options.cacheDir, { recursive: true });
    await writeFileAtomic(path, JSON.stringify({ name: key, fetched_at: new Date().toISOString(), releases }) + "\n");
    return releases;
  }
}
