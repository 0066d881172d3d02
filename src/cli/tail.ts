/**
 * `subagent-wrapper tail <run-dir | meta.json>`: follow events.jsonl as it grows, print
 * each record, stop when the run ends (run_end, or result.json appears). Polls the file:
 * it works on every file system, and a record a few hundred ms late is fine for a person.
 */
import fs from "node:fs";
import { JsonlFollower } from "../lib/jsonl-follower.js";
import { processAlive } from "../lib/process.js";
import { errorText } from "../lib/values.js";
import { type EventLine, locateRun, parseEventLine, type RunFiles, RunNotFoundError } from "./run-files.js";
import {
  followDecision,
  formatStoppedSummary,
  formatTailLine,
  formatTailSummary,
  tailExitCode,
} from "./tail-format.js";

export interface TailFlags {
  fromStart?: boolean;
  lines: number;
  json?: boolean;
  /** Poll interval (tests shorten it). */
  pollMs?: number;
}

/** Reads events.jsonl as it grows: the raw text of each new line, and what it holds. */
export class EventLineFollower {
  private readonly follower: JsonlFollower;

  constructor(readonly file: string) {
    this.follower = new JsonlFollower(file);
  }

  /** New complete lines (raw text and parsed); none when the file does not exist yet. */
  async read(): Promise<{ raw: string[]; lines: EventLine[] }> {
    const { lines } = await this.follower.read();
    return { raw: lines.map((line) => line.text), lines: lines.map((line) => parseEventLine(line.text, line.line)) };
  }
}

function readResult(file: string): unknown {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
}

const EXIT_ON_SIGNAL = { SIGINT: 130, SIGTERM: 143 } as const;

export async function tailCommand(target: string, flags: TailFlags): Promise<number> {
  let files: RunFiles;
  try {
    files = locateRun(target);
  } catch (err) {
    if (!(err instanceof RunNotFoundError)) throw err;
    process.stderr.write(`subagent-wrapper tail: ${err.message}\n`);
    return 2;
  }
  if (files.pickedRun) process.stderr.write(`subagent-wrapper tail: the agent's latest run: ${files.pickedRun}\n`);
  const pollMs = flags.pollMs ?? 200;
  const follower = new EventLineFollower(files.eventsPath);
  const print = (text: string) => {
    if (text !== "") process.stdout.write(`${text}\n`);
  };
  const note = (text: string) => process.stderr.write(`${text}\n`);

  let stoppedBy: keyof typeof EXIT_ON_SIGNAL | undefined;
  let wake: (() => void) | undefined;
  const onSignal = (signal: keyof typeof EXIT_ON_SIGNAL) => () => {
    stoppedBy ??= signal;
    wake?.();
  };
  const handlers = { SIGINT: onSignal("SIGINT"), SIGTERM: onSignal("SIGTERM") };
  for (const [signal, handler] of Object.entries(handlers)) process.on(signal, handler);
  const sleep = () =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, pollMs);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  let first = true;
  let childPid: number | undefined;
  let runEnd: Record<string, unknown> | undefined;
  let runEndAt: number | undefined;
  let lastDataAt = Date.now();
  try {
    for (;;) {
      const resultBefore = readResult(files.resultPath);
      const { raw, lines } = await follower.read();
      if (first && raw.length === 0 && resultBefore === undefined) note(`waiting for ${files.eventsPath} …`);
      if (lines.length > 0) lastDataAt = Date.now();
      for (const line of lines) {
        if (!("record" in line)) continue;
        if (line.record.type === "run_start" && typeof line.record.pid === "number") childPid = line.record.pid;
        if (line.record.type === "run_end" && !runEnd) {
          runEnd = line.record;
          runEndAt = Date.now();
        }
      }
      // Like tail -f: what was there before following started is cut to the last --lines.
      const keep = first && !flags.fromStart ? flags.lines : Infinity;
      if (flags.json) for (const text of raw.slice(-keep)) print(text);
      else for (const line of lines.slice(-keep)) print(formatTailLine(line));

      if (stoppedBy) return EXIT_ON_SIGNAL[stoppedBy];
      const result = resultBefore ?? readResult(files.resultPath);
      const decision = followDecision({
        resultPresent: resultBefore !== undefined,
        runEndAt,
        childAlive: childPid === undefined ? undefined : processAlive(childPid),
        lastDataAt,
        now: Date.now(),
      });
      if (decision !== "wait") {
        const summary = decision === "stopped" ? formatStoppedSummary(childPid) : formatTailSummary(result, runEnd);
        (flags.json ? note : print)(summary);
        return decision === "stopped" ? 1 : tailExitCode(result, runEnd);
      }
      first = false;
      await sleep();
      if (stoppedBy) return EXIT_ON_SIGNAL[stoppedBy];
    }
  } catch (err) {
    note(`subagent-wrapper tail: ${errorText(err)}`);
    return 1;
  } finally {
    for (const [signal, handler] of Object.entries(handlers)) process.off(signal, handler);
  }
}
