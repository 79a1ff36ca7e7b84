import { execFile } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/tmp.ts";
import { WorkLayout } from "../../pipeline/work-layout.ts";
import { BenchmarkLayout, RELEASED } from "../../pipeline/benchmark-layout.ts";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../../", import.meta.url));
const depcruise = join(root, "node_modules", ".bin", "depcruise");

/** The rules dependency-cruiser found broken in `dirs` of `cwd` (rule name: from → to). */
async function violations(cwd: string, dirs: string[]): Promise<string[]> {
  const result = await run(depcruise, [...dirs, "--config", join(root, ".dependency-cruiser.cjs"), "--output-type", "json"], { cwd, maxBuffer: 1 << 26 }).catch(
    (error: { stdout: string }) => ({ stdout: error.stdout }),
  );
  const report = JSON.parse(result.stdout) as { summary: { violations: { rule: { name: string }; from: string; to: string }[] } };
  return report.summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`).sort();
}

/** Names of a layout's entries: `distinct` ones are found in any path-like string, `common` words only as a path argument. */
interface LayoutNames {
  distinct: Set<string>;
  common: Set<string>;
}

/** The names WorkLayout gives the entries of a work directory, read from WorkLayout itself. */
function layoutNames(): LayoutNames {
  const layout = new WorkLayout("/W");
  const paths = [
    layout.lockFile,
    layout.runLock,
    layout.artifact("mine", "x"),
    layout.recordCache("mine", "abcd"),
    layout.mirrors,
    layout.uvCache,
    layout.buildLogs,
    layout.scratch("run"),
    layout.scratch("beside"),
    layout.runLog,
    layout.metrics,
    layout.httpCache("http://h/x"),
    layout.sessionRuns("a"),
    layout.workerLogs,
    layout.fidelityRecords,
    layout.fidelityProfiles,
    layout.profileUnderCheck,
  ];
  const names = new Set(
    paths.flatMap((p) => p.slice("/W/".length).split("/").slice(0, 2)).filter((n) => !["mine", "x.jsonl", "ab", "a", "h_x", "records.jsonl"].includes(n)),
  );
  // Words other code uses for other things (the git command, a setting's name): only a path argument counts.
  const common = new Set(["git", "logs", "cache", "profiles"].filter((n) => names.has(n)));
  return { distinct: new Set([...names].filter((n) => !common.has(n))), common };
}

/** The names BenchmarkLayout gives the entries of an emitted benchmark, read from the layout itself. */
function benchmarkNames(): LayoutNames {
  const layout = new BenchmarkLayout("/B", "/H");
  const inside = [layout.manifest, layout.sessionIndex, layout.sessionFile("s.json")].map((p) => p.slice("/B/".length));
  const released = [RELEASED.table("t"), RELEASED.profileJson, RELEASED.profileCsv, RELEASED.schema("x")];
  const names = new Set([...inside, ...released].flatMap((p) => p.split("/")).filter((n) => !["s.json", "t.csv", "x"].includes(n)));
  return { distinct: names, common: new Set() };
}

/**
 * Where a source spells an entry of a layout: a name of one given to join or resolve, a string
 * holding `/<name>/` (a template's `${workDir}/logs/…`), or a file's name as a string of its own;
 * import specifiers, prose and URLs aside.
 */
function layoutSpellings(path: string, text: string, names: LayoutNames = layoutNames()): string[] {
  const { distinct, common } = names;
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (
      (ts.isStringLiteral(node) ||
        ts.isNoSubstitutionTemplateLiteral(node) ||
        ts.isTemplateLiteralTypeSpan(node) ||
        ts.isTemplateMiddle(node) ||
        ts.isTemplateTail(node) ||
        ts.isTemplateHead(node)) &&
      !ts.isImportDeclaration(node.parent) &&
      !ts.isExportDeclaration(node.parent)
    ) {
      const text = (node as { text?: string }).text ?? "";
      // prose (a help text naming a default) is not a path, nor is a URL
      const parent = node.parent;
      const pathArgument = ts.isCallExpression(parent) && /^(join|resolve)$/.test(parent.expression.getText(source));
      const pathLike = !text.includes(" ") && !text.includes("://");
      const spelled =
        (pathArgument && (distinct.has(text) || common.has(text))) ||
        (pathLike &&
          [...distinct].some((n) => text.includes(`/${n}/`) || text.startsWith(`${n}/`) || (n.includes(".") && (text === n || text.endsWith(`/${n}`)))));
      if (spelled) found.push(`${path}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1} "${text}"`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Every TypeScript file under the product's top folders but `except`, by its path from the root. */
function productSources(except: string): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (/\.ts$/.test(name) && path !== join(root, except)) files.push(path);
    }
  };
  for (const top of ["cli", "pipeline", "stages", "demo", "bench"]) walk(join(root, top));
  return files;
}

describe("the architecture", () => {
  it("the work directory's layout is spelled in one module (pipeline/work-layout.ts); a path spelled elsewhere is found", () => {
    const found = productSources("pipeline/work-layout.ts").flatMap((path) => layoutSpellings(path.slice(root.length), readFileSync(path, "utf8")));
    expect(found).toEqual([]);
    const planted = 'const m = join(workDir, "logs", "metrics.jsonl");\nconst g = join(workDir, "git");\nspawn("git", []);\nconst e = `${workDir}/envs/x`;\n';
    expect(layoutSpellings("x.ts", planted)).toEqual(['x.ts:1 "logs"', 'x.ts:1 "metrics.jsonl"', 'x.ts:2 "git"', 'x.ts:4 "/envs/x"']);
  });

  it("the emitted benchmark's layout is spelled in one module (pipeline/benchmark-layout.ts); a path spelled elsewhere is found", () => {
    const names = benchmarkNames();
    expect([...names.distinct].sort()).toEqual(["index.json", "manifest.jsonl", "profile.csv", "profile.json", "schema", "sessions", "tables"]);
    const found = productSources("pipeline/benchmark-layout.ts").flatMap((path) => layoutSpellings(path.slice(root.length), readFileSync(path, "utf8"), names));
    expect(found).toEqual([]);
    // the six places #56 found, planted again; an artifact named "sessions" and a help text are not paths
    const planted = [
      "files.set(`sessions/${id}.json`, text);",
      'files.set("manifest.jsonl", text);',
      'const index = join(dir, "index.json");',
      'const dir = resolve(base, out, "sessions");',
      'const t = ["tables/tasks.csv", csv];',
      'const input = ["validate", "sessions"];',
      'help("the sessions (manifests/<benchmark>/sessions/<session>.json)");',
    ].join("\n");
    expect(layoutSpellings("x.ts", planted, names)).toEqual([
      'x.ts:1 "sessions/"',
      'x.ts:2 "manifest.jsonl"',
      'x.ts:3 "index.json"',
      'x.ts:4 "sessions"',
      'x.ts:5 "tables/tasks.csv"',
    ]);
  });

  // TypeScript files: the guarded runner (pipeline/verifier/runner.py) is one Python file by design,
  // copied whole into each verification container, where it checks its own integrity.
  it("keeps every TypeScript file in pipeline/ and stages/ at 400 lines or fewer", () => {
    const long: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (/\.ts$/.test(name)) {
          const lines = readFileSync(path, "utf8").split("\n").length - 1;
          if (lines > 400) long.push(`${path.slice(root.length)} (${lines} lines)`);
        }
      }
    };
    for (const top of ["pipeline", "stages"]) walk(join(root, top));
    expect(long).toEqual([]);
  });

  it("imports point one way: bin → cli → stages → pipeline → pipeline/schemas, folder by folder inside pipeline/, no cycles, no stage importing another", async () => {
    expect(await violations(root, ["bin", "cli", "pipeline", "stages", "demo", "bench", "plugins"])).toEqual([]);
  });

  it("a harness plugin imports only its own files and Node's built-in modules (the harness loads it from where it is copied)", () => {
    const dir = join(root, "plugins");
    for (const plugin of readdirSync(dir))
      for (const name of readdirSync(join(dir, plugin)).filter((n) => n.endsWith(".ts"))) {
        const source = readFileSync(join(dir, plugin, name), "utf8");
        for (const [, imported, loaded] of source.matchAll(/\b(?:import|export)\s[^;]*?\bfrom\s*["']([^"']+)["']|\bimport\s*\(\s*["']([^"']+)["']/g))
          expect(imported ?? loaded, `${plugin}/${name}`).toMatch(/^(node:|\.\/[\w.-]+\.ts$)/);
      }
  });

  it("the rules catch every kind of wrong import", async () => {
    const dir = tempDir();
    const file = (path: string, text: string) => {
      mkdirSync(join(dir, path, ".."), { recursive: true });
      writeFileSync(join(dir, path), text);
    };
    file("tsconfig.json", readFileSync(join(root, "tsconfig.json"), "utf8"));
    file("stages/a/index.ts", 'import { b } from "../b/index.ts";\nexport const a = b;\n');
    file("stages/b/index.ts", "export const b = 1;\n");
    file("pipeline/engine.ts", 'import { a } from "../stages/a/index.ts";\nexport const e = a;\n');
    file("pipeline/schemas/x.ts", 'import { e } from "../engine.ts";\nexport const x = e;\n');
    file("pipeline/one.ts", 'import { two } from "./two.ts";\nexport const one = () => two;\n');
    file("pipeline/two.ts", 'import { one } from "./one.ts";\nexport const two = () => one;\n');
    file("bin/start.ts", 'import { e } from "../pipeline/engine.ts";\nexport const s = e;\n');
    // the arrows that once ran back up between pipeline's folders, each planted again
    file("pipeline/engine/stage.ts", "export const stage = 1;\n");
    file("pipeline/engine/settings.ts", 'import { shape } from "../session/shape.ts";\nexport const settings = shape;\n');
    file("pipeline/session/shape.ts", "export const shape = 1;\n");
    file("pipeline/executors/retries.ts", 'import { stage } from "../engine/stage.ts";\nexport const retries = stage;\n');
    file("pipeline/executors/written.ts", 'import { shape } from "../session/shape.ts";\nexport const written = shape;\n');
    file("pipeline/checkouts/checkout.ts", 'import { retries } from "../executors/retries.ts";\nexport const checkout = retries;\n');
    file("pipeline/profiles/recipes.ts", 'import { settings } from "../engine/settings.ts";\nexport const recipes = settings;\n');
    file("pipeline/test-results/junit.ts", 'import { written } from "../executors/written.ts";\nexport const junit = written;\n');
    file("pipeline/verifier/verify.ts", 'import { stage } from "../engine/stage.ts";\nexport const verify = stage;\n');
    file("pipeline/report/render.ts", 'import { verify } from "../verifier/verify.ts";\nexport const render = verify;\n');
    file("pipeline/canonical.ts", 'import { checkout } from "./checkouts/checkout.ts";\nexport const canonical = checkout;\n');
    file("pipeline/machine/doctor.ts", 'import { shape } from "../session/shape.ts";\nexport const doctor = shape;\n');
    // the audit's stage reaching into its study (the study may use the stage)
    file("stages/audit/study/report.ts", "export const report = 1;\n");
    file("stages/audit/page.ts", 'import type { report } from "./study/report.ts";\nexport const page = 1 as unknown as typeof report;\n');
    // commands, the demo and the benchmarks
    file("cli/commands/run.ts", "export const run = 1;\n");
    file("cli/commands/demo.ts", 'import { run } from "./run.ts";\nexport const demo = run;\n');
    file("demo/build.ts", 'import { a } from "../stages/a/index.ts";\nexport const build = a;\n');
    file("bench/speed.ts", 'import { run } from "../cli/commands/run.ts";\nexport const speed = run;\n');
    // a harness plugin and the product, each reaching into the other
    file("plugins/context/index.ts", 'import { e } from "../../pipeline/engine.ts";\nexport const plugin = e;\n');
    file("pipeline/prompts.ts", 'import { plugin } from "../plugins/context/index.ts";\nexport const prompts = plugin;\n');
    // the config read, a workspace opened and a Docker client made past their one owner (type imports are fine)
    file("node_modules/dockerode/package.json", '{ "name": "dockerode", "main": "index.js" }\n');
    file("node_modules/dockerode/index.js", "module.exports = class Docker {};\n");
    file("pipeline/executors/docker-engine.ts", 'import Docker from "dockerode";\nexport const dockerEngine = () => new Docker();\n');
    file("pipeline/executors/containers.ts", 'import type Docker from "dockerode";\nexport const ping = (d: Docker) => d;\n');
    file("pipeline/executors/images.ts", 'import Docker from "dockerode";\nexport const images = new Docker();\n');
    file("pipeline/executors/workspace.ts", "export class Workspace {}\n");
    file("pipeline/project/config.ts", "export const loadConfig = () => 1;\n");
    file(
      "pipeline/project/project.ts",
      'import { loadConfig } from "./config.ts";\nimport { Workspace } from "../executors/workspace.ts";\nexport const project = [loadConfig, Workspace];\n',
    );
    file("pipeline/session/runs.ts", 'import { Workspace } from "../executors/workspace.ts";\nexport const runs = new Workspace();\n');
    file("pipeline/session/score.ts", 'import type { Workspace } from "../executors/workspace.ts";\nexport const score = (w: Workspace) => w;\n');
    file("cli/commands/report.ts", 'import { loadConfig } from "../../pipeline/project/config.ts";\nexport const report = loadConfig;\n');
    expect(await violations(dir, ["bin", "cli", "pipeline", "stages", "demo", "bench", "plugins"])).toEqual([
      "audit-stage-imports-its-study: stages/audit/page.ts → stages/audit/study/report.ts",
      "bench-imports-a-command: bench/speed.ts → cli/commands/run.ts",
      "bin-only-starts-the-cli: bin/start.ts → pipeline/engine.ts",
      "checkouts-imports-only-below: pipeline/checkouts/checkout.ts → pipeline/executors/retries.ts",
      "command-imports-another-command: cli/commands/demo.ts → cli/commands/run.ts",
      "config-read-by-the-project-alone: cli/commands/report.ts → pipeline/project/config.ts",
      "demo-is-not-the-product: demo/build.ts → stages/a/index.ts",
      "engine-imports-only-below: pipeline/engine/settings.ts → pipeline/session/shape.ts",
      "executors-imports-only-below: pipeline/executors/retries.ts → pipeline/engine/stage.ts",
      "executors-imports-only-below: pipeline/executors/written.ts → pipeline/session/shape.ts",
      "machine-imports-only-below: pipeline/machine/doctor.ts → pipeline/session/shape.ts",
      "no-cycles: pipeline/one.ts → pipeline/two.ts",
      "one-docker-client: pipeline/executors/images.ts → node_modules/dockerode/index.js",
      "pipeline-imports-stages: pipeline/engine.ts → stages/a/index.ts",
      "plugin-stands-alone: plugins/context/index.ts → pipeline/engine.ts",
      "product-imports-a-plugin: pipeline/prompts.ts → plugins/context/index.ts",
      "profiles-imports-only-below: pipeline/profiles/recipes.ts → pipeline/engine/settings.ts",
      "report-imports-only-below: pipeline/report/render.ts → pipeline/verifier/verify.ts",
      "schemas-import-only-schemas: pipeline/schemas/x.ts → pipeline/engine.ts",
      "stage-imports-another-stage: stages/a/index.ts → stages/b/index.ts",
      "test-results-imports-only-below: pipeline/test-results/junit.ts → pipeline/executors/written.ts",
      "utilities-import-only-utilities: pipeline/canonical.ts → pipeline/checkouts/checkout.ts",
      "verifier-imports-only-below: pipeline/verifier/verify.ts → pipeline/engine/stage.ts",
      "workspace-opened-by-the-project-alone: pipeline/session/runs.ts → pipeline/executors/workspace.ts",
    ]);
  });

  it("has no function over 80 lines", () => {
    const long: string[] = [];
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (/\.(ts|mjs)$/.test(name)) files.push(path);
      }
    };
    for (const top of ["bin", "cli", "pipeline", "stages", "demo"]) walk(join(root, top));
    for (const path of files) {
      const source = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, true);
      const visit = (node: ts.Node) => {
        if (ts.isFunctionLike(node) && (node as ts.FunctionLikeDeclaration).body) {
          const first = source.getLineAndCharacterOfPosition(node.getStart()).line;
          const lines = source.getLineAndCharacterOfPosition(node.getEnd()).line - first + 1;
          if (lines > 80) long.push(`${path.slice(root.length)}:${first + 1} (${lines} lines)`);
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    expect(long).toEqual([]);
  });
});
