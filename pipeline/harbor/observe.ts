import { IGNORED_DIR_SUFFIX, IGNORED_DIRS } from "../checkouts/ignored.ts";
import type { Snapshot } from "../checkouts/snapshot.ts";
import { quote } from "../executors/recipe-scripts.ts";

/**
 * What a Harbor task records of its checkouts after each request, for the cross-task writes the
 * session runner records: each checkout snapshotted as pipeline/checkouts/snapshot.ts snapshots it
 * (the ignored directories of pipeline/checkouts/ignored.ts left out at any depth, byte code left out, a link by its
 * target, every other file by the sha1 of its content), by a shell script generated here from the
 * same constants, because the agent's container has no Node. `readListing` turns what it wrote
 * into snapshot()'s own maps, and test/pipeline/harbor/observe.test.ts holds the two equal on one tree.
 *
 * The listing is a sequence of NUL-terminated fields: `C`, a checkout's path; `L`, a link's path
 * (from the checkout, `./`-prefixed) and its target; or one file's `<sha1>  ./<path>` (sha1sum -z).
 */

/** find's test for a directory the snapshot does not read. */
function prunedDirectories(): string {
  const names = [...[...IGNORED_DIRS].sort(), `*${IGNORED_DIR_SUFFIX}`].map((name) => `-name ${quote(name)}`);
  return `\\( -type d \\( ${names.join(" -o ")} \\) -prune \\)`;
}

/** The script the agent's image holds (root's alone): `observe.sh OUT` writes the listing of `checkouts` to OUT. */
export function observeScript(checkouts: string[]): string {
  const prune = prunedDirectories();
  return [
    "#!/bin/sh",
    "# switch-swe: every file of the session's checkouts, hashed as the session runner snapshots them",
    "# (generated from pipeline/checkouts/snapshot.ts by pipeline/harbor/observe.ts). Run as root.",
    "set -eu",
    'out=$1; partial="$out.partial"',
    ': > "$partial"',
    `for dir in ${checkouts.map(quote).join(" ")}; do`,
    `  printf 'C\\0%s\\0' "$dir" >> "$partial"`,
    '  [ -d "$dir" ] || continue',
    `  (cd "$dir" && find . ${prune} -o -type l -printf 'L\\0%p\\0%l\\0') >> "$partial"`,
    `  (cd "$dir" && find . ${prune} -o -type f ! -name '*.py[co]' -print0 | xargs -0 -r sha1sum -z --) >> "$partial"`,
    "done",
    'mv "$partial" "$out"',
    "",
  ].join("\n");
}

export class ListingError extends Error {
  override name = "ListingError";
}

const FILE = /^([0-9a-f]{40}) {2}\.\/([\s\S]+)$/;

/** A listing (observeScript's output) as snapshot()'s maps, by checkout path; a listing it cannot read is an error naming `where`. */
export function readListing(text: string, where: string): Map<string, Snapshot> {
  const fields = text.split("\0");
  if (fields.pop() !== "") throw new ListingError(`${where}: the listing does not end with a complete field (a partial write?)`);
  const checkouts = new Map<string, Snapshot>();
  let current: Snapshot | undefined;
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!;
    if (field === "C" || field === "L") {
      const a = fields[++i];
      const b = field === "L" ? fields[++i] : "";
      if (a === undefined || b === undefined) throw new ListingError(`${where}: field ${i}: a ${field} record is cut short`);
      if (field === "C") checkouts.set(a, (current = new Map()));
      else if (!current || !a.startsWith("./")) throw new ListingError(`${where}: field ${i}: a link outside any checkout`);
      else current.set(a.slice(2), `link:${b}`);
      continue;
    }
    const file = FILE.exec(field);
    if (!file || !current) throw new ListingError(`${where}: field ${i}: neither a checkout, a link nor a hashed file`);
    current.set(file[2]!, file[1]!);
  }
  return checkouts;
}
