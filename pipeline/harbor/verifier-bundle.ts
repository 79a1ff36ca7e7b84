import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";

/**
 * switch-swe's verify as one JavaScript file for an exported task's verifier image: the program
 * (verifier-main.ts) and every module it imports, switch-swe's and its packages', bundled by
 * esbuild from the sources as they are now. A grading rule changed in TypeScript is in the next
 * export; nothing is written twice.
 */

const PROJECT_ROOT = fileURLToPath(new URL("../../", import.meta.url));
const ENTRY = fileURLToPath(new URL("./verifier-main.ts", import.meta.url));

/** A module's file read next to it (`readFileSync(fileURLToPath(new URL("./x.py", import.meta.url)), "utf8")`), made the file's text in the bundle. */
const SIBLING_READ = /readFileSync\(fileURLToPath\(new URL\("([^"]+)", import\.meta\.url\)\), "utf8"\)/g;

const inlineSiblingFiles: Plugin = {
  name: "inline-sibling-files",
  setup(builder) {
    builder.onLoad({ filter: /\.ts$/ }, (args) => {
      const source = readFileSync(args.path, "utf8");
      if (!SIBLING_READ.test(source)) return undefined;
      const contents = source.replace(SIBLING_READ, (_, path: string) => JSON.stringify(readFileSync(join(dirname(args.path), path), "utf8")));
      return { contents, loader: "ts" };
    });
  },
};

/** The bundle's text: an ES module for Node 18 or later, the same bytes for the same sources. */
export async function verifierBundle(): Promise<string> {
  const result = await build({
    entryPoints: [ENTRY],
    absWorkingDir: PROJECT_ROOT,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node18",
    write: false,
    legalComments: "none",
    plugins: [inlineSiblingFiles],
    // Packages written as CommonJS require Node's own modules: an ES module has no `require` of its own.
    banner: { js: 'import { createRequire as switchSweRequire } from "node:module";\nconst require = switchSweRequire(import.meta.url);' },
    logLevel: "silent",
  });
  return result.outputFiles[0]!.text;
}
