import type { Command } from "commander";
import { machineChecks } from "../../pipeline/machine/doctor.ts";
import { type ExitCode, type Io, requirePath } from "../io.ts";

export function registerDoctor(program: Command, io: Io, exit: ExitCode): void {
  program
    .command("doctor")
    .description("check git, Python, the Docker engine and the base images the profiles need, and GITHUB_TOKEN; say how to fix what is missing")
    .option("--profiles <dir>", "the repository profiles whose base images to check", "data/repos")
    .option("--json", "print the checks as JSON")
    .addHelpText("after", "\nExample:\n  switch-swe doctor --profiles data/repos")
    .action(
      exit.act(async (opts) => {
        requirePath("--profiles", opts.profiles, "directory");
        const report = await machineChecks({ profilesDir: opts.profiles });
        if (opts.json) io.out(JSON.stringify(report, null, 2) + "\n");
        else
          for (const check of report.checks)
            io.out(`${check.ok ? "ok  " : check.required ? "FAIL" : "warn"}  ${check.name}: ${check.detail}${check.ok ? "" : `\n      fix: ${check.fix}`}\n`);
        return report.ok ? 0 : 1;
      }),
    );
}
