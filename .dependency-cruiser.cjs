/**
 * Imports point one way (docs/ARCHITECTURE.md), between files and between folders:
 *
 *   bin → cli → stages → pipeline → pipeline/schemas        (demo/ beside stages, for the demo and tests)
 *   plugins/<name>/ alone: harness plugins import only their own files and Node's
 *
 * and inside pipeline/, each folder imports only the folders below it:
 *
 *   model-endpoint, harbor (the Harbor wing: export, and reading Harbor's jobs back into the report)
 *   → session, fidelity, report
 *     → project (a config and its work directory, opened once by every entrance)
 *       → engine (the stage engine), verifier, machine (what this machine has for a run)
 *       → profiles
 *         → executors
 *           → checkouts → changes; test-results
 *             → pipeline/*.ts (the utilities: files, hashes, git, logging, failures, GitHub)
 *               → schemas
 *
 * `npm run check:deps` fails on any import against these directions, on any cycle, and on a stage
 * importing another stage. CI runs it; test/pipeline/architecture.test.ts plants each kind of
 * wrong import and checks that its rule catches it.
 */

/** What each folder of pipeline/ may import, besides itself, the utilities at pipeline/*.ts and schemas. */
const LAYERS = {
  "test-results": [],
  changes: [],
  // A derived checkout reads the reference it reverses (its diff, and the Python definitions of its test files).
  checkouts: ["changes"],
  executors: ["checkouts", "changes", "test-results"],
  profiles: ["executors", "checkouts", "changes", "test-results"],
  verifier: ["profiles", "executors", "checkouts", "changes", "test-results"],
  machine: ["profiles", "executors", "checkouts", "changes", "test-results"],
  engine: ["profiles", "executors", "checkouts", "changes", "test-results"],
  answers: ["profiles", "executors", "checkouts", "changes", "test-results"],
  qualification: ["engine", "profiles", "executors", "checkouts", "changes", "test-results"],
  project: ["engine", "profiles", "executors", "checkouts", "changes", "test-results"],
  session: ["project", "engine", "verifier", "profiles", "executors", "checkouts", "changes", "test-results"],
  fidelity: ["project", "engine", "profiles", "executors", "checkouts", "changes", "test-results"],
  report: ["session"],
  "model-endpoint": ["session", "project", "engine", "verifier", "profiles", "executors", "checkouts", "changes", "test-results"],
  harbor: ["report", "session", "project", "engine", "verifier", "profiles", "executors", "checkouts", "changes", "test-results"],
};

const folderRules = Object.entries(LAYERS).map(([folder, below]) => ({
  name: `${folder}-imports-only-below`,
  severity: "error",
  comment: `pipeline/${folder}/ may import ${below.length ? below.map((b) => `pipeline/${b}/`).join(", ") + ", " : ""}the utilities (pipeline/*.ts) and schemas, and nothing above or beside it.`,
  from: { path: `^pipeline/${folder}/` },
  to: { path: `^pipeline/(?!(${[folder, "schemas", ...below].join("|")})/)[^/]+/` },
}));

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
      comment: "A stage never imports another stage; what two stages share is a module under pipeline/ named for what it holds.",
      from: { path: "^stages/([^/]+)/" },
      to: { path: "^stages/", pathNot: "^stages/$1/" },
    },
    {
      name: "stage-imports-the-registry-or-the-cli",
      severity: "error",
      comment: "Stages know nothing of which stages exist, of the command line, or of the demo.",
      from: { path: "^stages/[^/]+/" },
      to: { path: "^(stages/index\\.ts|cli/|bin/|demo/)" },
    },
    {
      name: "pipeline-imports-stages",
      severity: "error",
      comment: "The library serves the stages; only the command line knows them (a library function that runs stages is given them).",
      from: { path: "^pipeline/" },
      to: { path: "^(stages/|cli/|bin/|demo/)" },
    },
    {
      name: "utilities-import-only-utilities",
      severity: "error",
      comment: "The utilities at pipeline/*.ts are the layer every folder stands on: they import each other and schemas, nothing above.",
      from: { path: "^pipeline/[^/]+\\.ts$" },
      to: { path: "^pipeline/(?!schemas/)[^/]+/" },
    },
    {
      name: "schemas-import-only-schemas",
      severity: "error",
      comment: "The artifact schemas are the bottom layer: they depend on zod and on each other, nothing else.",
      from: { path: "^pipeline/schemas/" },
      to: { path: "^(pipeline/(?!schemas/)|stages/|cli/|bin/|demo/)" },
    },
    {
      name: "demo-is-not-the-product",
      severity: "error",
      comment: "The demo corpus and its local GitHub API stand beside the stages: the library and the stages never import them.",
      from: { path: "^demo/" },
      to: { path: "^(stages/|cli/|bin/)" },
    },
    {
      name: "command-imports-another-command",
      severity: "error",
      comment: "A command parses, calls the library and prints; what two commands share is library code.",
      from: { path: "^cli/commands/([^/]+)\\.ts$" },
      to: { path: "^cli/commands/", pathNot: "^cli/commands/$1\\.ts$" },
    },
    {
      name: "audit-stage-imports-its-study",
      severity: "error",
      comment: "The audit's study (measuring it against annotations, fitting its risk) stands beside the stage and uses it; the stage never needs the study.",
      from: { path: "^stages/audit/", pathNot: "^stages/audit/study/" },
      to: { path: "^stages/audit/study/" },
    },
    {
      name: "bench-imports-a-command",
      severity: "error",
      comment: "Benchmarks measure the library, never a command.",
      from: { path: "^bench/" },
      to: { path: "^cli/" },
    },
    {
      name: "plugin-stands-alone",
      severity: "error",
      comment: "A harness plugin (plugins/) is loaded by the harness from its own directory: it imports its own files and Node's, nothing of switch-swe.",
      from: { path: "^plugins/([^/]+)/" },
      to: { path: "^(?!plugins/$1/)" },
    },
    {
      name: "product-imports-a-plugin",
      severity: "error",
      comment: "The pipeline and the scripted model read a plugin's calls as any model would, from what they carry; they never import it.",
      from: { path: "^(pipeline|stages|cli|bin|demo|bench)/" },
      to: { path: "^plugins/" },
    },
    {
      name: "config-read-by-the-project-alone",
      severity: "error",
      comment: "A config file is read in one place, Project.open: every entrance opens a project and asks it for the config's settings.",
      from: { pathNot: "^pipeline/project/project\\.ts$" },
      to: { path: "^pipeline/project/config\\.ts$", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "workspace-opened-by-the-project-alone",
      severity: "error",
      comment: "One workspace per work directory, the project's: others take it from the project (a type import is fine).",
      from: { pathNot: "^pipeline/project/project\\.ts$" },
      to: { path: "^pipeline/executors/workspace\\.ts$", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "one-docker-client",
      severity: "error",
      comment:
        "The process's one Docker client comes from pipeline/executors/docker-engine.ts (dockerEngine()); nobody else makes one (a type import is fine).",
      from: { pathNot: "^pipeline/executors/docker-engine\\.ts$" },
      to: { path: "^node_modules/dockerode/", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "bin-only-starts-the-cli",
      severity: "error",
      from: { path: "^bin/" },
      to: { path: "^(stages/|pipeline/|demo/)" },
    },
    ...folderRules,
  ],
  options: {
    includeOnly: "^(bin|cli|pipeline|stages|demo|bench|plugins)/|^node_modules/dockerode/",
    doNotFollow: { path: "^node_modules/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".mjs", ".js"] },
  },
};
