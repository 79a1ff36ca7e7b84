import { join } from "node:path";
import { BenchmarkLayout } from "../benchmark-layout.ts";
import { SessionIndex, SessionSpec } from "../schemas/session.ts";
import { InputError, readJsonFile } from "../validation.ts";

/**
 * The sessions a benchmark lists in its sessions directory (`sessions/index.json`, emit's list, never
 * a directory listing), each with its file and specification, in the list's order; a listed file
 * whose session_id is not the one listed is an error naming both.
 */
export function readListedSessions(sessionsDir: string): { file: string; spec: SessionSpec }[] {
  const indexFile = BenchmarkLayout.sessionIndexIn(sessionsDir);
  const index = readJsonFile(indexFile, SessionIndex, "the benchmark's list of sessions");
  return index.sessions.map((entry) => {
    const file = join(sessionsDir, entry.file);
    const spec = readJsonFile(file, SessionSpec, "a session specification");
    if (spec.session_id !== entry.session_id)
      throw new InputError(`${file}: field session_id: is ${spec.session_id}, but ${indexFile} lists ${entry.session_id} in this file`);
    return { file, spec };
  });
}
