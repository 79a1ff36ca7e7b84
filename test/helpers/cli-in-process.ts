import { main } from "../../cli/main.ts";

/** Runs the CLI in this process, its output captured through the CLI's own writer: the exit code and what it printed. */
export async function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(["node", "switch-swe", ...args], { out: (text) => void out.push(text), err: (text) => void err.push(text) });
  return { code, stdout: out.join(""), stderr: err.join("") };
}
