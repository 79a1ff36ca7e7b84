import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "../../pipeline/logger.ts";
import { readAnnotations } from "../../stages/audit/annotations.ts";
import { agreement } from "../../stages/audit/study/agreement.ts";
import { alignTask, type AuditSubject } from "../../stages/audit/runner.ts";
import { openSentences } from "../../stages/audit/readers/requests.ts";
import { PatchOnlyTree, RepositoryTree } from "../../stages/audit/readers/source-tree.ts";
import { auditSwebench } from "../../stages/audit/study/swebench.ts";
import { importSwebench } from "../../stages/mine/swebench.ts";
import { parseTestId } from "../../pipeline/test-results/test-ids.ts";
import { runCli } from "../helpers/cli-in-process.ts";
import { repoWithChange } from "../helpers/git-repo.ts";
import { fileTempDir } from "../helpers/tmp.ts";
import { sharedRecords } from "../helpers/shared-data.ts";

const SHARED = fileURLToPath(new URL("../../../shared/data/", import.meta.url));
const MIRRORS = join(SHARED, "mirrors");

const records = sharedRecords();

/** A real record as the audit sees it, from its test patch alone; `said` is added to its problem statement. */
function subject(id: string, said = ""): AuditSubject {
  const r = records.get(id)!;
  return {
    task: {
      id,
      requests: [{ stage: 1, text: `${r.problem_statement}\n${said}`, provenance: { sources: [{ kind: "issue", record_id: id, author: "x" }] } }],
      verifier: { test_patch: r.test_patch, fail_to_pass: JSON.parse(r.FAIL_TO_PASS) as string[] },
    },
    referencePatch: r.patch,
    tree: new PatchOnlyTree(r.test_patch, "not cloned in this test"),
  };
}

const kinds = async (s: AuditSubject) => (await alignTask(s)).flags.map((f) => f.flag);

describe("test ids in the SWE-bench family's formats", () => {
  it("reads pytest node ids, Django's two runner formats and sympy's bare names", () => {
    expect(parseTestId("tests/test_x.py::TestA::test_b[case-1]")).toEqual({
      file: "tests/test_x.py",
      candidateFiles: ["tests/test_x.py"],
      classes: ["TestA"],
      name: "test_b",
      caseId: "case-1",
    });
    expect(parseTestId("test_label (auth_tests.test_forms.ReadOnlyPasswordHashTest)")).toMatchObject({
      classes: ["ReadOnlyPasswordHashTest"],
      name: "test_label",
      candidateFiles: [
        "tests/auth_tests/test_forms.py",
        "tests/auth_tests/test_forms/__init__.py",
        "auth_tests/test_forms.py",
        "auth_tests/test_forms/__init__.py",
      ],
    });
    expect(parseTestId("test_x (bulk_create.tests.BulkCreateTests.test_x)")).toMatchObject({ classes: ["BulkCreateTests"], name: "test_x" });
    expect(parseTestId("test_is_upper")).toEqual({ candidateFiles: [], classes: [], name: "test_is_upper" });
    // Django names a test with a docstring by its first line: not an id, found by its text instead.
    expect(parseTestId("ReadOnlyPasswordHashWidget doesn't contain a for attribute in the")).toBeUndefined();
  });
});

