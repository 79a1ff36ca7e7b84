import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export { HARBOR_DATASET, HARBOR_TASK, SESSION_RECORDS, taskDirName, VERIFIER_FILES, VERIFIER_OUTPUTS } from "../harbor-layout.ts";

const asset = (path: string) => readFileSync(fileURLToPath(new URL(path, import.meta.url)), "utf8");

/** The Python files the export writes, kept here as they are written. */
export const PYTHON_FILES = {
  verifier: asset("./harbor/switch_swe_verify.py"),
  agent: asset("./harbor/switch_swe_harbor/agent.py"),
  agentInit: asset("./harbor/switch_swe_harbor/__init__.py"),
};
