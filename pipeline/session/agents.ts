import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { z } from "zod";
import { AgentSpec } from "../schemas/agent.ts";
import { describeFirstIssue, InputError, readReviewed } from "../validation.ts";

/** The agents a session run drives: their descriptions (AGENT.yaml, data/agents/), read and checked, and where harnesses are installed. */

/** Bad input to `session run`: names the file and field, and nothing was run. */
export class SessionInputError extends InputError {
  override name = "SessionInputError";
}

/** How many adapters one may extend in a chain (a loop is refused long before). */
const MAX_EXTENDS = 4;

/** An AGENT.yaml as written: a mapping, validated as a whole (AgentSpec) once its `extends` are followed. */
const AgentYaml = z.record(z.string(), z.unknown());

/** One AGENT.yaml as written, its `extends` followed: the base's keys, each replaced by this file's own. */
function agentYaml(file: string, seen: string[]): Record<string, unknown> {
  const raw = readReviewed(file, AgentYaml, { format: "yaml", what: "an agent description (AGENT.yaml)", error: (message) => new SessionInputError(message) });
  const { extends: base, ...own } = raw;
  // A home file's source is named relative to the adapter that names it, wherever it is extended from.
  if (Array.isArray(own.home_files))
    own.home_files = own.home_files.map((f: unknown) =>
      f && typeof f === "object" && typeof (f as { source?: unknown }).source === "string"
        ? { ...f, source: resolve(dirname(file), (f as { source: string }).source) }
        : f,
    );
  const relay = own.context_relay as { program?: unknown } | undefined;
  if (relay && typeof relay === "object" && typeof relay.program === "string") own.context_relay = { ...relay, program: resolve(dirname(file), relay.program) };
  if (base === undefined) return own;
  if (typeof base !== "string" || base === "") throw new SessionInputError(`${file}: extends: the path of another agent description, relative to this one`);
  // An adapter that extends another is a new adapter: it says its own name.
  if (typeof own.name !== "string") throw new SessionInputError(`${file}: name: an adapter that extends another names itself`);
  const baseFile = resolve(dirname(file), base);
  if (seen.includes(baseFile) || seen.length >= MAX_EXTENDS)
    throw new SessionInputError(`${file}: extends: ${base} makes a chain of ${[...seen, baseFile].join(" → ")}`);
  if (!existsSync(baseFile)) throw new SessionInputError(`${file}: extends: ${baseFile} does not exist`);
  return { ...agentYaml(baseFile, [...seen, baseFile]), ...own };
}

/**
 * An AGENT.yaml, validated; a bad one is refused naming the file and field. An adapter may
 * `extends: other.yaml` (the same harness run elsewhere, say): it is the other's keys with its own
 * in their place, whole (a key is replaced, never merged), validated as one adapter.
 */
export function loadAgent(file: string): AgentSpec {
  const raw = agentYaml(resolve(file), [resolve(file)]);
  const parsed = AgentSpec.safeParse(raw);
  if (!parsed.success) throw new SessionInputError(`${file}: ${describeFirstIssue(parsed.error, raw)}`);
  parsed.data.home_files.forEach((f, i) => {
    if (!existsSync(f.source)) throw new SessionInputError(`${file}: home_files[${i}].source: ${f.source} does not exist`);
  });
  const relay = parsed.data.context_relay;
  if (relay && !existsSync(relay.program)) throw new SessionInputError(`${file}: context_relay.program: ${relay.program} does not exist`);
  return parsed.data;
}

/** Where `switch-swe agents install` puts harnesses, and the session runner looks for them, by default. */
export const DEFAULT_TOOLS_DIR = join(".switch-swe", "agents");
