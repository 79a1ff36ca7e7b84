import type { Command } from "commander";
import { checkSchemaFiles, writeSchemaFiles } from "../../pipeline/json-schemas.ts";
import type { ExitCode, Io } from "../io.ts";

export function registerSchemas(program: Command, io: Io, exit: ExitCode): void {
  program
    .command("schemas")
    .description("export the public artifacts' JSON Schemas (session spec, manifest entry, verification report)")
    .option("--out <dir>", "directory to write to", "manifests/schema")
    .option("--check", "exit 1 if the files in --out are missing or stale, without writing")
    .addHelpText("after", "\nExample:\n  switch-swe schemas --out manifests/schema\n  switch-swe schemas --check")
    .action(
      exit.act(async (opts) => {
        if (opts.check) {
          const stale = checkSchemaFiles(opts.out);
          if (stale.length) {
            io.err(`stale or missing JSON Schema files in ${opts.out}: ${stale.join(", ")}; run 'npm run schemas' and commit them\n`);
            return 1;
          }
          io.out(`JSON Schemas in ${opts.out} are up to date\n`);
          return 0;
        }
        const written = await writeSchemaFiles(opts.out);
        io.out(written.map((f) => `wrote ${f}\n`).join(""));
        return 0;
      }),
    );
}
