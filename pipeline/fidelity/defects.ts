import type { QualificationRecord } from "../schemas/qualification.ts";
import type { DefectKind, RecordAudit } from "../schemas/requalify.ts";
import type { TestStatus } from "../schemas/common.ts";
import { normaliseTestId, swebenchTestId } from "../test-results/test-ids.ts";

/** What a SWE-bench-family record claims about its tests. */
export interface RecordClaims {
  id: string;
  repo: string;
  failToPass: string[];
  passToPass: string[];
}

/** Why a record could not be re-run at all (its environment did not build, its patches do not apply). */
export interface NotRequalified {
  reason: string;
  message: string;
}

/** What each kind of defect means, for the report's readers. */
export const DEFECT_MEANINGS: Record<DefectKind, string> = {
  not_requalified: "the record could not be re-run here (environment, patches): nothing below was checked",
  gold_patch_fails: "an F2P test does not pass after the gold patch, in any run: the gold patch does not pass its own tests",
  f2p_passes_before: "an F2P test already passes before the gold patch, in every run: it checks nothing the patch does",
  f2p_unstable: "an F2P test's outcome changed between runs of one state",
  f2p_needs_network: "an F2P test fails in every run for want of the network (runs are offline)",
  f2p_not_collected: "an F2P test the record names is never reported: it does not exist at that revision, or cannot be collected",
  p2p_fails: "a P2P test does not pass in every run, before or after the gold patch",
  p2p_not_collected: "a P2P test the record names is never reported",
  malformed_id:
    "an id cut short (SWE-bench's log parser cut parametrized ids at their first space) or embedding a path of the machine that ran it; the test(s) it stands for are named",
  f2p_set_differs: "the tests that fail before and pass after the gold patch here are not the record's F2P list",
};

/** Defects whose detail is each test's statuses, run by run. */
const RUN_DETAIL = new Set<DefectKind>(["gold_patch_fails", "f2p_passes_before", "f2p_unstable", "p2p_fails"]);

/**
 * An id with the absolute paths in its parameters reduced to their last part: SWE-bench's ids of
 * parametrized tests over data files embed the paths of the machine that ran them
 * (`[/n/fs/guest/…/.pydicom/data/x.dcm-data4]`), ours embed this machine's.
 */
