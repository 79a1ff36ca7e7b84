import { appendFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { writingTo } from "./failures.ts";

export type Level = "debug" | "info" | "warn" | "error";
const ORDER: Record<Level, number> = { debug: 0, info: 1, warn: 2, error: 3 };

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  child(prefix: string): Logger;
}

export interface LoggerOptions {
  level?: Level;
  /** Where lines go on screen; stderr by default so stdout stays machine-readable (`--json`). */
  write?: (line: string) => void;
  /** Run log with timestamps. Timestamps live here, never in artifacts. */
  file?: string;
}

export function createLogger(options: LoggerOptions = {}, prefix = ""): Logger {
  const threshold = ORDER[options.level ?? "info"];
  const write = options.write ?? ((line: string) => process.stderr.write(line + "\n"));
  if (options.file) writingTo(options.file, () => mkdirSync(dirname(options.file!), { recursive: true }));
  const emit = (level: Level, message: string) => {
    const text = prefix ? `[${prefix}] ${message}` : message;
    if (options.file) writingTo(options.file, () => appendFileSync(options.file!, `${new Date().toISOString()} ${level.toUpperCase()} ${text}\n`));
    if (ORDER[level] >= threshold) write(level === "info" ? text : `${level}: ${text}`);
  };
  return {
    debug: (m) => emit("debug", m),
    info: (m) => emit("info", m),
    warn: (m) => emit("warn", m),
    error: (m) => emit("error", m),
    child: (p) => createLogger(options, prefix ? `${prefix}/${p}` : p),
  };
}

export const silentLogger: Logger = createLogger({ write: () => {} });
