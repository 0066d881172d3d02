/**
 * One child turn = one `subagent-wrapper` process with its own run directory. The
 * extension knows the wrapper only through meta.json, result.json and a process.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { ENV } from "../../contracts/env.js";
import { type InboxMessageV1, inboxFileName, isInboxMessageName, parseInboxMessage } from "../../contracts/inbox.js";
import { RUN_FILES, runName, TREE_FILES } from "../../contracts/layout.js";
import type { MetaV1 } from "../../contracts/meta.js";
import { checkResult, type ResultV1 } from "../../contracts/result.js";
import type { AgentRecordV1 } from "../../contracts/tree.js";
import {
  type ProcessIdentity,
  processAlive,
  processArgs,
  processIdentity,
  sameProcessAlive,
} from "../../lib/process.js";
import { readJsonFile, readRegularFile } from "../../lib/regular-file.js";
import { WRAPPER_BIN } from "../config.js";
import { writeJsonAtomic } from "../tree/tree-dir.js";
import { withRolePrompt } from "./envelope.js";

export interface TurnSpec {
  record: AgentRecordV1;
  agentDir: string;
  treeDir: string;
  prompt: string;
  kind: "spawn" | "followup";
  cwd: string;
  /** While an isolated child's checkout is still being written: the file that says when it is done (meta.json `cwdReadyPath`). */
  cwdReadyPath?: string;
  instructions: string;
  timeoutMs: number;
}

/**
 * How turns run, injected into the runtime (the real one starts a wrapper process; tests
 * pass turns they finish by hand).
 */
export interface TurnOperations {
  /** Writes the turn's run directory and starts it; throws when it cannot start. */
  start(spec: TurnSpec): Promise<RunningTurn>;
  /**
   * The results of runs a previous process of this agent's parent started (a restore): the
   * wrappers still running are waited for all at once, `waitMs` in total, then each run is
   * read as it stands.
   */
  settledResults(runDirs: readonly string[], waitMs: number): Promise<Map<string, RunRead>>;
  /** Writes a live message (whole) into a running turn's inbox, as the `seq`-th message of its agent. */
  postLive(runDir: string, seq: number, message: InboxMessageV1): Promise<void>;
  /** The ids of the live messages a run confirmed in its child's conversation (its events.jsonl). */
  deliveredIds(runDir: string): Promise<Set<string>>;
}

/** A run's result.json as read back: the result, none (`{}`), or a damaged one (why). */
export interface RunRead {
  result?: ResultV1;
  damaged?: string;
}

export interface RunningTurn {
  runDir: string;
  /** Relative to the agent's folder, as stored in the record. */
  runName: string;
  pid: number | undefined;
  /** Resolves once the wrapper has exited, with its result.json (undefined if it wrote none). */
  finished: Promise<ResultV1 | undefined>;
  stop(): void;
  /** Once finished: how the wrapper process ended ("SIGKILL", "exit code 1", …). */
  howExited?(): string | undefined;
  /** Once finished without a result: why the result.json that is there could not be used. */
  damagedResult?(): string | undefined;
}

/**
 * The pi that runs this process, so children run the same pi even when it is not on PATH
 * (started as node_modules/.bin/pi or by absolute path). An explicit PI_SUBAGENTS_PI_BIN wins.
 */
export function currentPiBinary(
  env: NodeJS.ProcessEnv = process.env,
  argv: readonly string[] = process.argv,
): string | undefined {
  if (env[ENV.piBin]) return env[ENV.piBin];
  const script = argv[1];
  if (!script) return undefined;
  try {
    const real = fs.realpathSync(script);
    fs.accessSync(real, fs.constants.X_OK);
    return real;
  } catch {
    return undefined;
  }
}

