import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The verifier's guarded pytest runner, copied outside the checkout for guarded runs. */
export const GUARDED_RUNNER = readFileSync(fileURLToPath(new URL("../verifier/runner.py", import.meta.url)), "utf8");
export const GUARDED_RUNNER_NAME = "switch_swe_runner.py";
/** The runner's configuration: the submitted paths and the protected (test) files, relative to the checkout. */
export const GUARDED_CONFIG_NAME = "switch_swe_guard.json";

/** What a guarded run asks of the runner (see pipeline/verifier/runner.py). */
export interface GuardedRun {
  /** Paths the submission changed: code from them may not act as a test or a plugin. */
  submittedPaths: string[];
  /** Test files and conftests of the checkout: read before the run, compared with what runs. */
  protectedPaths: string[];
}

/** One record the runner sent on its channel. */
export type GuardRecord =
  | { kind: "test"; nodeid: string; when: "setup" | "call" | "teardown"; outcome: string }
  | { kind: "problem" | "suspicious"; text: string }
  | { kind: "finish"; exitstatus: number; problems: string[] };

/** What a guarded run's channel carried up to the runner's `finish` record. */
export interface GuardChannel {
  records: GuardRecord[];
  /** True when the runner's `finish` record arrived: nothing after it was read. */
  finished: boolean;
  /** Lines that are not records of the runner (no token, not JSON): someone else wrote them. */
  foreign: string[];
}

/** A fresh token for one run: given to the runner on its standard input, carried by every record. */
export function channelToken(): string {
  return randomBytes(24).toString("hex");
}

/** Records larger than this are not the runner's (its largest is the finish record's problem list). */
const MAX_RECORD_BYTES = 4_000_000;

/**
 * Reads the runner's channel as it arrives: one JSON record a line. On the `finish` record it
 * stops reading and calls `onFinish` (the caller kills the run at once): nothing written after the
 * session ended counts. A line without the run's token is kept as foreign (an integrity problem).
 */
export class ChannelReader {
  readonly channel: GuardChannel = { records: [], finished: false, foreign: [] };
  private pending: Buffer = Buffer.alloc(0);

  constructor(
    private readonly token: string,
    private readonly onFinish: () => void,
  ) {}

  push(chunk: Buffer): void {
    if (this.channel.finished) return;
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    for (let newline = this.pending.indexOf(10); newline >= 0 && !this.channel.finished; newline = this.pending.indexOf(10)) {
      const line = this.pending.subarray(0, newline).toString("utf8");
      this.pending = this.pending.subarray(newline + 1);
      this.take(line);
    }
    if (this.pending.length > MAX_RECORD_BYTES) {
      this.channel.foreign.push(`${this.pending.subarray(0, 200).toString("utf8")}… (a line of over ${MAX_RECORD_BYTES} bytes)`);
      this.pending = Buffer.alloc(0);
    }
  }

  private take(line: string): void {
    if (!line.trim()) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      this.channel.foreign.push(line.slice(0, 200));
      return;
    }
    const record = parsed as Partial<GuardRecord> & { token?: unknown };
    if (typeof parsed !== "object" || parsed === null || record.token !== this.token || !isRecord(record)) {
      this.channel.foreign.push(line.slice(0, 200));
      return;
    }
    const { token: _token, ...rest } = record as GuardRecord & { token: string };
    this.channel.records.push(rest as GuardRecord);
    if (rest.kind === "finish") {
      this.channel.finished = true;
      this.onFinish();
    }
  }
}

function isRecord(record: Partial<GuardRecord>): boolean {
  switch (record.kind) {
    case "test":
      return typeof record.nodeid === "string" && ["setup", "call", "teardown"].includes(record.when as string) && typeof record.outcome === "string";
    case "problem":
    case "suspicious":
      return typeof record.text === "string";
    case "finish":
      return Number.isInteger(record.exitstatus) && Array.isArray(record.problems) && record.problems.every((p) => typeof p === "string");
    default:
      return false;
  }
}
