/**
 * Finding and reading one run's files for `inspect` and `tail`. A run is named by its
 * directory (what the extension creates per turn: meta.json, events.jsonl, result.json,
 * logs) or by its meta.json, whose paths then say where everything is. Reading never
 * throws for what a run can look like (missing, half-written or invalid files): those
 * become facts in the snapshot. Only a name that is no run at all is a RunNotFoundError.
 */
import fs from "node:fs";
import path from "node:path";
import { RUN_FILES, TREE_FILES } from "../contracts/layout.js";
import { MetaError, type MetaV1 } from "../contracts/meta.js";
import { parseMeta, peekResultPath } from "../contracts/meta-check.js";
import { readFileTail } from "../lib/file-tail.js";
import { describeJsonError } from "../lib/json-error.js";
import { processAlive } from "../lib/process.js";
import { errorText, isRecord } from "../lib/values.js";

/** Not a run: one line for the user (exit 2). */
export class RunNotFoundError extends Error {}

export interface RunFiles {
  /** The run directory (meta.json's folder when a meta file was named). */
  dir: string;
  metaPath?: string;
  resultPath: string;
  eventsPath: string;
  stdoutPath?: string;
  stderrPath?: string;
  transcriptPath?: string;
  /** The wrapper's own stderr, which the extension keeps beside the run. */
  wrapperLogPath?: string;
  /** meta.json as parsed (paths resolved), when it is valid. */
  meta?: MetaV1;
  /** meta.json as read, when it is JSON. */
  metaRaw?: unknown;
  /** Why meta.json could not be used, when it could not. */
  metaError?: string;
  /** Set when an agent folder was named: the run picked in it (its latest). */
  pickedRun?: string;
}

const exists = (file: string): boolean => fs.existsSync(file);

function conventionalFiles(dir: string, resultPath?: string): RunFiles {
  const at = (name: string) => path.join(dir, name);
  const optional = (name: string) => (exists(at(name)) ? at(name) : undefined);
  return {
    dir,
    resultPath: resultPath ?? at(RUN_FILES.result),
    eventsPath: at(RUN_FILES.events),
    stdoutPath: optional(RUN_FILES.stdout),
    stderrPath: optional(RUN_FILES.stderr),
    transcriptPath: optional(RUN_FILES.transcript),
    wrapperLogPath: optional(RUN_FILES.wrapperLog),
  };
}

function filesFromMeta(metaPath: string): RunFiles {
  const dir = path.dirname(metaPath);
  let raw: unknown;
  let text = "";
  try {
    text = fs.readFileSync(metaPath, "utf8");
    raw = JSON.parse(text);
  } catch (err) {
    const why =
      err instanceof SyntaxError
        ? `is not valid JSON: ${describeJsonError(text, err)}`
        : `cannot be read: ${errorText(err)}`;
    return { ...conventionalFiles(dir), metaPath, metaError: `${metaPath} ${why}` };
  }
  try {
    const meta = parseMeta(raw, dir);
    const wrapperLog = path.join(dir, RUN_FILES.wrapperLog);
    return {
      dir,
      metaPath,
      resultPath: meta.resultPath,
      eventsPath: meta.eventsPath,
      stdoutPath: meta.stdoutPath,
      stderrPath: meta.stderrPath,
      transcriptPath: meta.transcriptPath,
      wrapperLogPath: exists(wrapperLog) ? wrapperLog : undefined,
      meta,
      metaRaw: raw,
    };
  } catch (err) {
    if (!(err instanceof MetaError)) throw err;
    return { ...conventionalFiles(dir, peekResultPath(raw, dir)), metaPath, metaRaw: raw, metaError: err.message };
  }
}

/**
 * Where a run's files are. `target` is a run directory, a meta.json file, one of a run
 * directory's result.json / events.jsonl (which stand for their directory), or an agent's
 * folder in a tree directory (its latest run).
 */
export function locateRun(target: string, cwd = process.cwd()): RunFiles {
  const absolute = path.resolve(cwd, target);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(absolute);
  } catch {
    throw new RunNotFoundError(`no run directory or meta file at ${absolute}`);
  }
  if (stat.isFile()) {
    const name = path.basename(absolute);
    if (name === RUN_FILES.result || name === RUN_FILES.events) return locateRun(path.dirname(absolute));
    return filesFromMeta(absolute);
  }
  if (!stat.isDirectory()) throw new RunNotFoundError(`${absolute} is neither a run directory nor a meta file`);
  const metaPath = path.join(absolute, RUN_FILES.meta);
  if (exists(metaPath)) return filesFromMeta(metaPath);
  if (exists(path.join(absolute, RUN_FILES.result)) || exists(path.join(absolute, RUN_FILES.events))) {
    return conventionalFiles(absolute);
  }
  const latest = latestRun(absolute);
  if (latest) return { ...locateRun(latest), pickedRun: latest };
  throw new RunNotFoundError(`${absolute} is not a run directory (no meta.json, result.json or events.jsonl in it)`);
}

