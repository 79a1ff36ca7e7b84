import type { QualificationRecord } from "../schemas/qualification.ts";
import { normaliseTestId, swebenchTestId } from "../test-results/test-ids.ts";

/**
 * How our qualification of a task compares with a SWE-bench-family record's: per set, whether our
 * tests equal theirs, and why each test differs. Used by `switch-swe fidelity` (bench:fidelity).
 */

/** How two sets of test ids relate. */
export type Agreement = "exact" | "subset" | "superset" | "overlap" | "disjoint";

/**
 * Why one test is in one list and not the other:
 * - `needs_network`: it failed in every run for want of the network (we run offline by design);
 * - `unstable`: its outcome changed between our runs;
 * - `id_format`: the same test, spelt differently (a parametrized id cut short, or one whose
 *   parameter embeds a path of the machine that ran it), or an id that several of our tests are
 *   cut down to, which a record's cut ids cannot tell apart;
 * - `environment`: our runs never reported it (not collected: an import failed), or reported it
 *   as an error or a skip in every run, which is what a missing or different dependency looks like;
 * - `unlisted`: a test of ours the record names in neither of its sets (SWE-bench never reported
 *   it: its log parser missed it, or it ran fewer tests of the file);
 * - `passes_before`: a test the record calls fail-to-pass that passed in every run here before the
 *   fix (what requalify reports as f2p_passes_before);
 * - `other`: none of these: a real difference in behaviour, to look at.
 */
export type DifferenceClass = "needs_network" | "unstable" | "id_format" | "environment" | "unlisted" | "passes_before" | "other";

export interface SetComparison {
  agreement: Agreement;
  /** Tests the record lists and we do not, and tests we list and the record does not, each classified. */
  missing: { test: string; class: DifferenceClass }[];
  extra: { test: string; class: DifferenceClass }[];
}

export function agreementOf(ours: ReadonlySet<string>, theirs: ReadonlySet<string>): Agreement {
  const common = [...ours].filter((t) => theirs.has(t)).length;
  if (common === ours.size && common === theirs.size) return "exact";
  if (common === ours.size) return "subset";
  if (common === theirs.size) return "superset";
  return common ? "overlap" : "disjoint";
}

/** The id without its parameters. */
function baseOf(id: string): string {
  return id.replace(/\[.*$/s, "");
}

/**
 * Two spellings of one test: one a cut-off form of the other (a parametrized id cut at a character
 * other than a space), or the same test whose parameter embeds a path of the machine that ran it
 * (SWE-bench's ids carry its own home directories).
 */
function sameTestSpeltDifferently(a: string, b: string): boolean {
  if (a === b) return false;
  if (a.startsWith(b) || b.startsWith(a)) return baseOf(a) === baseOf(b) && a.includes("[");
  const machinePath = /\[(.*[-/])?\/(home|root|n|tmp|Users|usr|opt|var)\//;
  return baseOf(a) === baseOf(b) && (machinePath.test(a) || machinePath.test(b));
}

/**
 * Compares one of our sets (F2P or P2P, as SWE-bench ids) with the record's. Every difference is
 * classified from what our qualification saw of that test.
 */
export function compareSet(
  ours: string[],
  theirs: string[],
  qualification: QualificationRecord,
  options: { theirOther?: string[]; failToPass?: boolean } = {},
): SetComparison {
  const toTheirs = (id: string) => normaliseTestId(swebenchTestId(qualification.test_runner, id));
  const ourIds = new Map(ours.map((id) => [toTheirs(id), id]));
  const theirIds = new Set(theirs.map(normaliseTestId));
  // Every test the record names, in either set: one it names in neither, SWE-bench never reported.
  const listed = options.theirOther ? new Set([...theirIds, ...options.theirOther.map(normaliseTestId)]) : undefined;
  const seen = new Map([...qualification.designated_tests].map((id) => [toTheirs(id), id]));
  // Ids that several of our tests are cut down to: a record cut this way cannot name them apart.
  const spellings = new Map<string, number>();
  for (const id of qualification.designated_tests) spellings.set(toTheirs(id), (spellings.get(toTheirs(id)) ?? 0) + 1);
  const classify = (test: string, others: Iterable<string>): DifferenceClass => {
    const ourId = seen.get(test);
    if ((spellings.get(test) ?? 0) > 1) return "id_format";
    if (ourId && qualification.needs_network.includes(ourId)) return "needs_network";
    if (ourId && qualification.unstable.includes(ourId)) return "unstable";
    for (const other of others) if (sameTestSpeltDifferently(test, other)) return "id_format";
    if (!ourId) return "environment";
    // never run for real in any state: not collected, an import error, or skipped for a missing optional package
    const statuses = qualification.runs.map((r) => r.outcomes[ourId]);
    if (statuses.every((s) => s === "error" || s === "absent" || s === "skipped")) return "environment";
    return "other";
  };
  const classifyMissing = (test: string): DifferenceClass => {
    const found = classify(test, [...seen.keys()]);
    const ourId = seen.get(test);
    if (found !== "other" || !options.failToPass || !ourId) return found;
    const before = qualification.runs.filter((r) => r.state === "before").map((r) => r.outcomes[ourId]);
    return before.length && before.every((s) => s === "passed") ? "passes_before" : found;
  };
  const classifyExtra = (test: string): DifferenceClass => {
    const found = classify(test, theirIds);
    return found === "other" && listed && ![...listed].some((t) => t === test || sameTestSpeltDifferently(test, t)) ? "unlisted" : found;
  };
  return {
    agreement: agreementOf(new Set(ourIds.keys()), theirIds),
    missing: [...theirIds]
      .filter((t) => !ourIds.has(t))
      .sort()
      .map((test) => ({ test, class: classifyMissing(test) })),
    extra: [...ourIds.keys()]
      .filter((t) => !theirIds.has(t))
      .sort()
      .map((test) => ({ test, class: classifyExtra(test) })),
  };
}

export interface TaskFidelity {
  task: string;
  /** Built and run, or the reason it was not (the reject reason and message). */
  environment: { built: true } | { built: false; reason: string; message: string };
  kept?: boolean;
  failToPass?: SetComparison;
  passToPass?: SetComparison;
}

/** True when every F2P difference has a named class (not `other`): the goal for a profile. */
export function explained(fidelity: TaskFidelity): boolean {
  if (!fidelity.failToPass) return false;
  return [...fidelity.failToPass.missing, ...fidelity.failToPass.extra].every((d) => d.class !== "other");
}