export function buildMeta(spec: TurnSpec, runDir: string): MetaV1 {
  const { record } = spec;
  return {
    runId: `${record.nickname.replace(/\W+/g, "-")}-${path.basename(runDir)}`,
    task: spec.prompt,
    cwd: spec.cwd,
    resultPath: path.join(runDir, RUN_FILES.result),
    eventsPath: path.join(runDir, RUN_FILES.events),
    stdoutPath: path.join(runDir, RUN_FILES.stdout),
    stderrPath: path.join(runDir, RUN_FILES.stderr),
    transcriptPath: path.join(runDir, RUN_FILES.transcript),
    mode: spec.kind === "spawn" ? "single" : "followup",
    agent: record.role,
    agentSource: record.agentSource ?? "builtin",
    agentPath: record.path,
    requestedModel: record.model,
    resolvedModel: record.model,
    thinking: record.reasoning,
    tools: record.activeTools,
    extensions: record.extensions,
    noExtensions: true,
    systemPromptPath: path.join(runDir, RUN_FILES.instructions),
    sessionPath: record.sessionPath,
    startedAt: new Date().toISOString(),
    timeoutMs: spec.timeoutMs,
    env: { [ENV.treeDir]: spec.treeDir, [ENV.agentPath]: record.path },
    inboxPath: path.join(runDir, RUN_FILES.inbox),
    ...(spec.cwdReadyPath && { cwdReadyPath: spec.cwdReadyPath }),
  };
}

/** Writes the run directory and starts the wrapper (its own process group, no shell). */
export async function startTurn(spec: TurnSpec): Promise<RunningTurn> {
  const name = runName(spec.record.runs.length + 1, spec.kind);
  const runDir = path.join(spec.agentDir, TREE_FILES.runs, name);
  await fs.promises.mkdir(path.join(runDir, RUN_FILES.inbox), { recursive: true });
  // A user-defined role's text, snapshotted at spawn, follows the tree instructions every turn.
  const rolePrompt = await fs.promises
    .readFile(path.join(spec.agentDir, TREE_FILES.rolePrompt), "utf8")
    .catch(() => undefined);
  await fs.promises.writeFile(
    path.join(runDir, RUN_FILES.instructions),
    withRolePrompt(spec.instructions, spec.record.role, rolePrompt),
    "utf8",
  );
  const meta = buildMeta(spec, runDir);
  const metaPath = path.join(runDir, RUN_FILES.meta);
  await writeJsonAtomic(metaPath, meta);

  const piBinary = currentPiBinary();
  const wrapperLog = fs.openSync(path.join(runDir, RUN_FILES.wrapperLog), "a");
  const child = spawn(process.execPath, [WRAPPER_BIN, "run", metaPath], {
    cwd: spec.cwd,
    env: { ...process.env, [ENV.parentPid]: String(process.pid), ...(piBinary && { [ENV.piBin]: piBinary }) },
    stdio: ["ignore", "ignore", wrapperLog],
    detached: true,
  });
  fs.closeSync(wrapperLog);
  // The wrapper is not pi's to wait for: pi must be able to exit while a turn runs (it
  // stops the turn on session_shutdown), so the handle never holds the event loop.
  child.unref();
  let exitDescription: string | undefined;
  let damaged: string | undefined;
  const finished = new Promise<ResultV1 | undefined>((resolve) => {
    const done = () =>
      void readRunResult(runDir).then((read) => {
        damaged = read.damaged;
        resolve(read.result);
      });
    child.once("exit", (code, signal) => {
      exitDescription = signal ?? `exit code ${code}`;
      done();
    });
    child.once("error", (err) => {
      exitDescription = `could not start: ${err.message}`;
      done();
    });
  });
  // A restarted parent uses it to wait for a wrapper that outlived the previous process, and
  // the start time in it to tell that wrapper from a process that got its pid later. Once
  // the wrapper runs, nothing may fail the start: without the file a restore only cannot wait.
  if (child.pid) writeWrapperPid(runDir, child.pid);
  return {
    runDir,
    runName: name,
    pid: child.pid,
    finished,
    howExited: () => exitDescription,
    damagedResult: () => damaged,
    stop: () => {
      if (child.exitCode !== null || child.signalCode !== null || !child.pid) return;
      try {
        // The wrapper stops pi's whole group and records `interrupted`.
        process.kill(child.pid, "SIGTERM");
      } catch {
        // already gone
      }
    },
  };
}

/** A run's result.json, checked against the result contract. */
export async function readRunResult(runDir: string): Promise<RunRead> {
  const read = await readJsonFile(path.join(runDir, RUN_FILES.result));
  if (!read.ok) return read.absent ? {} : { damaged: `${RUN_FILES.result} ${read.problem}` };
  const checked = checkResult(read.value);
  return checked.ok ? { result: checked.record } : { damaged: `${RUN_FILES.result} is damaged: ${checked.problem}` };
}