/**
 * An agent's folder in a tree directory holds `runs/0001-spawn`, `runs/0002-followup`, …,
 * named to sort in run order: naming the agent means its latest run.
 */
function latestRun(agentDir: string): string | undefined {
  const runs = path.join(agentDir, TREE_FILES.runs);
  let names: string[];
  try {
    names = fs
      .readdirSync(runs, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .sort();
  } catch {
    return undefined;
  }
  const last = names.at(-1);
  return last === undefined ? undefined : path.join(runs, last);
}

/** One non-empty line of events.jsonl: its 1-based line number and what it holds. */
export type EventLine =
  | { line: number; record: Record<string, unknown> }
  | { line: number; error: string; text: string };

/**
 * Parse events.jsonl text. A last line without its newline is still being written when the
 * run is live: it is returned as `partial` for the caller to decide.
 */
export function parseEventLines(
  text: string,
  firstLine = 1,
): { lines: EventLine[]; partial: string; nextLine: number } {
  const pieces = text.split("\n");
  const partial = pieces.pop() ?? "";
  const lines: EventLine[] = [];
  pieces.forEach((piece, index) => {
    if (piece.trim() !== "") lines.push(parseEventLine(piece, firstLine + index));
  });
  return { lines, partial, nextLine: firstLine + pieces.length };
}

export function parseEventLine(text: string, line: number): EventLine {
  try {
    const value: unknown = JSON.parse(text);
    if (isRecord(value)) return { line, record: value };
    return { line, error: "not a JSON object", text };
  } catch (err) {
    return { line, error: `not JSON (${errorText(err)})`, text };
  }
}

/** A file's text, or undefined when it does not exist; other failures are reported. */
export function readOptional(file: string | undefined): { text?: string; error?: string } {
  if (!file) return {};
  try {
    return { text: fs.readFileSync(file, "utf8") };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === "ENOENT" ? {} : { error: `${file} cannot be read: ${errorText(err)}` };
  }
}

/** The tail of a log the snapshot shows (16 KiB by default). */
export function readTail(file: string | undefined, maxBytes = 16 * 1024): string | undefined {
  return file === undefined ? undefined : readFileTail(file, maxBytes);
}

/** Everything `inspect` shows about a run, read once. */
export interface RunSnapshot {
  files: RunFiles;
  /** result.json parsed, when present and JSON. */
  result?: unknown;
  resultError?: string;
  events: EventLine[];
  eventsExists: boolean;
  eventsError?: string;
  /** A last events line still being written (no newline yet). */
  partialLine?: string;
  stderrTail?: string;
  wrapperLogTail?: string;
  /** The child's pid from run_start and whether it is still alive. */
  child?: { pid: number; alive: boolean };
  /** The optional artifacts that exist on disk (stdout.log, stderr.log, transcript.md, wrapper.log). */
  artifacts: string[];
  /** When the snapshot was taken (ms since epoch). */
  takenAt: number;
}

export function readRunSnapshot(files: RunFiles, now = Date.now()): RunSnapshot {
  const artifacts = [files.stdoutPath, files.stderrPath, files.transcriptPath, files.wrapperLogPath].flatMap((file) =>
    file && exists(file) ? [path.basename(file)] : [],
  );
  const snapshot: RunSnapshot = { files, events: [], eventsExists: false, artifacts, takenAt: now };
  const resultFile = readOptional(files.resultPath);
  if (resultFile.error) snapshot.resultError = resultFile.error;
  if (resultFile.text !== undefined) {
    try {
      snapshot.result = JSON.parse(resultFile.text);
    } catch (err) {
      snapshot.resultError = `${files.resultPath} is not valid JSON: ${errorText(err)}`;
    }
  }
  const eventsFile = readOptional(files.eventsPath);
  if (eventsFile.error) snapshot.eventsError = eventsFile.error;
  if (eventsFile.text !== undefined) {
    snapshot.eventsExists = true;
    const { lines, partial, nextLine } = parseEventLines(eventsFile.text);
    snapshot.events = lines;
    if (partial.trim() !== "") {
      // A finished run has no line in progress: its last line simply lacks a newline.
      if (snapshot.result !== undefined) snapshot.events.push(parseEventLine(partial, nextLine));
      else snapshot.partialLine = partial;
    }
  }
  snapshot.stderrTail = readTail(files.stderrPath);
  snapshot.wrapperLogTail = readTail(files.wrapperLogPath);
  const start = snapshot.events.find((line) => "record" in line && line.record.type === "run_start");
  const pid = start && "record" in start ? start.record.pid : undefined;
  if (typeof pid === "number" && pid > 0) snapshot.child = { pid, alive: processAlive(pid) };
  return snapshot;
}
