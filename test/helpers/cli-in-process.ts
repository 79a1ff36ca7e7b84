import { main } from "../../pipeline/cli/main.ts";

/** Runs the CLI in this process with its standard output captured: the exit code and what it printed. */
export async function runCli(args: string[]): Promise<{ code: number; stdout: string }> {
  const printed: string[] = [];
  const write = process.stdout.write;
  process.stdout.write = ((chunk: string | Uint8Array) => (printed.push(String(chunk)), true)) as typeof process.stdout.write;
  try {
    return { code: await main(["node", "switch-swe", ...args]), stdout: printed.join("") };
  } finally {
    process.stdout.write = write;
  }
}
