import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { writeFileAtomic } from "./atomic.ts";
import { HeldoutTask } from "./schemas/heldout.ts";
import { ManifestEntry } from "./schemas/manifest.ts";
import { SessionSpec } from "./schemas/session.ts";
import { VerificationReport } from "./schemas/verification.ts";

/** The artifacts users in other languages read; their JSON Schemas are committed under manifests/schema/. */
export const PUBLIC_SCHEMAS: Record<string, z.ZodType> = {
  "session-spec": SessionSpec,
  "manifest-entry": ManifestEntry,
  "verification-report": VerificationReport,
  "heldout-task": HeldoutTask,
};

export function renderSchemaFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const [name, schema] of Object.entries(PUBLIC_SCHEMAS)) {
    const json = z.toJSONSchema(schema, { target: "draft-2020-12", io: "output" }) as Record<string, unknown>;
    const document = { $id: `https://switch-swe.invalid/schema/${name}.json`, title: name, ...json };
    files.set(`${name}.schema.json`, JSON.stringify(document, null, 2) + "\n");
  }
  return files;
}

export async function writeSchemaFiles(dir: string): Promise<string[]> {
  const written: string[] = [];
  for (const [name, text] of renderSchemaFiles()) {
    await writeFileAtomic(join(dir, name), text);
    written.push(join(dir, name));
  }
  return written;
}

/** Names of the schema files in `dir` that are missing or differ from what the code exports. */
export function checkSchemaFiles(dir: string): string[] {
  const stale: string[] = [];
  for (const [name, text] of renderSchemaFiles()) {
    const path = join(dir, name);
    if (!existsSync(path) || readFileSync(path, "utf8") !== text) stale.push(name);
  }
  return stale;
}