describe("flags for what makes a verifier unfair, on real records", () => {
  it("new_name: a setting the fix invents and the issue never names (sphinx-8273), and not once the request names it", async () => {
    const findings = await alignTask(subject("sphinx-doc__sphinx-8273"));
    const flag = findings.flags.find((f) => f.flag === "new_name")!;
    expect(flag.detail).toContain('"man_make_section_directory"');
    expect(flag.evidence[0]!.file).toBe("tests/test_build_manpage.py");
    expect(flag.evidence[0]!.text).toContain("man_make_section_directory");
    expect(findings.severity).toBe(2);
    expect(await kinds(subject("sphinx-doc__sphinx-8273", "Add a `man_make_section_directory` setting."))).not.toContain("new_name");
  });

  it("exact_message: a message the fix writes, asserted word for word (django-14730), and not once the request states it", async () => {
    const findings = await alignTask(subject("django__django-14730"));
    const messages = findings.flags.filter((f) => f.flag === "exact_message");
    expect(messages.map((f) => f.evidence[0]!.file)).toEqual([
      "tests/invalid_models_tests/test_relative_fields.py",
      "tests/invalid_models_tests/test_relative_fields.py",
    ]);
    // Two kinds of substantial flag make a 3: the message, and the code fields.W345 no request names.
    expect(findings.flags.find((f) => f.flag === "unrequested_code")!.detail).toContain('"fields.W345"');
    expect(findings.severity).toBe(3);
    const stated = 'Say: related_name has no effect on ManyToManyField with a symmetrical relationship, e.g. to "self".';
    expect(await kinds(subject("django__django-14730", stated))).not.toContain("exact_message");
  });

  it("exact_message reads fnmatch patterns and messages split over implicitly concatenated literals", async () => {
    const reference = `diff --git a/src/m.py b/src/m.py
--- a/src/m.py
+++ b/src/m.py
@@ -1,3 +1,4 @@ def f():
     raise Error(
-        "Using skip outside of a test is not allowed."
+        "Using skip outside of a test will skip "
+        "the entire module."
     )
`;
    const testPatch = `diff --git a/t/test_m.py b/t/test_m.py
--- a/t/test_m.py
+++ b/t/test_m.py
@@ -0,0 +1,2 @@
+def test_f():
+    lines.fnmatch_lines(["*Using skip outside of a test will skip the entire module*"])
`;
    const task = {
      id: "o__r-1",
      requests: [
        {
          stage: 1,
          text: "Skipping at module level should say how to do it.",
          provenance: { sources: [{ kind: "issue" as const, record_id: "1", author: "x" }] },
        },
      ],
      verifier: { test_patch: testPatch, fail_to_pass: ["t/test_m.py::test_f"] },
    };
    const findings = await alignTask({ task, referencePatch: reference, tree: new PatchOnlyTree(testPatch, "none") });
    expect(findings.flags.find((f) => f.flag === "exact_message")!.evidence[0]!.line).toBe(2);
  });

  it("unrequested_exception: the test expects an exception no request names (pylint-6506: SystemExit), and not once it does", async () => {
    const flag = (await alignTask(subject("pylint-dev__pylint-6506"))).flags.find((f) => f.flag === "unrequested_exception")!;
    expect(flag.evidence[0]!.text).toBe("with pytest.raises(SystemExit):");
    expect(await kinds(subject("pylint-dev__pylint-6506", "It should exit with SystemExit and print the usage."))).not.toContain("unrequested_exception");
  });

  it("unrequested_exception reads numpy's and scikit-learn's assert_raises (scikit-learn-13497)", async () => {
    const flags = (await alignTask(subject("scikit-learn__scikit-learn-13497"))).flags.filter((f) => f.flag === "unrequested_exception");
    expect(flags.map((f) => f.detail)).toEqual(["expects `ValueError`, which no request names", "expects `IndexError`, which no request names"]);
    expect(await kinds(subject("scikit-learn__scikit-learn-13497", "Raise ValueError, or IndexError for an index out of range."))).not.toContain(
      "unrequested_exception",
    );
  });

  it("unrequested_exception reads an exception named through its module (astroid-1196's exceptions.AstroidIndexError)", async () => {
    // The issue asks for AstroidIndexError by name; with that sentence said otherwise, nothing names it.
    const unnamed = subject("pylint-dev__astroid-1196");
    unnamed.task.requests[0]!.text = unnamed.task.requests[0]!.text.replaceAll("AstroidIndexError", "usual index error");
    const flag = (await alignTask(unnamed)).flags.find((f) => f.flag === "unrequested_exception")!;
    expect(flag.detail).toBe("expects `AstroidIndexError`, which no request names");
    expect(flag.evidence[0]!.text).toBe("with pytest.raises(exceptions.AstroidIndexError):");
    expect(await kinds(subject("pylint-dev__astroid-1196"))).not.toContain("unrequested_exception");
  });

  it("unrequested_warning: the test expects a warning where no request asks for one (matplotlib-24265), and not once a request does", async () => {
    const flag = (await alignTask(subject("matplotlib__matplotlib-24265"))).flags.find((f) => f.flag === "unrequested_warning")!;
    expect(flag.severity).toBe(2);
    expect(flag.detail).toBe("expects the warning `MatplotlibDeprecationWarning` where no request asks for a warning");
    expect(flag.evidence[0]).toEqual({
      file: "lib/matplotlib/tests/test_style.py",
      line: 187,
      text: "with pytest.warns(mpl._api.MatplotlibDeprecationWarning):",
    });
    // A warning asked for in words counts, whatever class the project gives it.
    expect(await kinds(subject("matplotlib__matplotlib-24265", "It could still warn that these names are deprecated."))).not.toContain("unrequested_warning");
  });

  it("unrequested_test: beside tests that check what the issue asks, one checks what it does not (django-12915, django-16873; annotators' 2, 3), not where no test links to the issue (django-13230)", async () => {
    const findings = await alignTask(subject("django__django-12915"));
    const flag = findings.flags.find((f) => f.flag === "unrequested_test")!;
    expect(flag.subject).toBe("test_static_file_response (asgi.tests.ASGITest)");
    expect(flag.detail).toBe(
      "checks what no request asks, while `test_get_async_response (staticfiles_tests.test_handlers.TestASGIStaticFilesHandler)` checks what a request does",
    );
    expect(flag.evidence[0]!.text).toBe("async def test_static_file_response(self):");
    expect(findings.severity).toBe(2);
    expect(await kinds(subject("django__django-16873"))).toContain("unrequested_test");
    // Its one test links to nothing the issue says: the linkage, not the test, failed.
    const unlinked = await kinds(subject("django__django-13230"));
    expect(unlinked).toContain("unjustified_test");
    expect(unlinked).not.toContain("unrequested_test");
  });

  it("unrequested_behaviour: the test checks a function the fix changes that the issue never mentions (matplotlib-23562)", async () => {
    const flag = (await alignTask(subject("matplotlib__matplotlib-23562"))).flags.find((f) => f.flag === "unrequested_behaviour")!;
    expect(flag.detail).toContain("`get_edgecolor`");
    expect(await kinds(subject("matplotlib__matplotlib-23562", "get_edgecolor fails the same way."))).not.toContain("unrequested_behaviour");
  });

  it("unrequested_behaviour's evidence is a call the test makes, not one its docstring names (pydicom-901)", async () => {
    const flags = (await alignTask(subject("pydicom__pydicom-901"))).flags.filter((f) => f.flag === "unrequested_behaviour");
    expect(flags.length).toBeGreaterThan(0);
    for (const f of flags) expect(f.evidence[0]!.text).toMatch(/^debug\((?:True|False), (?:True|False)\)$/);
  });

  it("exact_format: a rendering compared exactly with a form no request shows (sympy-16106), and not once the request shows it", async () => {
    const flag = (await alignTask(subject("sympy__sympy-16106"))).flags.find((f) => f.flag === "exact_format")!;
    expect(flag.detail).toContain("<msub><mi>a</mi><mi>b</mi></msub>");
    // Once the request shows that form, the audit looks at the test's next exact rendering instead.
    const shown = (await alignTask(subject("sympy__sympy-16106", "Expected: <msub><mi>a</mi><mi>b</mi></msub>"))).flags.find((f) => f.flag === "exact_format");
    expect(shown?.detail ?? "").not.toContain("<msub><mi>a</mi><mi>b</mi></msub>");
  });

  it("open_choice: the issue leaves two outcomes open and the test pins one no request states (sympy-13043), not where nothing is left open (sympy-15345)", async () => {
    const flag = (await alignTask(subject("sympy__sympy-13043"))).flags.find((f) => f.flag === "open_choice")!;
    expect(flag.severity).toBe(2);
    expect(flag.evidence[0]).toMatchObject({ file: "request 1", line: 4 });
    expect(flag.evidence[0]!.text).toContain("It should be sorted somehow, or returning a set");
    expect(flag.evidence[1]!.text).toBe("assert decompose(x, True) == {x}");
    // Once the request states every outcome the test pins, nothing is left to a guess.
    const pinned = "decompose(x, True) == {x}; {x**2}; {x * y}; {x, y}; {y, x ** 2}; {7, 4*y, 8*x**2}; {x ** 2, 3 * x * y}; {3, y, 4*x, 9*x**2, x*y**2, x**3}";
    expect(await kinds(subject("sympy__sympy-13043", pinned))).not.toContain("open_choice");
    // The issue says what it expects ("I would expect the output `'Max[x,2]'`") and hedges nowhere.
    expect(await kinds(subject("sympy__sympy-15345"))).not.toContain("open_choice");
  });

  it("open_choice reads what a test pins through assertIn, a literal argument on its own line, a name assigned anew and a loop variable (django-15819, django-16873, sympy-13971, matplotlib-22835)", async () => {
    const contained = (await alignTask(subject("django__django-15819"))).flags.find((f) => f.flag === "open_choice")!;
    expect(contained.evidence.map((e) => e.text)).toEqual(["Maybe we can autogenerate", `"author = models.ForeignKey('InspectdbPeople', models.DO_NOTHING, "`]);
    // Its issue hedges only about the cause ("what I think is a bug"); an outcome left open is added.
    const argument = (await alignTask(subject("django__django-16873", "Maybe the joiner should be left as it is, or escaped only once."))).flags.find(
      (f) => f.flag === "open_choice",
    )!;
    expect(argument.evidence[1]).toEqual({ file: "tests/template_tests/filter_tests/test_join.py", line: 88, text: '"<a><br><img><br></a>",' });
    // The output the issue's own failing test shows is stated: the other test, which pins it, is not flagged.
    expect(argument.subject).toMatch(/^test_autoescape_off /);
    // An unchanged assertion compares with a name the patch assigns anew (sympy-13971's latex_str).
    const reassigned = (await alignTask(subject("sympy__sympy-13971"))).flags.find((f) => f.flag === "open_choice")!;
    expect(reassigned.detail).toContain("pins `r'\\left[0, 1, 4, 9, \\ldots\\right]'`");
    // The evidence: the request's hedge, the line that gives the name its value, the assertion.
    expect(reassigned.evidence.slice(1).map((e) => e.text)).toEqual(["latex_str = r'\\left[0, 1, 4, 9, \\ldots\\right]'", "assert latex(s1) == latex_str"]);
    // A loop variable stands for the literal the loop runs over (matplotlib-22835's labels_list).
    const looped = (await alignTask(subject("matplotlib__matplotlib-22835"))).flags.find((f) => f.flag === "open_choice")!;
    expect(looped.detail).toContain('pins `[ "[0.9]", "[1.]"');
    expect(looped.evidence.map((e) => e.text)).toEqual([
      "Not sure if we should have a special check here, a try-except, or actually just make BoundaryNorm approximately invertible.",
      "labels_list = [",
      "assert img.format_cursor_data(v) == label",
    ]);
  });

  it("open_choice: a hedge about the cause or the fix leaves no outcome open (django-14017, django-16255, django-16873; annotators' 0, 0, 3)", async () => {
    expect(openSentences([{ stage: 1, text: "I think there's a missing definition of __rand__ somewhere." }])).toEqual([]);
    expect(openSentences([{ stage: 1, text: "Something like this might be a solution:" }])).toEqual([]);
    expect(openSentences([{ stage: 1, text: "The following testcase illustrates what I think is a bug in the join filter" }])).toEqual([]);
    // A hedge about what should happen still counts.
    expect(openSentences([{ stage: 1, text: "Maybe it should return None instead." }]).map((s) => s.marker)).toEqual(["Maybe"]);
    for (const id of ["django__django-14017", "django__django-16255", "django__django-16873"]) expect(await kinds(subject(id))).not.toContain("open_choice");
  });

  it("open_choice: what the test pinned before the fix, or a count of its own objects, is no outcome it settles (django-13230, django-17051)", async () => {
    // The patch spreads assertChildNodes' list over lines to add 'comments' (which the issue
    // names): 'title' and the rest were pinned before. With a hedge added, nothing is settled.
    const hedge = "Maybe the feed could say more.";
    expect(await kinds(subject("django__django-13230", hedge))).not.toContain("open_choice");
    // A case the list did not hold before still counts.
    const widened = subject("django__django-13230", hedge);
    const patch = widened.task.verifier.test_patch
      .replace("@@ -136,10 +136,20 @@", "@@ -136,10 +136,21 @@")
      .replace("+                'title',\n", "+                'title',\n+                'wfw:commentRss',\n");
    widened.task.verifier = { ...widened.task.verifier, test_patch: patch };
    widened.tree = new PatchOnlyTree(patch, "not cloned in this test");
    const flag = (await alignTask(widened)).flags.find((f) => f.flag === "open_choice")!;
    expect(flag.evidence.at(-1)!.text).toBe("'wfw:commentRss',");
    // "we could discriminate the cases differently", and the test compares two counts of its own objects.
    expect(await kinds(subject("django__django-17051"))).not.toContain("open_choice");
    expect(await kinds(subject("django__django-17051", "The ids should be 1, 2 and 3."))).not.toContain("open_choice");
  });

  it("changed_expectation: the patch changes what a test no request links to expected (sympy-18057's test_var), and not once a request asks for it", async () => {
    const findings = await alignTask(subject("sympy__sympy-18057"));
    const flag = findings.flags.find((f) => f.flag === "changed_expectation")!;
    expect(flag.subject).toBe("test_var");
    expect(flag.severity).toBe(2);
    // The test's def is in a hunk header, and a comment at column 0 inside it does not end it.
    expect(flag.detail).toContain("it read `assert v == ['d', 'e', 'fg']`");
    expect(flag.evidence).toEqual([{ file: "sympy/core/tests/test_var.py", line: 22, text: "assert v != ['d', 'e', 'fg']" }]);
    expect(findings.severity).toBeGreaterThanOrEqual(2);
    const asked = "var() should return the Symbols themselves: its result v must no longer compare equal to their names ['d', 'e', 'fg']";
    expect(await kinds(subject("sympy__sympy-18057", asked))).not.toContain("changed_expectation");
    // A test that only gains assertions changes no expectation (sympy-15345's test_Function).
    expect(await kinds(subject("sympy__sympy-15345"))).not.toContain("changed_expectation");
    // The request names what the change swaps in or out: pvlib-1154's NaN that becomes 0, django-10914's new 0o644 (annotators' 0).
    expect(await kinds(subject("pvlib__pvlib-python-1154"))).toContain("unjustified_test");
    expect(await kinds(subject("pvlib__pvlib-python-1154"))).not.toContain("changed_expectation");
    expect(await kinds(subject("django__django-10914"))).not.toContain("changed_expectation");
  });

  it("unshown_case: the test adds a case beside the one the issue shows (django-15202's empty hostname), not once the request shows it too", async () => {
    const flag = (await alignTask(subject("django__django-15202"))).flags.find((f) => f.flag === "unshown_case")!;
    expect(flag.detail).toBe('adds the case "#@A.bO" beside the one the request shows ("////]@N.AN"); no request mentions it');
    expect(flag.evidence).toEqual([{ file: "tests/forms_tests/field_tests/test_urlfield.py", line: 106, text: "'#@A.bO'," }]);
    expect(await kinds(subject("django__django-15202", "Nor should clean('#@A.bO') raise ValueError."))).not.toContain("unshown_case");
    // A list the patch re-wraps keeps its old cases: only the new one is shown, nothing is flagged (django-13230).
    expect(await kinds(subject("django__django-13230"))).not.toContain("unshown_case");
    // A bare name the request happens to use is no case it shows (pydicom-1458's attribute `Columns`).
    expect(await kinds(subject("pydicom__pydicom-1458"))).not.toContain("unshown_case");
  });

  it("reads hedges in a request's prose only: not in code, output or tracebacks, and not an enumerating 'or'", () => {
    const text = [
      "Members of classes that inherit from list or set or tuple are shown.",
      "I would expect the property to decode Float Pixel Data or Double Float Pixel Data.",
      "Below is the MWE I could produce. The old test could not catch this.",
      "```",
      "x = a or b  # maybe",
      "```",
      "    maybe this is output",
      '  File "x.py", line 3, in f',
      "I'm not sure whether `a or b` should win.",
    ].join("\n");
    expect(openSentences([{ stage: 2, text }])).toEqual([
      { stage: 2, line: 9, text: "I'm not sure whether `a or b` should win.", marker: "not sure", alternatives: false },
    ]);
  });

  it("open_choice: a request that asks how or whether instead of saying what should happen leaves the outcome open (matplotlib-25498; annotators' 2)", async () => {
    const asked = (text: string) => openSentences([{ stage: 1, text }]).map((s) => s.marker);
    expect(asked("Should we make the MMs more like clusterers?")).toEqual(["Should we make the MMs more like clusterers?"]);
    expect(asked("Is there a way to do this?")).toEqual(["Is there a way to do this?"]);
    // A question about the fault, or one quoted inside a sentence, asks nothing of the outcome.
    expect(asked("Is this a bug? Can someone confirm?")).toEqual([]);
    expect(asked("The docs ask how can I update it? but say nothing.")).toEqual([]);
    const flag = (await alignTask(subject("matplotlib__matplotlib-25498"))).flags.find((f) => f.flag === "open_choice")!;
    expect(flag.evidence.map((e) => e.text)).toEqual([
      "How can I update a colorbar, after I changed the norm instance of the colorbar?",
      "assert pcm.norm.vmin == z.min()",
    ]);
    expect(flag.detail).toContain("which no request states");
    // Once the request says what the norm should become, the test pins nothing left open.
    expect(
      await kinds(subject("matplotlib__matplotlib-25498", "A LogNorm without limits should take vmin = z.min() and vmax = z.max() from the data.")),
    ).not.toContain("open_choice");
  });

  it("open_choice: outcomes a request lists as acceptable stay open though the request shows each (sympy-20442; annotators' 2)", async () => {
    const [listed] = openSentences([
      { stage: 1, text: "I would expect the unchanged original expression back, an expression in terms of base units, or an error." },
    ]);
    expect(listed).toMatchObject({ marker: expect.stringContaining("would expect"), alternatives: true });
    expect(openSentences([{ stage: 1, text: "It should be sorted somehow, or returning a set." }])[0]!.alternatives).toBe(false);
    const flag = (await alignTask(subject("sympy__sympy-20442"))).flags.find((f) => f.flag === "open_choice")!;
    expect(flag.subject).toBe("test_convert_to");
    expect(flag.detail).toContain("pins `joule*second`, one outcome where the request would accept several");
    expect(flag.evidence.map((e) => e.line)).toEqual([8, 50]);
  });

  it("untested_alternative: the issue names two cases joined by 'or' and the tests check one (django-16041; annotators' 3), not where they check both or neither", async () => {
    const findings = await alignTask(subject("django__django-16041"));
    const flags = findings.flags.filter((f) => f.flag === "untested_alternative");
    // Named twice (the prose and the example's comment), said once.
    expect(flags).toHaveLength(1);
    expect(flags[0]!.detail).toBe(
      "the request names `form_kwargs = {'empty_permitted':True}` or `form_kwargs = {'empty_permitted':False}`; the fail-to-pass tests check `form_kwargs = {'empty_permitted':False}` only",
    );
    expect(flags[0]!.evidence).toEqual([
      { file: "request 1", line: 5, text: expect.stringContaining("form_kwargs = {'empty_permitted':True} or form_kwargs") },
      { file: "tests/forms_tests/tests/test_formsets.py", line: 183, text: 'formset = ArticleFormSet(form_kwargs={"empty_permitted": False})' },
    ]);
    expect(findings.severity).toBe(2);
    // A test that checks the other case too leaves nothing untested.
    const both = subject("django__django-16041");
    both.task.verifier.test_patch = both.task.verifier.test_patch
      .replace("@@ -179,6 +179,10 @@", "@@ -179,6 +179,11 @@")
      .replace(
        "+        self.assertIs(formset.empty_form.empty_permitted, True)\n",
        '+        self.assertIs(formset.empty_form.empty_permitted, True)\n+        formset = ArticleFormSet(form_kwargs={"empty_permitted": True})\n',
      );
    both.tree = new PatchOnlyTree(both.task.verifier.test_patch, "not cloned in this test");
    expect(both.task.verifier.test_patch).toContain('{"empty_permitted": True}');
    expect(await kinds(both)).not.toContain("untested_alternative");
    // Neither case in the tests (matplotlib-23987), or cases too short to tell apart (sympy-19007's `A` or `B`).
    expect(await kinds(subject("matplotlib__matplotlib-23987"))).not.toContain("untested_alternative");
    expect(await kinds(subject("sympy__sympy-19007"))).not.toContain("untested_alternative");
    // Two bare names are kinds of thing, not cases: a test of one is no narrower than the request.
    expect(await kinds(subject("django__django-16041", "It renders with `ArticleFormSet` or `ArticleModelFormSet` alike."))).toEqual(
      await kinds(subject("django__django-16041")),
    );
  });

  it("exact_format reads a test whose expected drawing starts at column 0 after `s = \\` (sympy-14308)", async () => {
    const drawn = (await alignTask(subject("sympy__sympy-14308"))).flags.find((f) => f.flag === "exact_format")!;
    expect(drawn.subject).toBe("test_issue_12675");
    expect(drawn.evidence[0]!.text).toBe("ucode_str = \\");
  });

  it("unrequested_code: the test expects a check code the issue does not name (django-16816: admin.E109 where it says E108), not one it names (django-13925: W042)", async () => {
    const flag = (await alignTask(subject("django__django-16816"))).flags.find((f) => f.flag === "unrequested_code")!;
    expect(flag.detail).toBe('expects the code "admin.E109", which no request names (they name E108)');
    expect(flag.evidence[0]).toEqual({ file: "tests/modeladmin/test_checks.py", line: 578, text: '"admin.E109",' });
    expect(await kinds(subject("django__django-16816", "Raise admin.E109 for these."))).not.toContain("unrequested_code");
    expect(await kinds(subject("django__django-13925"))).not.toContain("unrequested_code");
  });

  it("exact_format knows a printer by the name the test file imports it as (`mathematica_code as mcode`, as sympy-12171's tests do)", async () => {
    const testPatch = (importLine: string) => `diff --git a/pkg/tests/test_code.py b/pkg/tests/test_code.py
--- /dev/null
+++ b/pkg/tests/test_code.py
@@ -0,0 +1,5 @@
+${importLine}
+
+
+def test_derivative():
+    assert mcode(Derivative(f(t), t)) == "Hold[D[f[t], t]]"
`;
    const audit = (importLine: string) =>
      alignTask({
        task: {
          id: "o__r-3",
          requests: [
            {
              stage: 1,
              text: "Derivative(f(t), t) prints as Derivative(f(t), t) instead of D[f[t],t].",
              provenance: { sources: [{ kind: "issue", record_id: "3", author: "x" }] },
            },
          ],
          verifier: { test_patch: testPatch(importLine), fail_to_pass: ["pkg/tests/test_code.py::test_derivative"] },
        },
        referencePatch:
          "diff --git a/pkg/printing.py b/pkg/printing.py\n--- a/pkg/printing.py\n+++ b/pkg/printing.py\n@@ -1,0 +2,2 @@\n+def _print_Derivative(self, expr):\n+    return 'Hold[D[' + self.args(expr) + ']]'\n",
        tree: new PatchOnlyTree(testPatch(importLine), "none"),
      });
    const aliased = (await audit("from pkg.printing import mathematica_code as mcode")).flags.find((f) => f.flag === "exact_format")!;
    expect(aliased.detail).toContain('"Hold[D[f[t], t]]"');
    expect((await audit("from pkg.helpers import mcode")).flags.map((f) => f.flag)).not.toContain("exact_format");
  });

  it("a fair record gets none of them (django-16527, annotators' 0: the issue names the function and its file)", async () => {
    const findings = await alignTask(subject("django__django-16527"));
    expect(findings.severity).toBeLessThan(2);
  });

  it("a test the patch does not hold is said to be unread, never unjustified, and weighs nothing (django-11001 without a clone)", async () => {
    const findings = await alignTask(subject("django__django-11001"));
    expect(findings.flags.filter((f) => f.flag === "source_not_found").map((f) => f.subject)).toEqual([
      "test_order_of_operations (expressions.tests.BasicExpressionsTests)",
    ]);
    expect(findings.flags.find((f) => f.flag === "no_repository")!.detail).toContain("not cloned in this test");
    expect(findings.flags.some((f) => f.flag === "unjustified_test")).toBe(false);
  });

  it("finds a test changed below its def from the hunk header, and a Django test named by its docstring", async () => {
    const changed = await alignTask(subject("django__django-13230"));
    expect(changed.flags.some((f) => f.flag === "source_not_found")).toBe(false);
    // Its lines are judged: the link's evidence (none here: the issue never mentions what it checks) points at the header's def.
    expect(changed.flags.find((f) => f.flag === "unjustified_test")!.evidence[0]).toEqual({
      file: "tests/syndication_tests/tests.py",
      line: 135,
      text: "def test_rss2_feed(self):",
    });
    const byDocstring = await alignTask(subject("django__django-15781"));
    expect(byDocstring.flags.some((f) => f.flag === "source_not_found")).toBe(false);
    // The docstring may open alone on the line above its first line (django-14411's test_label).
    const docstringBelow = await alignTask(subject("django__django-14411"));
    expect(docstringBelow.links.map((l) => l.test)).toEqual(["ReadOnlyPasswordHashWidget doesn't contain a for attribute in the"]);
    expect(docstringBelow.flags.some((f) => f.flag === "source_not_found")).toBe(false);
    expect(docstringBelow.flags.find((f) => f.flag === "new_name")!.evidence[0]!.text).toBe(
      "self.assertEqual(bound_field.field.widget.id_for_label('id'), None)",
    );
  });
});

