/**
 * Runs the real `subagent-wrapper` CLI (bin/ → dist/) on a meta.json in a temp dir, with
 * the fake pi first on PATH, and reads back what a script would: exit code, stderr,
 * result.json, events.jsonl and the other artifacts.
 */
import type { StdioOptions } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { EventRecord } from "../../src/contracts/events.js";
import type { ResultV1 } from "../../src/contracts/result.js";
import { REPO_ROOT } from "./pi-home.js";
import { type ProcessResult, type SpawnedProcess, spawnProcess } from "./processes.js";

export const WRAPPER_BIN = path.join(REPO_ROOT, "bin", "subagent-wrapper");
export const FAKE_PI_DIR = path.join(REPO_ROOT, "fixtures", "fake-pi");
/** A command runner whose far side is this machine: `env subagent-wrapper serve`, capacity 1 (meta.json `runner`). */
export const HERE_RUNNER = {
  name: "here",
  kind: "command",
  capacity: 1,
  command: ["env"],
  remote_command: [process.execPath, WRAPPER_BIN],
} as const;

export interface WrapperRunOutput extends ProcessResult {
  dir: string;
  result: ResultV1 | undefined;
  events: EventRecord[];
  read(name: string): Promise<string>;
}

export interface StartOptions {
  env?: NodeJS.ProcessEnv;
  args?: string[];
  /** The wrapper's stdio (default: stdin ignored, stdout and stderr captured). */
  stdio?: StdioOptions;
  /** Hard limit of the wrapper run (default 25 s). */
  timeoutMs?: number;
}

export interface WrapperCase {
  dir: string;
  metaPath: string;
  /** The meta.json fields the case wrote (relative paths as written). */
  meta: Record<string, unknown>;
  start(opts?: StartOptions): SpawnedProcess;
  run(opts?: StartOptions): Promise<WrapperRunOutput>;
  collect(processResult: ProcessResult): Promise<WrapperRunOutput>;
}

const cases: WrapperCase[] = [];

/** In each case dir: the signals the fake pi received, one JSON line each (see fixtures/fake-pi/README.md). */
const FAKE_PI_SIGNALS_FILE = "fake-pi-signals.jsonl";

/** The default meta: every artifact in the case's temp dir, a short grace. */
export function defaultMeta(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    runId: "run-1",
    task: "inspect auth",
    cwd: ".",
    resultPath: "out/result.json",
    eventsPath: "out/events.jsonl",
    stdoutPath: "out/stdout.log",
    stderrPath: "out/stderr.log",
    transcriptPath: "out/transcript.md",
    graceMs: 300,
    ...overrides,
  };
}

/**
 * A temp dir with meta.json. `scenario` (a fake-pi scenario name or inline object) goes in
 * the environment; `metaText` replaces meta.json's text entirely (for bad-input tests).
 */
export async function wrapperCase(
  options: { meta?: Record<string, unknown>; scenario?: string | object; metaText?: string } = {},
): Promise<WrapperCase> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "psa-wrapper-test-"));
  const meta = options.meta ?? defaultMeta();
  const metaPath = path.join(dir, "meta.json");
  const tmp = path.join(dir, "tmp");
  await mkdir(tmp);
  await writeFile(metaPath, options.metaText ?? JSON.stringify(meta, null, 2));
  const scenarioEnv: NodeJS.ProcessEnv =
    options.scenario === undefined
      ? {}
      : typeof options.scenario === "string"
        ? { FAKE_PI_SCENARIO: options.scenario }
        : { FAKE_PI_SCRIPT: JSON.stringify(options.scenario) };
  const baseEnv = (): NodeJS.ProcessEnv => ({
    ...process.env,
    PATH: `${FAKE_PI_DIR}${path.delimiter}${process.env.PATH ?? ""}`,
    FAKE_PI_RECORD: path.join(dir, "fake-pi-record.json"),
    FAKE_PI_SIGNALS: path.join(dir, FAKE_PI_SIGNALS_FILE),
    // Anything a run puts in the temp dir lands in the case dir and goes with it.
    TMPDIR: tmp,
    ...scenarioEnv,
  });
  const start = (opts: StartOptions = {}) =>
    spawnProcess(process.execPath, [WRAPPER_BIN, ...(opts.args ?? [metaPath])], {
      cwd: dir,
      env: { ...baseEnv(), ...opts.env },
      ...(opts.stdio && { stdio: opts.stdio }),
      timeoutMs: opts.timeoutMs ?? 25_000,
    });
  const collect = async (processResult: ProcessResult): Promise<WrapperRunOutput> => {
    const read = (name: string) => readFile(path.join(dir, name), "utf8");
    const resultText = await read("out/result.json").catch(() => undefined);
    const eventsText = await read("out/events.jsonl").catch(() => "");
    return {
      ...processResult,
      dir,
      result: resultText === undefined ? undefined : (JSON.parse(resultText) as ResultV1),
      events: eventsText
        .split("\n")
        .filter((line) => line !== "")
        .map((line) => JSON.parse(line) as EventRecord),
      read,
    };
  };
  const wrapper: WrapperCase = {
    dir,
    metaPath,
    meta,
    start,
    collect,
    run: async (opts) => collect(await start(opts).done),
  };
  cases.push(wrapper);
  return wrapper;
}

/** Remove every case dir (call from afterEach). */
export async function cleanupWrapperCases(): Promise<void> {
  await Promise.all(cases.splice(0).map((c) => rm(c.dir, { recursive: true, force: true })));
}

/** What the fake pi recorded about how it was started. */
export async function fakePiRecord(
  dir: string,
): Promise<{ argv: string[]; task: string; stdin: string; env: Record<string, string>; pid: number; cwd: string }> {
  return JSON.parse(await readFile(path.join(dir, "fake-pi-record.json"), "utf8"));
}

/** The signals the fake pi received, with the time each arrived (ms since the epoch); none if it got none. */
export async function fakePiSignals(dir: string): Promise<Array<{ signal: NodeJS.Signals; ts: number }>> {
  const text = await readFile(path.join(dir, FAKE_PI_SIGNALS_FILE), "utf8").catch(() => "");
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as { signal: NodeJS.Signals; ts: number });
}

/**
 * The signals that reached the fake pi: those it logged, then the one it died of (which it
 * cannot log: SIGKILL, or a SIGTERM that arrived before its handlers were installed).
 */
export async function signalsReached(run: WrapperRunOutput): Promise<NodeJS.Signals[]> {
  const logged = (await fakePiSignals(run.dir)).map((s) => s.signal);
  const diedOf = run.result?.childSignal as NodeJS.Signals | null | undefined;
  return diedOf && !logged.includes(diedOf) ? [...logged, diedOf] : logged;
}
