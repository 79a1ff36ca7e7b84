import type { HeldoutTask } from "../schemas/heldout.ts";
import type { ClassificationRules } from "../schemas/repo-profile.ts";
import type { Condition } from "../schemas/session.ts";
import { IN_VERIFIER, VERIFIER_FILES } from "./layout.ts";
import type { HarborVerifierInput } from "./verifier-program.ts";

/** Harbor's verifier directory in the container (EnvironmentPaths.verifier_dir): its reward is read from there. */
const HARBOR_VERIFIER_DIR = "/logs/verifier";

/** The last step's test.sh: switch-swe's verify, run by the Node the image holds. */
export const VERIFIER_TEST_SH = `#!/bin/sh
# The last step's verifier (switch-swe export harbor): switch-swe's own verify, bundled from its TypeScript
# (pipeline/harbor/verifier-program.ts), scores the focus checkout Harbor copied in and writes the reward.
exec ${IN_VERIFIER.tests}/${VERIFIER_FILES.node} ${IN_VERIFIER.tests}/${VERIFIER_FILES.program} ${IN_VERIFIER.tests}/${VERIFIER_FILES.input}
`;

/** Every other step's verifier (tests/test.sh, in its own small image): Harbor asks each step for a reward; these score nothing. */
export const STEP_TEST_SH = `#!/bin/sh
# A request before the session's last (switch-swe export harbor): nothing is scored until the last step,
# whose own verifier runs switch-swe's verify. Harbor needs a reward file from every step: it holds no reward.
mkdir -p ${HARBOR_VERIFIER_DIR}
printf '{}\\n' > ${HARBOR_VERIFIER_DIR}/reward.json
`;

/** verifier.json: what switch-swe's verify is given in the verifier image. */
export function verifierInput(input: {
  sessionId: string;
  condition: Condition;
  focusCheckout: string;
  heldout: HeldoutTask;
  rules: ClassificationRules;
}): string {
  if (input.heldout.environment.test_runner === "django")
    throw new Error(`${input.heldout.task_id}: its tests run with Django's runner, which verify does not run guarded (it scores pytest-based runners only)`);
  const value: HarborVerifierInput = {
    session_id: input.sessionId,
    condition: input.condition,
    focus_checkout: input.focusCheckout,
    mirror: IN_VERIFIER.mirror,
    output_dir: HARBOR_VERIFIER_DIR,
    task: input.heldout,
    rules: input.rules,
  };
  return JSON.stringify(value, null, 2) + "\n";
}