describe("test sources from the repository", () => {
  it("reads a test the patch does not hold, and a parametrized case, from the bundled mirrors (sqlfluff-1625, astroid-1866)", async () => {
    const work = fileTempDir();
    const lines = ["sqlfluff__sqlfluff-1625", "pylint-dev__astroid-1866"].map((id) => JSON.stringify(records.get(id))).join("\n") + "\n";
    const { candidates } = importSwebench("records.jsonl", lines);
    const withMirrors = await auditSwebench({ candidates, mirrors: MIRRORS, workDir: join(work, "w"), log: silentLogger });
    const without = await auditSwebench({ candidates, workDir: join(work, "w2"), log: silentLogger });
    const by = (audit: typeof without, id: string) => audit.records.find((r) => r.task_id === id)!;
    expect(by(withMirrors, "sqlfluff__sqlfluff-1625").source).toBe("repository");
    expect(by(withMirrors, "sqlfluff__sqlfluff-1625").flags.some((f) => f.flag === "source_not_found")).toBe(false);
    expect(by(without, "sqlfluff__sqlfluff-1625").flags.find((f) => f.flag === "source_not_found")!.subject).toBe(
      "test/cli/commands_test.py::test__cli__command_directed",
    );
    expect(by(without, "sqlfluff__sqlfluff-1625").flags.find((f) => f.flag === "no_repository")!.detail).toContain("no --mirrors folder was given");
    // The parametrized case's values live in its decorator, outside the patch's hunk.
    expect(by(withMirrors, "pylint-dev__astroid-1866").flags.filter((f) => f.flag === "unjustified_test")).toEqual([]);
    expect(by(without, "pylint-dev__astroid-1866").flags.filter((f) => f.flag === "unjustified_test").length).toBeGreaterThan(0);
  });

  it("does not call a name new that the base already defines (a moved function), as the patch alone must", async () => {
    // The fix adds `shift` to core.py; the base already had one in util.py, which the fix does not touch.
    const base = {
      "pkg/core.py": "def step(x):\n    return x + 1\n",
      "pkg/util.py": "def shift(x):\n    return x + 2\n",
      "pkg/tests/test_core.py": "from pkg.core import step\n\n\ndef test_old():\n    assert step(1) == 2\n",
    };
    const repo = await repoWithChange(base, {
      "pkg/core.py": "def step(x):\n    return x + 1\n\n\ndef shift(x):\n    return x + 2\n",
    });
    const testPatch = `diff --git a/pkg/tests/test_core.py b/pkg/tests/test_core.py
--- a/pkg/tests/test_core.py
+++ b/pkg/tests/test_core.py
@@ -5,0 +6,4 @@ def test_old():
+
+
+def test_new():
+    assert shift(1) == 3
`;
    const task = {
      id: "o__r-1",
      requests: [{ stage: 1, text: "Make the step two instead of one.", provenance: { sources: [{ kind: "issue" as const, record_id: "1", author: "x" }] } }],
      verifier: { test_patch: testPatch, fail_to_pass: ["pkg/tests/test_core.py::test_new"] },
    };
    const patchOnly = await alignTask({ task, referencePatch: repo.diff, tree: new PatchOnlyTree(testPatch, "none") });
    expect(patchOnly.flags.map((f) => f.flag)).toContain("new_name");
    const tree = await RepositoryTree.open(repo.gitDir, repo.base, testPatch);
    const fromRepo = await alignTask({ task, referencePatch: repo.diff, tree });
    expect(fromRepo.flags.map((f) => f.flag)).not.toContain("new_name");
    // The test patch is applied to the base: the new test reads whole, from its own file.
    expect(fromRepo.links[0]!.test).toBe("pkg/tests/test_core.py::test_new");
    expect(fromRepo.flags.some((f) => f.flag === "source_not_found")).toBe(false);
  });
  it("marks the lines the test patch added where they stand in the tree, when git applied a hunk away from its header's line", async () => {
    // The header says line 2; the base has three more lines above, so git applies the hunk at line 5.
    const repo = await repoWithChange(
      { "pkg/tests/test_core.py": "import os\nimport sys\nimport re\n\ndef test_old():\n    assert True\n", "pkg/core.py": "X = 1\n" },
      { "pkg/core.py": "X = 2\n" },
    );
    const testPatch = `diff --git a/pkg/tests/test_core.py b/pkg/tests/test_core.py
--- a/pkg/tests/test_core.py
+++ b/pkg/tests/test_core.py
@@ -2,2 +2,3 @@
 def test_old():
     assert True
+    assert X == 2
`;
    const tree = await RepositoryTree.open(repo.gitDir, repo.base, testPatch);
    const lines = (await tree.lines("pkg/tests/test_core.py"))!;
    expect(lines.filter((l) => l.added)).toEqual([{ n: 7, text: "    assert X == 2", added: true }]);
  });
  it("unchanged_test: every F2P test is one the patch leaves alone, while the test it adds is not F2P (as requests-2674's)", async () => {
    const base = [
      "import requests",
      "",
      "def test_HTTP_200_OK_GET():",
      "    assert requests.get(httpbin('get')).status_code == 200",
      "",
      "def test_HTTP_200_OK_HEAD():",
      "    assert requests.head(httpbin('get')).status_code == 200",
      "",
      "def test_vendor_aliases():",
      "    from requests.packages import urllib3",
      "",
    ].join("\n");
    const repo = await repoWithChange({ "test_requests.py": base, "requests/adapters.py": "X = 1\n" }, { "requests/adapters.py": "X = 2\n" });
    const testPatch = `diff --git a/test_requests.py b/test_requests.py
--- a/test_requests.py
+++ b/test_requests.py
@@ -8,2 +8,7 @@ def test_HTTP_200_OK_HEAD():
 
+def test_urllib3_pool_connection_closed():
+    s = requests.Session()
+    assert "Pool is closed." in str(s.get(httpbin('status/200')))
+
+
 def test_vendor_aliases():
`;
    const request = "urllib3 exceptions pass through the requests API: DecodeError and TimeoutError should be wrapped.";
    const audit = async (failToPass: string[]) =>
      alignTask({
        task: {
          id: "psf__requests-1",
          requests: [{ stage: 1, text: request, provenance: { sources: [{ kind: "issue" as const, record_id: "1", author: "x" }] } }],
          verifier: { test_patch: testPatch, fail_to_pass: failToPass },
        },
        referencePatch: repo.diff,
        tree: await RepositoryTree.open(repo.gitDir, repo.base, testPatch),
      });
    const deciding = ["test_requests.py::test_HTTP_200_OK_GET", "test_requests.py::test_HTTP_200_OK_HEAD"];
    const unchanged = (await audit(deciding)).flags.filter((f) => f.flag === "unchanged_test");
    expect(unchanged.map((f) => [f.subject, f.severity, f.evidence[0]!.line])).toEqual([
      ["test_requests.py::test_HTTP_200_OK_GET", 2, 3],
      ["test_requests.py::test_HTTP_200_OK_HEAD", 2, 6],
    ]);
    expect(unchanged[0]!.detail).toContain("the tests it adds (`test_urllib3_pool_connection_closed`) are not fail-to-pass");
    // Once the test written for the issue decides too, nothing is said.
    expect((await audit([...deciding, "test_requests.py::test_urllib3_pool_connection_closed"])).flags.map((f) => f.flag)).not.toContain("unchanged_test");
  });

  it("exact_format: a drawing the test patch changed inside, its assignment and comparison unchanged (as sympy-16503's)", async () => {
    const testFile = (rows: string[]) =>
      ["from pkg.draw import pretty", "", "", "def test_box():", "    drawn = \\", '"""\\', ...rows, '"""', "    assert pretty(1) == drawn", ""].join("\n");
    const repo = await repoWithChange(
      { "pkg/draw.py": "def pretty(x):\n    return '+-+'\n", "pkg/tests/test_draw.py": testFile(["+-+", "| |"]) },
      { "pkg/draw.py": "def pretty(x):\n    return '+=+'\n" },
    );
    const testPatch = `diff --git a/pkg/tests/test_draw.py b/pkg/tests/test_draw.py
--- a/pkg/tests/test_draw.py
+++ b/pkg/tests/test_draw.py
@@ -6,3 +6,3 @@ def test_box():
-+-+
++=+
 | |
 """
`;
    const task = {
      id: "o__r-2",
      requests: [{ stage: 1, text: "The box looks wrong; please fix it.", provenance: { sources: [{ kind: "issue" as const, record_id: "2", author: "x" }] } }],
      verifier: { test_patch: testPatch, fail_to_pass: ["pkg/tests/test_draw.py::test_box"] },
    };
    const tree = await RepositoryTree.open(repo.gitDir, repo.base, testPatch);
    const flag = (await alignTask({ task, referencePatch: repo.diff, tree })).flags.find((f) => f.flag === "exact_format")!;
    expect(flag.evidence[0]).toEqual({ file: "pkg/tests/test_draw.py", line: 5, text: "drawn = \\" });
    expect(flag.detail).toContain("+=+");
  });
});

