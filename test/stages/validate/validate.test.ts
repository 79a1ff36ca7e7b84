import { describe, expect, it } from "vitest";
import type { HeldoutTask } from "../../../pipeline/schemas/heldout.ts";
import type { SessionSpec } from "../../../pipeline/schemas/session.ts";
import { selectSessions } from "../../../stages/select/select.ts";
import { quoteCheck } from "../../../stages/validate/answers.ts";
import { validateSession } from "../../../stages/validate/validate.ts";
import { PATHS, pool, specFor } from "../../helpers/session-pool.ts";

const validationPool = pool(Array.from({ length: 12 }, (_, i) => ({ dir: ["pkg", "lib"][i % 2]!, file: `f${i}.py`, stages: 3, repo: "o/one" })));
const validationSession = (await selectSessions(validationPool, { seed: "v", sizes: { near: 1, far: 0 }, interruptions: 4, minFocusStages: 2 })).sessions[0]!;

describe("validation catches every kind of broken session", () => {
  const tasks = validationPool;
  const others = pool([{ dir: "pkg", file: "f0.py", stages: 3, repo: "o/two" }]).map((t) => ({ ...t, id: "o__two-99" }));
  const session = validationSession;
  // A task of the same repository that modifies the focus's own files: never eligible with it.
  const overlapping = { ...tasks.find((t) => t.id === session.focus)!, id: "o__one-98" };
  const all = new Map([...tasks, ...others, overlapping].map((t) => [t.id, t]));
  const good = specFor(session, all);
  const failing = (mutate: (s: SessionSpec) => void) => {
    const spec = structuredClone(good);
    mutate(spec);
    return validateSession(spec, all, PATHS, 4)
      .filter((c) => !c.passed)
      .map((c) => c.check);
  };
  it("accepts the unbroken session", () => expect(failing(() => {})).toEqual([]));
  it.each<[string, (s: SessionSpec) => void]>([
    ["projection", (s) => (s.conditions.switched.find((r) => r.task_id === s.focus)!.message.text = "changed")],
    [
      "switched_task_order",
      (s) => {
        const i = s.conditions.switched.findIndex((r) => r.task_id === s.interruptions[0] && r.stage === 1);
        s.conditions.switched[i]!.stage = 9;
      },
    ],
    ["switched_finalization_last", (s) => s.conditions.switched.push({ ...s.conditions.switched[1]! })],
    ["interruptions", (s) => s.interruptions.pop()],
    ["same_repository", (s) => (s.interruptions[0] = "o__two-99")],
    ["disjoint_files", (s) => (s.interruptions[0] = "o__one-98")],
    ["locality", (s) => (s.locality = s.locality === "near" ? "far" : "near")],
    ["switched_checkouts", (s) => (s.conditions.switched[1]!.message.checkout = "/workspace/elsewhere")],
    ["switched_messages", (s) => ((s.conditions.switched[1]!.message as Record<string, unknown>).label = "interruption")],
    // every request of one interruption moved into the first gap: it is never resumed
    [
      "interruptions_resumed",
      (s) => {
        const moved = s.conditions.switched.filter((r) => r.task_id === s.interruptions[0]);
        const rest = s.conditions.switched.filter((r) => r.task_id !== s.interruptions[0]);
        s.conditions.switched = [rest[0]!, ...moved, ...rest.slice(1)];
      },
    ],
    [
      "focus_returns",
      (s) => {
        const focus = s.conditions.switched.filter((r) => r.task_id === s.focus);
        s.conditions.switched = [...focus.slice(0, -1), ...s.conditions.switched.filter((r) => r.task_id !== s.focus), focus.at(-1)!];
      },
    ],
  ])("%s", (check, mutate) => {
    expect(failing(mutate)).toContain(check);
  });
});

describe("validation refuses a message that quotes its task's reference", () => {
  const reference =
    "diff --git a/pkg/f0.py b/pkg/f0.py\n--- a/pkg/f0.py\n+++ b/pkg/f0.py\n@@ -1 +1,2 @@\n-x = 1\n+total = sum(values) / len(values)\n+return round(total, precision)\n";
  const spec = (text: string) => {
    const s = specFor(validationSession, new Map(validationPool.map((t) => [t.id, t])));
    for (const r of s.conditions.switched) if (r.task_id === s.focus && r.stage === 1) r.message.text = text;
    return s;
  };
  const heldout = new Map([[validationSession.focus, { implementation_patch: reference } as HeldoutTask]]);
  const requests = (approved: boolean) =>
    new Map([
      [
        validationSession.focus,
        [
          {
            stage: 1,
            text: "",
            provenance: {
              sources: [{ kind: "issue" as const, record_id: "1", author: "a" }],
              ...(approved ? { quote_approved: { reviewer: "r", reason: "the user's API", file: "c.yaml" } } : {}),
            },
          },
        ],
      ],
    ]);
  it("two reference lines, with other spacing and a comment: refused naming the task and stage, unless a curation file approved it", () => {
    const quoting = spec("Please make mean() use:\n    total = sum(values)/len(values)  # this\n    return round(total,precision)\n");
    const refused = quoteCheck(quoting, heldout, requests(false));
    expect(refused).toMatchObject({ check: "no_reference_quotes", passed: false });
    expect(refused.detail).toContain(`${validationSession.focus} stage 1 quotes 2 lines of its reference implementation`);
    expect(quoteCheck(quoting, heldout, requests(true)).passed).toBe(true);
    // One line, in prose, is no quote.
    expect(quoteCheck(spec("It should divide by `len(values)` as in total = sum(values) / len(values)."), heldout, requests(false)).passed).toBe(true);
  });

  it("a held-out reference that is no diff fails the check, naming the task, and does not stop the other checks", () => {
    const broken = new Map([[validationSession.focus, { implementation_patch: "+total = sum(values)\n" } as HeldoutTask]]);
    const check = quoteCheck(spec("Please make mean() right."), broken, requests(false));
    expect(check).toMatchObject({ check: "no_reference_quotes", passed: false });
    expect(check.detail).toContain(`${validationSession.focus}: its held-out implementation_patch is not a diff`);
  });
});
