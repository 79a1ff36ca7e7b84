import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join, relative, resolve } from "node:path";
import { writeFileAtomic } from "../atomic.ts";
import { BenchmarkLayout } from "../benchmark-layout.ts";
import { describeFirstIssue, InputError } from "../validation.ts";
import { readListedSessions } from "../session/listed-sessions.ts";
import { VerificationReport } from "../schemas/verification.ts";
import { aggregateResults, type Aggregation, type LoadedReport, type ScoredSession } from "./aggregate.ts";
import { renderCsv, renderMarkdown, renderSvg, renderWorkloadCsv, renderWorkloadSvg } from "./render.ts";
import { contextManagerRuns, contextManagerTable, renderContextManagerCsv, renderContextManagerMarkdown, renderContextManagerSvg } from "./context-managers.ts";

export class ReportInputError extends InputError {
  override name = "ReportInputError";
}

function jsonFiles(dir: string): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const path = join(d, name);
      const stat = statSync(path);
      if (stat.isDirectory()) walk(path);
      else if (name.endsWith(".json")) found.push(path);
    }
  };
  walk(dir);
  return found;
}

/**
 * Every session of the benchmark: the fixed denominators. They come from the benchmark's own list
 * (`sessions/index.json`, written by emit), never from listing files, so a stray file cannot
 * change a denominator; a listed session whose file is missing or broken is an error.
 */
export function loadSessions(dir: string): ScoredSession[] {
  if (!existsSync(dir)) throw new ReportInputError(`${dir}: no such directory of session specifications`);
  const indexFile = BenchmarkLayout.sessionIndexIn(dir);
  if (!existsSync(indexFile))
    throw new ReportInputError(`${indexFile}: missing; the sessions directory of an emitted benchmark lists its sessions there (re-run 'switch-swe emit')`);
  const sessions = readListedSessions(dir, (message) => new ReportInputError(message)).map(({ spec }) => ({
    session_id: spec.session_id,
    focus: spec.focus,
    locality: spec.locality,
  }));
  if (!sessions.length) throw new ReportInputError(`${indexFile}: lists no sessions`);
  return sessions;
}

/**
 * Verification reports under `dir`. Each subdirectory is one configuration (an agent and model),
 * named by its path; reports directly in `dir` form one named after `dir`. A file that is not a
 * verification report is listed as a problem, never counted, and never stops the others.
 */
export function loadReports(dir: string): { reports: LoadedReport[]; problems: string[] } {
  if (!existsSync(dir)) throw new ReportInputError(`${dir}: no such results directory`);
  const reports: LoadedReport[] = [];
  const problems: string[] = [];
  for (const file of jsonFiles(dir)) {
    const rel = relative(dir, file);
    const parts = rel.split("/");
    const configuration = parts.length > 1 ? parts[0]! : basename(resolve(dir));
    let value: unknown;
    try {
      value = JSON.parse(readFileSync(file, "utf8"));
    } catch (error) {
      problems.push(`${file}: not JSON (${(error as Error).message}); not counted`);
      continue;
    }
    const parsed = VerificationReport.safeParse(value);
    if (!parsed.success) {
      problems.push(`${file}: ${describeFirstIssue(parsed.error, value)}; not a verification report, not counted`);
      continue;
    }
    reports.push({ file, configuration, report: parsed.data });
  }
  return { reports, problems };
}

/**
 * `switch-swe report`: Table 1 as Markdown and CSV, and the chart as SVG, written atomically to
 * `outDir`; Table 2 where harnesses reported usage; Table 3 where the results hold native, +Router
 * and +RCM runs (`contextManagers` names their configurations; else the shipped adapters' names).
 */
export async function writeResultsReport(
  resultsDir: string,
  sessionsDir: string,
  outDir: string,
  contextManagers?: string[],
): Promise<{ aggregation: Aggregation; files: string[] }> {
  return writeReport(resultsDir, loadReports(resultsDir), sessionsDir, outDir, contextManagers);
}

/** The tables of reports already loaded (from a results directory, or Harbor's jobs: pipeline/harbor/job.ts) from `source`. */
export async function writeReport(
  source: string,
  loaded: { reports: LoadedReport[]; problems: string[] },
  sessionsDir: string,
  outDir: string,
  contextManagers?: string[],
): Promise<{ aggregation: Aggregation; files: string[] }> {
  const sessions = loadSessions(sessionsDir);
  const { reports, problems } = loaded;
  if (!reports.length)
    throw new ReportInputError(`${source}: no verification reports found${problems.length ? ` (${problems.length} not counted: ${problems[0]})` : ""}`);
  const aggregated = aggregateResults(sessions, reports);
  const aggregation = { ...aggregated, problems: [...problems, ...aggregated.problems] };
  const configurations = [...new Set(aggregation.rows.map((r) => r.configuration))];
  for (const name of contextManagers ?? [])
    if (!configurations.includes(name))
      throw new ReportInputError(`--context-managers: ${source} holds no configuration ${name} (it holds ${configurations.join(", ")})`);
  const runs = contextManagerRuns(configurations, contextManagers);
  const table3 = runs ? contextManagerTable(aggregation, runs) : undefined;
  const files = [join(outDir, "table1.md"), join(outDir, "table1.csv"), join(outDir, "resolution.svg")];
  const markdown = renderMarkdown(aggregation);
  await writeFileAtomic(files[0]!, table3 ? `${markdown}\n${renderContextManagerMarkdown(table3).join("\n")}\n` : markdown);
  await writeFileAtomic(files[1]!, renderCsv(aggregation));
  await writeFileAtomic(files[2]!, renderSvg(aggregation));
  // Table 2 only where some harness reported its usage (scripted agents report none).
  if (aggregation.workload.length) {
    files.push(join(outDir, "table2.csv"), join(outDir, "workload.svg"));
    await writeFileAtomic(files[3]!, renderWorkloadCsv(aggregation));
    await writeFileAtomic(files[4]!, renderWorkloadSvg(aggregation));
  }
  if (table3) {
    const csv = join(outDir, "table3.csv");
    const svg = join(outDir, "context-managers.svg");
    await writeFileAtomic(csv, renderContextManagerCsv(table3));
    await writeFileAtomic(svg, renderContextManagerSvg(table3));
    files.push(csv, svg);
  }
  return { aggregation, files };
}
