// The benchmark's list of sessions is read in pipeline/project/listed-sessions.ts (OpenedBenchmark.sessions());
// named here too for the report, which reads the project's files through the session folder alone.
export { readListedSessions, sessionList } from "../project/listed-sessions.ts";
