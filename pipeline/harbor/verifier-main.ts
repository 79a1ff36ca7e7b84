// The program an exported task's last step runs in its verifier image (tests/test.sh, bundled by
// verifier-bundle.ts): `node verify.mjs INPUT.json`.
import { runHarborVerifier } from "./verifier-program.ts";

try {
  process.exitCode = await runHarborVerifier(process.argv[2] ?? "");
} catch (error) {
  process.stderr.write(`switch-swe verify: ${(error as Error).stack ?? String(error)}\n`);
  process.exitCode = 2;
}
