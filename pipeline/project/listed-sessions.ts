import { join } from "node:path";
import { BenchmarkLayout } from "../benchmark-layout.ts";
import { SessionIndex, SessionSpec } from "../schemas/session.ts";
import { InputError, readJsonFile } from "../validation.ts";

/**
 * The sessions a benchmark lists in its sessions directory (`sessions/index.json`, emit's list, never
 * a directory listing), each its id and file, in the list's order: the one reader of the list.
 */
export function sessionList(sessionsDir: string): { sessionId: string; file: string }[] {
  const index = readJsonFile(BenchmarkLayout.sessionIndexIn(sessionsDir), SessionIndex, "the benchmark's list of sessions");
  return index.sessions.map((entry) => ({ sessionId: entry.session_id, file: join(sessionsDir, entry.file) }));
}

/**
 * The listed sessions, each with its file and specification, in the list's order; a listed file
 * whose session_id is not the one listed is an error naming both (of the caller's class, if given).
 */
export function readListedSessions(
  sessionsDir: string,
  error: (message: string) => Error = (message) => new InputError(message),
): { file: string; spec: SessionSpec }[] {
  return sessionList(sessionsDir).map(({ sessionId, file }) => {
    const spec = readJsonFile(file, SessionSpec, "a session specification");
    if (spec.session_id !== sessionId)
      throw error(`${file}: field session_id: is ${spec.session_id}, but ${BenchmarkLayout.sessionIndexIn(sessionsDir)} lists ${sessionId} in this file`);
    return { file, spec };
  });
}