/** What wrapper.pid holds: the wrapper's pid and what identifies it (ProcessIdentity). */
function writeWrapperPid(runDir: string, pid: number): void {
  try {
    fs.writeFileSync(path.join(runDir, RUN_FILES.wrapperPid), `${JSON.stringify(processIdentity(pid))}\n`);
  } catch {
    // a full disk: the turn runs all the same
  }
}

/** The wrapper recorded in a run directory; a file of an older version holds the bare pid. */
export async function readWrapperPid(runDir: string): Promise<ProcessIdentity | undefined> {
  const read = await readRegularFile(path.join(runDir, RUN_FILES.wrapperPid), 4096);
  if (!read.ok) return undefined;
  const text = read.text.trim();
  let value: unknown = Number(text);
  try {
    if (text.startsWith("{")) value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const identity: Partial<ProcessIdentity> =
    typeof value === "number" ? { pid: value } : (value as Partial<ProcessIdentity>);
  if (typeof identity !== "object" || identity === null || !Number.isSafeInteger(identity.pid) || identity.pid! <= 1)
    return undefined;
  return {
    pid: identity.pid!,
    ...(typeof identity.startTicks === "string" && { startTicks: identity.startTicks }),
    ...(typeof identity.bootId === "string" && { bootId: identity.bootId }),
  };
}

/**
 * Whether the wrapper of `runDir` is still running: its recorded process is alive with the
 * same start time, or — for a pid file without one — the live process's command line names
 * this run's meta.json. After a reboot or once pids wrap, the pid may belong to anything.
 */
export function wrapperRunning(wrapper: ProcessIdentity, runDir: string): boolean {
  if (!sameProcessAlive(wrapper)) return false;
  if (wrapper.startTicks) return true;
  const args = processArgs(wrapper.pid);
  return args === undefined || args.includes(path.join(runDir, RUN_FILES.meta));
}

/**
 * A wrapper whose parent went away notices within a second, stops pi (SIGKILL 3 s after
 * SIGTERM) and drains its output (at most 2 s) before it writes result.json.
 */
export const ORPHAN_WRAPPER_WAIT_MS = 10_000;
/** How often a restore looks again at the wrappers it waits for. */
const RESTORE_POLL_MS = 100;

/** Time as a restore waits on it (tests inject one that moves only when asked). */
export interface WaitClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const realClock: WaitClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/**
 * The results of runs a previous process started. A run whose wrapper is still running (the
 * parent was killed and restarted at once) is waited for, so a restore reports what the run
 * really did instead of guessing; all of them at once, until one deadline `waitMs` away.
 */
export async function settledRunResults(
  runDirs: readonly string[],
  waitMs = ORPHAN_WRAPPER_WAIT_MS,
  clock: WaitClock = realClock,
  running: (wrapper: ProcessIdentity, runDir: string) => boolean = wrapperRunning,
): Promise<Map<string, RunRead>> {
  const reads = new Map<string, RunRead>();
  let waiting: Array<{ runDir: string; wrapper: ProcessIdentity }> = [];
  for (const runDir of runDirs) {
    const read = await readRunResult(runDir);
    const wrapper = read.result || read.damaged ? undefined : await readWrapperPid(runDir);
    if (wrapper && running(wrapper, runDir)) waiting.push({ runDir, wrapper });
    else reads.set(runDir, read);
  }
  const deadline = clock.now() + waitMs;
  while (waiting.length > 0 && clock.now() < deadline) {
    await clock.sleep(Math.min(RESTORE_POLL_MS, deadline - clock.now()));
    const still: typeof waiting = [];
    for (const entry of waiting) {
      const read = await readRunResult(entry.runDir);
      if (read.result || read.damaged) reads.set(entry.runDir, read);
      // Read once more: it may have written its result just before it exited.
      else if (!running(entry.wrapper, entry.runDir)) reads.set(entry.runDir, await readRunResult(entry.runDir));
      else still.push(entry);
    }
    waiting = still;
  }
  for (const { runDir } of waiting) reads.set(runDir, await readRunResult(runDir));
  return reads;
}

/** A live message file in the run's inbox, written whole (the task extension never reads half of one). */
export async function postLiveMessage(runDir: string, seq: number, message: InboxMessageV1): Promise<void> {
  await writeJsonAtomic(path.join(runDir, RUN_FILES.inbox, inboxFileName(seq)), message);
}

/** Lines of a JSON Lines file that mention `needle`, parsed (a file that is not there has none). */
async function linesWith(file: string, needle: string): Promise<unknown[]> {
  // Never a plain readFile: a FIFO where a run's file belongs would block it forever.
  const read = await readRegularFile(file);
  const text = read.ok ? read.text : "";
  const out: unknown[] = [];
  for (const line of text.split("\n")) {
    // Cheap filter first: most lines are something else.
    if (!line.includes(needle)) continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      // a line its writer was writing when it died
    }
  }
  return out;
}

