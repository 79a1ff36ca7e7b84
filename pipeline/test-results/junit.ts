import { XMLParser } from "fast-xml-parser";
import type { TestStatus } from "../schemas/common.ts";
import type { TestRunner } from "../schemas/repo-profile.ts";
import { unittestId } from "./test-ids.ts";

export interface JunitResult {
  nodeId: string;
  status: Exclude<TestStatus, "absent" | "timeout">;
  seconds: number;
  /** A failure's or error's message and text (cut to 2,000 characters): what a test failed with. */
  failureText?: string;
}

/** How a report's test cases become ids: pytest node ids, or unittest ids for Django's runner. */
export interface IdScheme {
  runner: TestRunner;
  /** The environment's Python minor version: unittest's id form changed in 3.11. */
  python: string;
}

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: "",
  isArray: (name) => ["testsuite", "testcase", "skipped", "failure", "error", "properties", "property"].includes(name),
  parseTagValue: false,
});

/**
 * Reads pytest's JUnit XML (written with `-o junit_family=xunit1`, which records each test's file)
 * into pytest node ids that can be passed back to pytest verbatim, parametrized ids included.
 * xfail and xpass are told apart from skips by pytest's own markers in the report.
 */
export function parseJunitXml(xml: string, scheme?: IdScheme): JunitResult[] {
  return parseJunitReport(xml, scheme).results;
}

/** The per-test results and pytest's own session time (the testsuite elements' time). */
export function parseJunitReport(xml: string, scheme: IdScheme = { runner: "pytest", python: "3.11" }): { results: JunitResult[]; sessionSeconds: number } {
  const doc = parser.parse(xml) as { testsuites?: { testsuite?: Suite[] }; testsuite?: Suite[] };
  const suites = doc.testsuites?.testsuite ?? doc.testsuite ?? [];
  const results: JunitResult[] = [];
  let sessionSeconds = 0;
  for (const suite of suites) {
    sessionSeconds += Number(suite.time ?? 0);
    for (const tc of suite.testcase ?? []) {
      const nodeId = scheme.runner === "django" ? unittestId(tc.name, tc.classname ?? "", scheme.python) : nodeIdOf(tc);
      const failureText = failureTextOf(tc);
      results.push({ nodeId, status: statusOf(tc), seconds: Number(tc.time ?? 0), ...(failureText ? { failureText } : {}) });
    }
  }
  return { results, sessionSeconds };
}

interface Suite {
  time?: string;
  testcase?: TestCase[];
}

interface TestCase {
  classname?: string;
  name: string;
  file?: string;
  time?: string;
  skipped?: { type?: string; message?: string }[];
  failure?: Problem[];
  error?: Problem[];
}

type Problem = { message?: string; "#text"?: string } | string;

function failureTextOf(tc: TestCase): string | undefined {
  const problem = tc.error?.[0] ?? tc.failure?.[0];
  if (problem === undefined) return undefined;
  const text = typeof problem === "string" ? problem : `${problem.message ?? ""}\n${problem["#text"] ?? ""}`;
  return text.trim().slice(0, 2000) || undefined;
}

function nodeIdOf(tc: TestCase): string {
  const classname = tc.classname ?? "";
  if (!tc.file) {
    // Without the file attribute the module path is the classname up to the first capitalised part.
    const parts = classname.split(".");
    const classStart = parts.findIndex((p) => /^[A-Z]/.test(p));
    const modules = classStart < 0 ? parts : parts.slice(0, classStart);
    const classes = classStart < 0 ? [] : parts.slice(classStart);
    return [modules.join("/") + ".py", ...classes, tc.name].join("::");
  }
  const file = tc.file.replaceAll("\\", "/");
  const modulePath = file.replace(/\.py$/, "").replaceAll("/", ".");
  const classes = classname.startsWith(modulePath) ? classname.slice(modulePath.length).split(".").filter(Boolean) : [];
  return [file, ...classes, tc.name].join("::");
}

function statusOf(tc: TestCase): JunitResult["status"] {
  if (tc.error?.length) return "error";
  if (tc.failure?.length) {
    // pytest reports a strict xpass as a failure with this message
    const first = tc.failure[0];
    return /\[XPASS\(strict\)\]/.test((typeof first === "string" ? first : first?.message) ?? "") ? "xpassed" : "failed";
  }
  if (tc.skipped?.length) return tc.skipped[0]?.type === "pytest.xfail" ? "xfailed" : "skipped";
  return "passed";
}