function withoutMachinePaths(id: string): string {
  const bracket = id.indexOf("[");
  return bracket < 0 ? id : id.slice(0, bracket) + id.slice(bracket).replace(/(^|[\[\-,])\/(?:[^/\[\]]+\/)+/g, "$1");
}

/** The forms a record id may have lost information in: cut at a space, machine paths dropped. */
const looseForm = (id: string) => withoutMachinePaths(normaliseTestId(id));

/** A record id's test among ours: exactly, or as the tests whose id it is a cut or machine-specific form of. */
function resolveId(id: string, ours: Map<string, string>, looseForms: Map<string, string[]>): { ourId?: string; cut?: string[] } {
  if (ours.has(id)) return { ourId: ours.get(id)! };
  const matches = looseForms.get(looseForm(id)) ?? [];
  return matches.length ? { cut: matches } : {};
}

function statusesOf(q: QualificationRecord, test: string, state: "before" | "after"): TestStatus[] {
  return q.runs.filter((r) => r.state === state).map((r) => r.outcomes[test] ?? "absent");
}

/**
 * Audits one record against our re-run of its tests before and after its gold patch (N runs of each
 * state, by `qualify`): every defect of the record, each with the tests it concerns, sorted.
 */
export function auditRecord(record: RecordClaims, q: QualificationRecord | undefined, notRun?: NotRequalified): RecordAudit {
  if (!q)
    return {
      instance_id: record.id,
      repo: record.repo,
      requalified: false,
      differences: [],
      defects: [{ kind: "not_requalified", tests: [], detail: notRun ? `${notRun.reason}: ${notRun.message.split("\n")[0]!.slice(0, 400)}` : "not qualified" }],
    };
  // Our ids as the record spells them (sympy's are bare names), and the cut forms several may share.
  const spelt = (id: string) => swebenchTestId(q.test_runner, id);
  const ours = new Map(q.designated_tests.map((id) => [spelt(id), id]));
  const cutForms = new Map<string, string[]>();
  for (const [theirs, id] of ours) cutForms.set(looseForm(theirs), [...(cutForms.get(looseForm(theirs)) ?? []), id]);
  const found = new Map<DefectKind, Set<string>>();
  const add = (kind: DefectKind, test: string) => found.set(kind, (found.get(kind) ?? new Set()).add(test));
  const notes = new Map<string, string>();

  /** The tests a record id stands for here; a cut or machine-specific id is a defect of its own. */
  const testsFor = (id: string): string[] => {
    const { ourId, cut } = resolveId(id, ours, cutForms);
    if (cut) {
      add("malformed_id", id);
      notes.set(id, cut.join(" | "));
    }
    return ourId ? [ourId] : (cut ?? []);
  };
  for (const id of record.failToPass) {
    const tests = testsFor(id);
    if (!tests.length) {
      add("f2p_not_collected", id);
      continue;
    }
    // A cut id stands for every test it could be: its claim holds if one of them bears it out.
    if (tests.some((t) => q.fail_to_pass.includes(t))) continue;
    const test = tests[0]!;
    const before = statusesOf(q, test, "before");
    const after = statusesOf(q, test, "after");
    if (q.needs_network.includes(test)) add("f2p_needs_network", id);
    else if (q.unstable.includes(test)) add("f2p_unstable", id);
    else if (after.every((s) => s === "absent") && before.every((s) => s === "absent")) add("f2p_not_collected", id);
    else if (after.every((s) => s !== "passed")) add("gold_patch_fails", id);
    else if (before.every((s) => s === "passed")) add("f2p_passes_before", id);
  }
  for (const id of record.passToPass) {
    const tests = testsFor(id);
    const runs = tests.map((t) => [...statusesOf(q, t, "before"), ...statusesOf(q, t, "after")]);
    if (!tests.length || runs.every((all) => all.every((s) => s === "absent"))) add("p2p_not_collected", id);
    // As for F2P: a cut id holds if one of the tests it could be passes in every run.
    else if (!runs.some((all) => all.every((s) => s === "passed"))) add("p2p_fails", id);
  }
  // Our F2P against theirs, as they spell ids (cut and machine-specific forms compared as such).
  const ourF2p = new Set(q.fail_to_pass.map((t) => looseForm(spelt(t))));
  const theirF2p = new Set(record.failToPass.map(looseForm));
  const missing = [...theirF2p].filter((t) => !ourF2p.has(t));
  const extra = [...ourF2p].filter((t) => !theirF2p.has(t));
  for (const t of missing) add("f2p_set_differs", `-${t}`);
  for (const t of extra) add("f2p_set_differs", `+${t}`);

  const defects = [...found]
    .map(([kind, tests]) => {
      const sorted = [...tests].sort();
      const detail =
        kind === "malformed_id"
          ? sorted.map((t) => `${t} → ${notes.get(t)}`).join("; ")
          : kind === "f2p_set_differs"
            ? `${missing.length} of the record's F2P are not F2P here, ${extra.length} F2P here are not the record's`
            : RUN_DETAIL.has(kind)
              ? sorted
                  .map((t) => `${t}: ${describeRuns(q, resolveId(t, ours, cutForms))}`)
                  .join("; ")
                  .slice(0, 2000)
              : DEFECT_MEANINGS[kind];
      return { kind, tests: sorted, detail };
    })
    .sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));
  return { instance_id: record.id, repo: record.repo, requalified: true, differences: [], defects };
}

/** A test's statuses in every run, by state: `before passed,passed; after failed,failed`. */
function describeRuns(q: QualificationRecord, resolved: { ourId?: string; cut?: string[] }): string {
  const test = resolved.ourId ?? resolved.cut?.[0];
  if (!test) return "never reported";
  return (["before", "after"] as const).map((state) => `${state} ${statusesOf(q, test, state).join(",")}`).join("; ");
}
