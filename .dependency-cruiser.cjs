/**
 * Imports point one way (docs/ARCHITECTURE.md):
 *
 *   bin → pipeline/cli (commands) → stages → pipeline (engine, domain modules) → pipeline/schemas
 *
 * `npm run check:deps` fails on any import against that direction, on any cycle, and on a stage
 * importing another stage. CI runs it.
 */
module.exports = {
  forbidden: [
    {
      name: "no-cycles",
      severity: "error",
      comment: "A cycle makes the order in which modules load, and what each one sees, depend on who imports first.",
      from: {},
      to: { circular: true },
    },
    {
      name: "stage-imports-another-stage",
      severity: "error",
      comment: "A stage never imports another stage; what two stages share is a domain module under pipeline/.",
      from: { path: "^stages/([^/]+)/" },
      to: { path: "^stages/", pathNot: "^stages/$1/" },
    },
    {
      name: "stage-imports-the-registry-or-the-cli",
      severity: "error",
      comment: "Stages know nothing of which stages exist or of the command line.",
      from: { path: "^stages/[^/]+/" },
      to: { path: "^(stages/index\\.ts|pipeline/cli/|bin/)" },
    },
    {
      name: "pipeline-imports-stages",
      severity: "error",
      comment: "The engine and the domain modules serve the stages; only the command layer (pipeline/cli) knows them.",
      from: { path: "^pipeline/", pathNot: "^pipeline/cli/" },
      to: { path: "^(stages/|pipeline/cli/|bin/)" },
    },
    {
      name: "schemas-import-only-schemas",
      severity: "error",
      comment: "The artifact schemas are the bottom layer: they depend on zod and on each other, nothing else.",
      from: { path: "^pipeline/schemas/" },
      to: { path: "^(pipeline/(?!schemas/)|stages/|bin/)" },
    },
    {
      name: "bin-only-starts-the-cli",
      severity: "error",
      from: { path: "^bin/" },
      to: { path: "^(stages/|pipeline/(?!cli/))" },
    },
  ],
  options: {
    includeOnly: "^(bin|pipeline|stages)/",
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".mjs", ".js"] },
  },
};
