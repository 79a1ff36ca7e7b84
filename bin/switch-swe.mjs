#!/usr/bin/env node
// Runs the TypeScript sources directly through tsx, so a fresh clone needs no build step.
import { register } from "tsx/esm/api";

register();
// Output piped into `head` and closed early is not an error of ours: stop quietly.
process.stdout.on("error", (error) => {
  if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw error;
});
const { main } = await import("../cli/main.ts");
process.exitCode = await main(process.argv);
