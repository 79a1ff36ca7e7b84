import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The verifier's guarded pytest runner, copied next to the JUnit report (outside the checkout) for guarded runs. */
export const GUARDED_RUNNER = readFileSync(fileURLToPath(new URL("../verifier/runner.py", import.meta.url)), "utf8");
export const GUARDED_RUNNER_NAME = "switch_swe_runner.py";
export const GUARD_REPORT_NAME = "guard.json";
