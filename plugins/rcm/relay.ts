/**
 * The Resumption Context Manager as a relay program (relay-server.ts): started beside a harness
 * that has no plugin interface, which is pointed at it instead of its model API.
 *
 *   node --import tsx relay.ts --upstream URL [--mode rcm|router] [--dir DIR] [--port N]
 *
 * It prints `listening URL` as its first line once it accepts calls, and stops on SIGTERM or
 * SIGINT. State, usage.jsonl (one line per auxiliary call, with its usage) and decisions.jsonl
 * (every working call's routing decision) go to DIR (default ./rcm).
 */
import { resolve } from "node:path";
import { ContextRelay } from "./relay-server.ts";

function option(name: string, fallback?: string): string {
  const at = process.argv.indexOf(`--${name}`);
  const value = at >= 0 ? process.argv[at + 1] : fallback;
  if (value === undefined) {
    process.stderr.write(`relay: --${name} is required (usage: relay.ts --upstream URL [--mode rcm|router] [--dir DIR] [--port N])\n`);
    process.exit(2);
  }
  return value;
}

const mode = option("mode", "rcm");
if (mode !== "rcm" && mode !== "router") {
  process.stderr.write(`relay: --mode is rcm or router (given: ${mode})\n`);
  process.exit(2);
}
const port = Number(option("port", "0"));
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`relay: --port is a port number (given: ${option("port", "0")})\n`);
  process.exit(2);
}
const relay = new ContextRelay({
  upstream: option("upstream"),
  mode,
  dir: resolve(option("dir", "rcm")),
  port,
  warn: (message) => process.stderr.write(`switch-swe RCM relay: ${message}\n`),
});
const url = await relay.start();
process.stdout.write(`listening ${url}\n`);
for (const signal of ["SIGTERM", "SIGINT"] as const) process.once(signal, () => void relay.stop().then(() => process.exit(0)));
