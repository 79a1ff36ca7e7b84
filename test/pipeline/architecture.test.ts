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
  const result = await run(depcruise, [...dirs, "--config", join(root, ".dependency-cruiser.cjs"), "--output-type", "json"], { cwd, maxBuffer: 1 << 26 }).catch((error: { stdout: string }) => ({ stdout: error.stdout }));
  const report = JSON.parse(result.stdout) as { summary: { violations: { rule: { name: string }; from: string; to: string }[] } };
  return report.summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`).sort();
}

describe("the architecture", () => {
  it("imports point one way: bin → pipeline/cli → stages → pipeline → pipeline/schemas, no cycles, no stage importing another", async () => {
    expect(await violations(root, ["bin", "pipeline", "stages"])).toEqual([]);
  });

  it("the rules catch every kind of wrong import", async () => {
    const dir = tempDir();
    const file = (path: string, text: string) => {
      mkdirSync(join(dir, path, ".."), { recursive: true });
      writeFileSync(join(dir, path), text);
    };
    file("tsconfig.json", readFileSync(join(root, "tsconfig.json"), "utf8"));
    file("stages/a/index.ts", 'import { b } from "../b/index.ts";\nexport const a = b;\n');
    file("stages/b/index.ts", 'export const b = 1;\n');
    file("pipeline/engine.ts", 'import { a } from "../stages/a/index.ts";\nexport const e = a;\n');
    file("pipeline/schemas/x.ts", 'import { e } from "../engine.ts";\nexport const x = e;\n');
    file("pipeline/one.ts", 'import { two } from "./two.ts";\nexport const one = () => two;\n');
    file("pipeline/two.ts", 'import { one } from "./one.ts";\nexport const two = () => one;\n');
    file("bin/start.ts", 'import { e } from "../pipeline/engine.ts";\nexport const s = e;\n');
    expect(await violations(dir, ["bin", "pipeline", "stages"])).toEqual([
      "bin-only-starts-the-cli: bin/start.ts → pipeline/engine.ts",
      "no-cycles: pipeline/one.ts → pipeline/two.ts",
      "pipeline-imports-stages: pipeline/engine.ts → stages/a/index.ts",
      "schemas-import-only-schemas: pipeline/schemas/x.ts → pipeline/engine.ts",
      "stage-imports-another-stage: stages/a/index.ts → stages/b/index.ts",
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
    for (const top of ["bin", "pipeline", "stages"]) walk(join(root, top));
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