describe("agreement with human annotations", () => {
  it("computes the confusion matrix, precision, recall and both kappas", () => {
    // 4 both, 1 audit only, 2 annotators only, 3 neither: po = 0.7, pe = 0.5*0.6 + 0.5*0.4 = 0.5.
    const pairs = [
      ...Array.from({ length: 4 }, () => ({ severity: 2, score: 3 })),
      { severity: 3, score: 0 },
      ...Array.from({ length: 2 }, () => ({ severity: 1, score: 2 })),
      ...Array.from({ length: 3 }, () => ({ severity: 0, score: 0 })),
    ];
    const a = agreement("all", "in sample", pairs);
    expect(a).toMatchObject({ records: 10, both: 4, audit_only: 1, annotators_only: 2, neither: 3, flagged_of_score0: "1 of 4", flagged_of_score3: "4 of 4" });
    expect(a.precision).toBeCloseTo(0.8);
    expect(a.recall).toBeCloseTo(4 / 6);
    expect(a.kappa).toBeCloseTo(0.4);
    expect(
      agreement(
        "same",
        "in sample",
        [0, 1, 2, 3].map((s) => ({ severity: s, score: s })),
      ).weighted_kappa,
    ).toBeCloseTo(1);
    // The risk's AUC: the share of (scored 2+, scored below) pairs it orders right.
    const risks = [
      { severity: 0, score: 0, risk: 0.1 },
      { severity: 2, score: 3, risk: 0.9 },
      { severity: 1, score: 2, risk: 0.2 },
      { severity: 0, score: 1, risk: 0.3 },
    ];
    expect(agreement("risk", "in sample", risks).auc).toBeCloseTo(0.75);
    expect(a.auc).toBeNull();
  });

  it("names the file, row and field of a bad annotation", () => {
    expect(() => readAnnotations("a.csv", "instance_id,false_negative\nx__y-1,2.0\nx__y-2,high\n")).toThrow(
      'a.csv row 3, record x__y-2: field false_negative: expected a score from 0 to 3, got "high"',
    );
  });
});

