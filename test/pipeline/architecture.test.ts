import { execFile } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/tmp.ts";

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

describe("the architecture", () => {
  it("imports point one way: bin → cli → stages → pipeline → pipeline/schemas, folder by folder inside pipeline/, no cycles, no stage importing another", async () => {
    expect(await violations(root, ["bin", "cli", "pipeline", "stages", "demo", "bench", "plugins"])).toEqual([]);
  });

  it("a harness plugin imports only its own files and Node's built-in modules (the harness loads it from where it is copied)", () => {
    const dir = join(root, "plugins");
    for (const plugin of readdirSync(dir))
      for (const name of readdirSync(join(dir, plugin)).filter((n) => n.endsWith(".ts"))) {
        const source = readFileSync(join(dir, plugin, name), "utf8");
        for (const [, specifier] of source.matchAll(/\b(?:import|export)\s[^;]*?\bfrom\s*["']([^"']+)["']|\bimport\s*\(\s*["']([^"']+)["']/g))
          expect(specifier, `${plugin}/${name}`).toMatch(/^(node:|\.\/[\w.-]+\.ts$)/);
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
    // commands, the demo and the benchmarks
    file("cli/commands/run.ts", "export const run = 1;\n");
    file("cli/commands/demo.ts", 'import { run } from "./run.ts";\nexport const demo = run;\n');
    file("demo/build.ts", 'import { a } from "../stages/a/index.ts";\nexport const build = a;\n');
    file("bench/speed.ts", 'import { run } from "../cli/commands/run.ts";\nexport const speed = run;\n');
    // a harness plugin and the product, each reaching into the other
    file("plugins/context/index.ts", 'import { e } from "../../pipeline/engine.ts";\nexport const plugin = e;\n');
    file("pipeline/prompts.ts", 'import { plugin } from "../plugins/context/index.ts";\nexport const prompts = plugin;\n');
    expect(await violations(dir, ["bin", "cli", "pipeline", "stages", "demo", "bench", "plugins"])).toEqual([
      "bench-imports-a-command: bench/speed.ts → cli/commands/run.ts",
      "bin-only-starts-the-cli: bin/start.ts → pipeline/engine.ts",
      "checkouts-imports-only-below: pipeline/checkouts/checkout.ts → pipeline/executors/retries.ts",
      "command-imports-another-command: cli/commands/demo.ts → cli/commands/run.ts",
      "demo-is-not-the-product: demo/build.ts → stages/a/index.ts",
      "engine-imports-only-below: pipeline/engine/settings.ts → pipeline/session/shape.ts",
      "executors-imports-only-below: pipeline/executors/retries.ts → pipeline/engine/stage.ts",
      "executors-imports-only-below: pipeline/executors/written.ts → pipeline/session/shape.ts",
      "no-cycles: pipeline/one.ts → pipeline/two.ts",
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
