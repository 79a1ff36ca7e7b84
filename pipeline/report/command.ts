import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join, relative, resolve } from "node:path";
import { writeFileAtomic } from "../atomic.ts";
import { SessionSpec } from "../schemas/session.ts";
import { VerificationReport } from "../schemas/verification.ts";
import { aggregateResults, type Aggregation, type LoadedReport, type ScoredSession } from "./aggregate.ts";
import { renderCsv, renderMarkdown, renderSvg } from "./render.ts";

export class ReportInputError extends Error {
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

/** Every session of the benchmark: the fixed denominators. A bad file is an error, since it would change them. */
export function loadSessions(dir: string): ScoredSession[] {
  if (!existsSync(dir)) throw new ReportInputError(`${dir}: no such directory of session specifications`);
  const sessions = jsonFiles(dir).map((file) => {
    let value: unknown;
    try {
      value = JSON.parse(readFileSync(file, "utf8"));
    } catch (error) {
      throw new ReportInputError(`${file}: not JSON (${(error as Error).message}); expected a session specification`);
    }
    const parsed = SessionSpec.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new ReportInputError(`${file}: field ${issue.path.join(".") || "(root)"}: ${issue.message} (expected a session specification)`);
    }
    return { session_id: parsed.data.session_id, focus: parsed.data.focus, locality: parsed.data.locality };
  });
  if (!sessions.length) throw new ReportInputError(`${dir}: no session specifications (*.json) found`);
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
      const issue = parsed.error.issues[0]!;
      problems.push(`${file}: field ${issue.path.join(".") || "(root)"}: ${issue.message}; not a verification report, not counted`);
      continue;
    }
    reports.push({ file, configuration, report: parsed.data });
  }
  return { reports, problems };
}

/** `switch-swe report`: Table 1 as Markdown and CSV, and the chart as SVG, written atomically to `outDir`. */
export async function writeResultsReport(resultsDir: string, sessionsDir: string, outDir: string): Promise<{ aggregation: Aggregation; files: string[] }> {
  const sessions = loadSessions(sessionsDir);
  const { reports, problems } = loadReports(resultsDir);
  if (!reports.length) throw new ReportInputError(`${resultsDir}: no verification reports found${problems.length ? ` (${problems.length} file(s) were not reports: ${problems[0]})` : ""}`);
  const aggregated = aggregateResults(sessions, reports);
  const aggregation = { rows: aggregated.rows, problems: [...problems, ...aggregated.problems] };
  const files = [join(outDir, "table1.md"), join(outDir, "table1.csv"), join(outDir, "resolution.svg")];
  await writeFileAtomic(files[0]!, renderMarkdown(aggregation));
  await writeFileAtomic(files[1]!, renderCsv(aggregation));
  await writeFileAtomic(files[2]!, renderSvg(aggregation));
  return { aggregation, files };
}