describe("switch-swe audit --swebench", () => {
  let out: string;
  let result: Awaited<ReturnType<typeof runCli>>;
  beforeAll(async () => {
    const work = fileTempDir();
    out = join(work, "report");
    const ids = ["pylint-dev__pylint-6506", "django__django-16527", "django__django-14730", "sqlfluff__sqlfluff-1625"];
    const file = join(work, "records.jsonl");
    writeFileSync(file, ids.map((id) => JSON.stringify(records.get(id))).join("\n") + "\n");
    const annotations = join(work, "annotations.csv");
    writeFileSync(
      annotations,
      'instance_id,false_negative,false_negative_notes\npylint-dev__pylint-6506,3.0,exit\ndjango__django-16527,0.0,fine\ndjango__django-14730,2.0,"message, exact"\n',
    );
    // The rules' own severities: what this checks is the command, not the risk model's weights (test/stages/audit-risk.test.ts).
    result = await runCli([
      "audit",
      "--swebench",
      file,
      "--mirrors",
      MIRRORS,
      "--annotations",
      annotations,
      "--risk-model",
      "none",
      "--out",
      out,
      "--work-dir",
      join(work, "w"),
    ]);
  });

  it("writes the report, audit.json and the agreement, and says what it measured", () => {
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("4 records audited");
    expect(result.stdout).toContain("the risk against 3 annotated records (as shipped; in sample): kappa 1.00");
    const json = JSON.parse(readFileSync(join(out, "audit.json"), "utf8")) as {
      records: { instance_id: string; severity: number; flags: { kind: string; test: string; evidence: unknown[] }[] }[];
      agreement: { scope: string }[];
    };
    expect(json.records.map((r) => [r.instance_id, r.severity >= 2])).toEqual([
      ["django__django-14730", true],
      ["django__django-16527", false],
      ["pylint-dev__pylint-6506", true],
      ["sqlfluff__sqlfluff-1625", false],
    ]);
    expect(json.agreement.map((a) => a.scope)).toEqual(["django/django", "pylint-dev/pylint", "all"]);
    expect(readFileSync(join(out, "agreement.md"), "utf8")).toContain("| all | in sample | 3 | 2 | 0 | 0 | 1 |");
    // Per rule: where it fires, its precision and how it was measured, and the annotated records it was written from (pylint-6506 for unrequested_exception).
    expect(readFileSync(join(out, "agreement.md"), "utf8")).toContain(
      "| unrequested_exception | 0 | 0 | 0 | 1 | 1.00 [0.21, 1.00], 1 of 1, in sample | 1 | 0 | — |",
    );
    const page = readFileSync(join(out, "index.html"), "utf8");
    // Every flag's evidence is on the page, where a person can check it.
    expect(page).toContain("tests/config/test_config.py:67");
    expect(page).toContain("Agreement of this audit with the annotations given");
    expect(readFileSync(join(out, "alignment.csv"), "utf8")).toMatch(/^task,repo,severity,test,/);
  });

  it("run again into the same folder without annotations, leaves no agreement from the earlier run", async () => {
    const work = fileTempDir();
    const file = join(work, "r.jsonl");
    writeFileSync(file, JSON.stringify(records.get("django__django-16527")) + "\n");
    const again = join(work, "again");
    const annotations = join(work, "a.csv");
    writeFileSync(annotations, "instance_id,false_negative\ndjango__django-16527,0.0\n");
    expect((await runCli(["audit", "--swebench", file, "--annotations", annotations, "--out", again, "--work-dir", join(work, "w")])).code).toBe(0);
    expect(existsSync(join(again, "agreement.md"))).toBe(true);
    const plain = await runCli(["audit", "--swebench", file, "--out", again, "--work-dir", join(work, "w")]);
    expect(plain.code, plain.stderr).toBe(0);
    expect(existsSync(join(again, "agreement.md"))).toBe(false);
    expect(JSON.parse(readFileSync(join(again, "audit.json"), "utf8"))).not.toHaveProperty("agreement");
  });

  it("refuses bad annotations with the file, row and field, exit 2", async () => {
    const work = fileTempDir();
    const bad = join(work, "bad.csv");
    writeFileSync(bad, "instance_id,false_negative\nx__y-1,7\n");
    const file = join(work, "r.jsonl");
    writeFileSync(file, JSON.stringify(records.get("django__django-16527")) + "\n");
    const refused = await runCli(["audit", "--swebench", file, "--annotations", bad, "--out", join(work, "o")]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`${bad} row 2, record x__y-1: field false_negative`);
  });
});
