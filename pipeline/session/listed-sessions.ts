// The benchmark's list of sessions is read in pipeline/project/listed-sessions.ts (OpenedBenchmark.sessions());
// named here too for the modules that import it from here.
export { readListedSessions, sessionList } from "../project/listed-sessions.ts";
