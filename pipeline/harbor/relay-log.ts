import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { SessionBehaviour } from "../schemas/agent.ts";
import { addUsage, readAttempt, readRouting } from "../session/usage.ts";
import { HARBOR_JOB, RELAY_JOB } from "./layout.ts";

/**
 * What switch-swe's context relay (+Router, +RCM) logged while it stood between a Harbor trial's
 * agent and its model: the usage of its own auxiliary calls (routing and memory) and its routing
 * decisions. A relay serves one conversation, so it runs for a job of one trial and keeps its
 * state in that job's directory (RELAY_JOB.dir); its log is the usage file the session runner
 * reads after every request (`usage.jsonl`, each auxiliary call as OpenCode reports a model call).
 * Harbor gives no boundary between requests in that file, so the relay's calls count for the trial
 * as a whole: in the run's usage and routing, not in any one request's (nor in Switch-Focus).
 */

/** The trial's behaviour with its job's relay log added; unchanged when the job has none. A problem when the job ran more than one trial through one relay. */
export function withRelayLog(trialDir: string, behaviour: SessionBehaviour | undefined): { behaviour?: SessionBehaviour; problems: string[] } {
  const jobDir = dirname(trialDir);
  const file = join(jobDir, RELAY_JOB.dir, RELAY_JOB.usage);
  if (!existsSync(file)) return { ...(behaviour ? { behaviour } : {}), problems: [] };
  const trials = readdirSync(jobDir).filter((n) => existsSync(join(jobDir, n, HARBOR_JOB.result)));
  if (trials.length !== 1)
    return {
      ...(behaviour ? { behaviour } : {}),
      problems: [
        `${file}: one relay's log for ${trials.length} trials (${trials.join(", ")}); a relay serves one conversation, so it is not counted for ${basename(trialDir)}`,
      ],
    };
  if (!behaviour) return { problems: [] };
  const text = readFileSync(file, "utf8");
  const usage = readAttempt("opencode", text).usage;
  const routing = readRouting(text);
  return {
    behaviour: {
      ...behaviour,
      ...(behaviour.usage && usage ? { usage: { ...behaviour.usage, all: addUsage(behaviour.usage.all, usage) } } : {}),
      ...(routing ? { routing } : {}),
    },
    problems: [],
  };
}
