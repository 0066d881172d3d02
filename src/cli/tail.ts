/**
 * `subagent-wrapper tail <run-dir | meta.json | tree-dir>`: follow events.jsonl as it grows, print
 * each record, stop when the run ends (run_end, or result.json appears). Polls the file:
 * it works on every file system, and a record a few hundred ms late is fine for a person.
 */
import fs from "node:fs";
import path from "node:path";
import { type Clock, systemClock } from "../lib/clock.js";
import { JsonlFollower } from "../lib/jsonl-follower.js";
import { processAlive } from "../lib/process.js";
import { errorText } from "../lib/values.js";
import { isTreeDirectory } from "./inspect-tree.js";
import { type EventLine, locateRun, parseEventLine, type RunFiles, RunNotFoundError } from "./run-files.js";
import {
  followDecision,
  formatStoppedSummary,
  formatTailLine,
  formatTailSummary,
  tailExitCode,
} from "./tail-format.js";
import { pickTreeRun, treeRuns, treeTailNote } from "./tree-tail-target.js";

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

const print = (text: string): void => {
  if (text !== "") process.stdout.write(`${text}\n`);
};
const note = (text: string): void => {
  process.stderr.write(`${text}\n`);
};

/**
 * The run a target names: a run, its meta.json, an agent's folder (its latest run), or a tree
 * directory (its newest running run, else its newest: tree-tail-target.ts). Undefined, after
 * one line on stderr saying what to pass, when there is no run there.
 */
function runOf(target: string): RunFiles | undefined {
  const absolute = path.resolve(target);
  if (isTreeDirectory(absolute)) {
    const choice = pickTreeRun(treeRuns(absolute));
    if (!choice) {
      note(
        `subagent-wrapper tail: ${absolute} is a tree directory with no run yet; pass a run directory (agents/<name>/runs/<run>) or its meta.json`,
      );
      return undefined;
    }
    note(`subagent-wrapper tail: ${treeTailNote(absolute, choice)}`);
    target = choice.run.dir;
  }
  try {
    const files = locateRun(target);
    if (files.pickedRun) note(`subagent-wrapper tail: the agent's latest run: ${files.pickedRun}`);
    return files;
  } catch (err) {
    if (!(err instanceof RunNotFoundError)) throw err;
    note(`subagent-wrapper tail: ${err.message}`);
    return undefined;
  }
}

export async function tailCommand(target: string, flags: TailFlags, clock: Clock = systemClock): Promise<number> {
  const files = runOf(target);
  if (!files) return 2;
  const stop = new StopSignals();
  try {
    return await follow(files, flags, clock, stop);
  } catch (err) {
    note(`subagent-wrapper tail: ${errorText(err)}`);
    return 1;
  } finally {
    stop.dispose();
  }
}

/** Prints the records as they come, until the run ends, stops, or a signal comes; resolves with tail's exit code. */
async function follow(files: RunFiles, flags: TailFlags, clock: Clock, stop: StopSignals): Promise<number> {
  const pollMs = flags.pollMs ?? 200;
  const follower = new EventLineFollower(files.eventsPath);
  const run = new RunEndWatch(clock.now());
  for (let first = true; ; first = false) {
    const resultBefore = readResult(files.resultPath);
    const { raw, lines } = await follower.read();
    if (first && raw.length === 0 && resultBefore === undefined) note(`waiting for ${files.eventsPath} …`);
    run.observe(lines, clock.now());
    // Like tail -f: what was there before following started is cut to the last --lines.
    const keep = first && !flags.fromStart ? flags.lines : Infinity;
    if (flags.json) for (const text of raw.slice(-keep)) print(text);
    else for (const line of lines.slice(-keep)) print(formatTailLine(line));

    if (stop.exitCode !== undefined) return stop.exitCode;
    const ended = endOfFollow(files, flags, resultBefore, run, clock.now());
    if (ended !== undefined) return ended;
    await stop.sleep(clock, pollMs);
    if (stop.exitCode !== undefined) return stop.exitCode;
  }
}

/** Whether following is over (followDecision): then the summary is printed and tail's exit code returned. */
function endOfFollow(
  files: RunFiles,
  flags: TailFlags,
  resultBefore: unknown,
  run: RunEndWatch,
  now: number,
): number | undefined {
  const result = resultBefore ?? readResult(files.resultPath);
  const decision = followDecision({
    resultPresent: resultBefore !== undefined,
    runEndAt: run.runEndAt,
    childAlive: run.childPid === undefined ? undefined : processAlive(run.childPid),
    lastDataAt: run.lastDataAt,
    now,
  });
  if (decision === "wait") return undefined;
  const summary = decision === "stopped" ? formatStoppedSummary(run.childPid) : formatTailSummary(result, run.runEnd);
  (flags.json ? note : print)(summary);
  return decision === "stopped" ? 1 : tailExitCode(result, run.runEnd);
}

/** What the records so far say about the run's end: pi's pid, its run_end and when it came, when data last came. */
class RunEndWatch {
  childPid: number | undefined;
  runEnd: Record<string, unknown> | undefined;
  runEndAt: number | undefined;

  constructor(public lastDataAt: number) {}

  observe(lines: EventLine[], now: number): void {
    if (lines.length > 0) this.lastDataAt = now;
    for (const line of lines) {
      if (!("record" in line)) continue;
      if (line.record.type === "run_start" && typeof line.record.pid === "number") this.childPid = line.record.pid;
      if (line.record.type === "run_end" && !this.runEnd) {
        this.runEnd = line.record;
        this.runEndAt = now;
      }
    }
  }
}

/** SIGINT and SIGTERM end the follow: the wait in progress wakes, and tail exits with the signal's code. */
class StopSignals {
  private stoppedBy: keyof typeof EXIT_ON_SIGNAL | undefined;
  private wake: (() => void) | undefined;
  private readonly handlers = { SIGINT: this.handler("SIGINT"), SIGTERM: this.handler("SIGTERM") };

  constructor() {
    for (const [signal, handler] of Object.entries(this.handlers)) process.on(signal, handler);
  }

  /** The exit code of the signal that came, if one did. */
  get exitCode(): number | undefined {
    return this.stoppedBy && EXIT_ON_SIGNAL[this.stoppedBy];
  }

  /** Waits `ms`, or less if a signal comes meanwhile. */
  sleep(clock: Clock, ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = clock.setTimeout(resolve, ms);
      this.wake = () => {
        clock.clearTimeout(timer);
        resolve();
      };
    });
  }

  dispose(): void {
    for (const [signal, handler] of Object.entries(this.handlers)) process.off(signal, handler);
  }

  private handler(signal: keyof typeof EXIT_ON_SIGNAL): () => void {
    return () => {
      this.stoppedBy ??= signal;
      this.wake?.();
    };
  }
}