/** How long a run's pi may outlive its killed wrapper: its orphan check runs every second. */
export const ORPHAN_CHILD_WAIT_MS = 5000;

/** Waits (up to `waitMs`) until the pi a run started (its run_start pid) has exited. */
async function childGone(eventsPath: string, waitMs: number): Promise<void> {
  const start = (await linesWith(eventsPath, '"run_start"'))[0] as { pid?: unknown } | undefined;
  const pid = typeof start?.pid === "number" ? start.pid : undefined;
  if (!pid || pid <= 1) return;
  const deadline = Date.now() + waitMs;
  while (runningProcess(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
}

/** Alive and not a zombie (an orphan nobody reaps has exited all the same; Linux's /proc says so). */
function runningProcess(pid: number): boolean {
  if (!processAlive(pid)) return false;
  try {
    return !/\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return true;
  }
}

/** The text of a session entry that is a user message, else undefined. */
function sessionUserText(entry: unknown): string | undefined {
  const message = (entry as { type?: unknown; message?: { role?: unknown; content?: unknown } }).message;
  if ((entry as { type?: unknown }).type !== "message" || message?.role !== "user") return undefined;
  if (typeof message.content === "string") return message.content;
  if (!Array.isArray(message.content)) return undefined;
  return (message.content as Array<{ type?: unknown; text?: unknown }>)
    .filter((block) => block.type === "text" && typeof block.text === "string")
    .map((block) => block.text as string)
    .join("\n");
}

/**
 * The ids of the live messages a run's child read: those its events.jsonl records
 * (`message_delivered`), and those still in its inbox that the child's session holds as a
 * user message — pi can put a message it had queued into the conversation as it stops
 * (pi 1.x on SIGTERM, its wrapper already gone), and the session is the conversation.
 */
export async function deliveredMessageIds(runDir: string): Promise<Set<string>> {
  const ids = new Set<string>();
  const events = path.join(runDir, RUN_FILES.events);
  for (const record of await linesWith(events, '"message_delivered"')) {
    const { type, id } = record as { type?: unknown; id?: unknown };
    if (type === "message_delivered" && typeof id === "string") ids.add(id);
  }
  const inbox = path.join(runDir, RUN_FILES.inbox);
  const names = (await fs.promises.readdir(inbox).catch(() => [])).filter(isInboxMessageName);
  if (names.length === 0) return ids;
  const meta = await readJsonFile(path.join(runDir, RUN_FILES.meta));
  const sessionPath = meta.ok ? (meta.value as Partial<MetaV1> | null)?.sessionPath : undefined;
  if (!sessionPath) return ids;
  // A wrapper that died (no result.json) leaves its pi for up to a second, stopping: what
  // it writes to the session as it goes counts, so the session is read once it is gone.
  const ended = await readRunResult(runDir);
  if (!ended.result && !ended.damaged) await childGone(events, ORPHAN_CHILD_WAIT_MS);
  for (const name of names) {
    const file = await readRegularFile(path.join(inbox, name));
    const message = file.ok ? parseInboxMessage(file.text) : undefined;
    if (!message || ids.has(message.id)) continue;
    const entries = await linesWith(sessionPath, message.id);
    if (entries.some((entry) => sessionUserText(entry) === message.text)) ids.add(message.id);
  }
  return ids;
}

/** Turns as `subagent-wrapper` processes. */
export const wrapperTurns: TurnOperations = {
  start: startTurn,
  settledResults: (runDirs, waitMs) => settledRunResults(runDirs, waitMs),
  postLive: postLiveMessage,
  deliveredIds: deliveredMessageIds,
};
