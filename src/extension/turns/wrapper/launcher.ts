/**
 * One child turn = one `subagent-wrapper` process with its own run directory. The
 * extension knows the wrapper only through meta.json, result.json and a process.
 */
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { DialogSettingsV1 } from "../../../contracts/dialogs.js";
import { ENV } from "../../../contracts/env.js";
import { type InboxMessageV1, inboxFileName } from "../../../contracts/inbox.js";
import { RUN_FILES, runName, TREE_FILES } from "../../../contracts/layout.js";
import type { TurnLimits } from "../../../contracts/limits.js";
import type { MetaV1 } from "../../../contracts/meta.js";
import type { ResultV1 } from "../../../contracts/result.js";
import type { AgentRecordV1 } from "../../../contracts/tree.js";
import type { AgentVerify, MetaVerify } from "../../../contracts/verify.js";
import { writeJsonAtomic } from "../../../lib/atomic-file.js";
import { type Clock, isoNow, systemClock } from "../../../lib/clock.js";
import { processIdentity } from "../../../lib/process.js";
import { identityFromEnv, WRAPPER_BIN } from "../../config.js";
import { type Cooldowns, readCooldowns } from "../../tree/cooldowns.js";
import { withRolePrompt } from "../delivery/envelope.js";
import { turnModels } from "../fallback-turns.js";
import { reattachTurn } from "./reattach.js";
import { resultInPlace } from "./result-watch.js";
import { deliveredMessageIds, type RunRead, readRunResult, settledRunResults } from "./run-reads.js";

export type { RunRead };

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
  /** The agent's per-turn limits with the turn-time default filled in (meta.json `limits`). */
  limits: TurnLimits;
  /** Extra meta.json `env` (what is left of the tree's budget, the root's session, the dialogs' route). */
  env?: Record<string, string>;
  /** meta.json `dialogs`: the child's dialogs come to its parent. */
  dialogs?: DialogSettingsV1;
  /**
   * Records the run (the agent's record names it) once its folder is claimed and before its
   * wrapper can start: a parent killed after the start finds the run and re-attaches it,
   * never starts it again. Throwing fails the start.
   */
  recordRun?(runName: string): Promise<void>;
  /** The runtime's clock: the run's start time and the model cool-downs in force are read on it. */
  clock?: Clock;
}

/**
 * How turns run, injected into the runtime (the real one starts a wrapper process; tests
 * pass turns they finish by hand).
 */
export interface TurnOperations {
  /**
   * Claims a new run directory (never one that exists), records the run (`spec.recordRun`),
   * writes the run's files and starts it; throws when it cannot start.
   */
  start(spec: TurnSpec): Promise<RunningTurn>;
  /**
   * Whether a run a previous process recorded ever started: false when its wrapper could not
   * have run (no meta.json, nor anything a wrapper writes), so the turn may start again, in a
   * new run directory.
   */
  runStarted?(runDir: string): Promise<boolean>;
  /**
   * The results of runs a previous process of this agent's parent started (a restore): the
   * wrappers still running are waited for all at once, `waitMs` in total, then each run is
   * read as it stands.
   */
  settledResults(runDirs: readonly string[], waitMs: number): Promise<Map<string, RunRead>>;
  /**
   * A run whose wrapper a previous process started and that still runs: watched again as a
   * running turn (undefined when its wrapper is gone or has written its result).
   */
  attach?(runDir: string, clock?: Clock): Promise<RunningTurn | undefined>;
  /** Writes a live message (whole) into a running turn's inbox, as the `seq`-th message of its agent. */
  postLive(runDir: string, seq: number, message: InboxMessageV1): Promise<void>;
  /** The ids of the live messages a run confirmed in its child's conversation (its events.jsonl). */
  deliveredIds(runDir: string): Promise<Set<string>>;
}

export interface RunningTurn {
  runDir: string;
  /** Relative to the agent's folder, as stored in the record. */
  runName: string;
  pid: number | undefined;
  /** Resolves once the run's result.json is in place, or else once the wrapper has exited (undefined if it wrote none). */
  finished: Promise<ResultV1 | undefined>;
  /** Resolves once the wrapper process is gone (a stop waits for it: nothing of a stopped turn runs after). */
  exited?: Promise<void>;
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

export function buildMeta(spec: TurnSpec, runDir: string, cooling: Cooldowns = {}): MetaV1 {
  const { record } = spec;
  const models = turnModels(record, cooling);
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
    resolvedModel: models.model,
    thinking: models.thinking,
    ...(models.fallbackModels.length > 0 && { fallbackModels: models.fallbackModels }),
    tools: record.activeTools,
    extensions: record.extensions,
    noExtensions: true,
    systemPromptPath: path.join(runDir, RUN_FILES.instructions),
    sessionPath: record.sessionPath,
    startedAt: isoNow(spec.clock),
    limits: spec.limits,
    env: {
      ...spec.env,
      [ENV.treeDir]: spec.treeDir,
      [ENV.agentPath]: record.path,
      ...(record.runner && { [ENV.runner]: `${record.runner.name} (${record.runner.kind})` }),
    },
    inboxPath: path.join(runDir, RUN_FILES.inbox),
    ...(spec.cwdReadyPath && { cwdReadyPath: spec.cwdReadyPath }),
    ...(spec.dialogs && { dialogs: spec.dialogs }),
    ...(record.runner && {
      runner: record.runner,
      runnerWorkspacePath: path.join(spec.agentDir, TREE_FILES.runnerWorkspace),
    }),
    ...(record.verify && { verify: metaVerify(record.verify, spec.agentDir, runDir) }),
  };
}

/** The agent's checks as its run's wrapper takes them: milliseconds, files, the reviewer's text beside meta.json. */
function metaVerify(verify: AgentVerify, agentDir: string, runDir: string): MetaVerify {
  const review = verify.review;
  return {
    ...(verify.run && { run: verify.run }),
    ...(review && {
      review: {
        name: review.name,
        ...(review.model && { model: review.model }),
        ...(review.prompt && { systemPromptPath: path.join(runDir, RUN_FILES.reviewPrompt) }),
      },
    }),
    maxRepairs: verify.max_repairs,
    timeoutMs: verify.timeout * 1000,
    statePath: path.join(agentDir, TREE_FILES.verifyChecks),
  };
}

/** How many taken run folder names are skipped before a start gives up (a tree someone filled with folders). */
const RUN_NAME_TRIES = 1000;

/**
 * Claims the agent's next run directory: created here, never one that exists, so two wrappers
 * never share a run's files (a folder a killed parent made before its wrapper could start is
 * left as it is, and the turn gets the next number).
 */
export async function claimRunDir(agentDir: string, firstIndex: number, kind: string): Promise<string> {
  const runs = path.join(agentDir, TREE_FILES.runs);
  await fs.promises.mkdir(runs, { recursive: true });
  for (let index = firstIndex; index < firstIndex + RUN_NAME_TRIES; index++) {
    const runDir = path.join(runs, runName(index, kind));
    try {
      await fs.promises.mkdir(runDir);
      return runDir;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
  throw new Error(`no free run folder in ${runs} after ${RUN_NAME_TRIES} tries`);
}

/** What a wrapper that started leaves in its run folder, meta.json first (its input, written just before it starts). */
const STARTED_TRACES = [RUN_FILES.meta, RUN_FILES.wrapperPid, RUN_FILES.events, RUN_FILES.result] as const;

/**
 * Whether a run may have started: false only when its folder holds none of what a started
 * wrapper leaves (a wrapper cannot run without meta.json). Anything unclear counts as started,
 * so a turn is never started twice.
 */
export async function runStarted(runDir: string): Promise<boolean> {
  for (const name of STARTED_TRACES) {
    try {
      await fs.promises.lstat(path.join(runDir, name));
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") return true;
    }
  }
  return false;
}

/** The root's spare wrapper (spare-launch.ts): handed the turn when it fits, told of each start. */
export interface SpareHook {
  /** The spare wrapper, now running the turn at `metaPath`; undefined: the turn starts its own. */
  handTo(meta: MetaV1, metaPath: string): ChildProcess | undefined;
  started(meta: MetaV1): void;
}

/**
 * Claims the run directory, records the run, writes its files and starts the wrapper (its own
 * process group, no shell), or hands the turn to the root's spare wrapper when it fits. The
 * wrapper starts (or is handed the turn) only once the record names its run.
 */
export async function startTurn(spec: TurnSpec, spare?: SpareHook): Promise<RunningTurn> {
  const runDir = await claimRunDir(spec.agentDir, spec.record.runs.length + 1, spec.kind);
  const name = path.basename(runDir);
  await spec.recordRun?.(name);
  await fs.promises.mkdir(path.join(runDir, RUN_FILES.inbox));
  // A user-defined role's text, snapshotted at spawn, follows the tree instructions every turn.
  const rolePrompt = await fs.promises
    .readFile(path.join(spec.agentDir, TREE_FILES.rolePrompt), "utf8")
    .catch(() => undefined);
  await fs.promises.writeFile(
    path.join(runDir, RUN_FILES.instructions),
    withRolePrompt(spec.instructions, spec.record.role, rolePrompt),
    "utf8",
  );
  const reviewPrompt = spec.record.verify?.review?.prompt;
  if (reviewPrompt) await fs.promises.writeFile(path.join(runDir, RUN_FILES.reviewPrompt), reviewPrompt, "utf8");
  const meta = buildMeta(spec, runDir, readCooldowns(spec.treeDir, (spec.clock ?? systemClock).now()));
  const metaPath = path.join(runDir, RUN_FILES.meta);
  await writeJsonAtomic(metaPath, meta);

  const child = spare?.handTo(meta, metaPath) ?? spawnWrapper(runDir, metaPath, spec.cwd);
  spare?.started(meta);
  let exitDescription: string | undefined;
  let damaged: string | undefined;
  // The turn ends when its result.json is in place, not when the wrapper exits some
  // milliseconds later; the exit still ends a turn whose wrapper wrote no usable result.
  const inPlace = resultInPlace(runDir, spec.clock);
  const finished = new Promise<ResultV1 | undefined>((resolve) => {
    let ended = false;
    const end = (read: RunRead) => {
      if (ended) return;
      ended = true;
      inPlace.stop();
      damaged = read.damaged;
      resolve(read.result);
    };
    void inPlace.found.then(end);
    const done = () => void readRunResult(runDir).then(end);
    child.once("exit", (code, signal) => {
      exitDescription = signal ?? `exit code ${code}`;
      done();
    });
    child.once("error", (err) => {
      exitDescription = `could not start: ${err.message}`;
      done();
    });
  });
  const exited = new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.once("error", () => resolve());
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
    exited,
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

function spawnWrapper(runDir: string, metaPath: string, cwd: string): ChildProcess {
  const wrapperLog = fs.openSync(path.join(runDir, RUN_FILES.wrapperLog), "a");
  const child = spawn(process.execPath, [WRAPPER_BIN, "run", metaPath], {
    cwd,
    env: wrapperEnv(currentPiBinary()),
    stdio: ["ignore", "ignore", wrapperLog],
    detached: true,
  });
  fs.closeSync(wrapperLog);
  // The wrapper is not pi's to wait for: pi must be able to exit while a turn runs (it
  // stops the turn on session_shutdown), so the handle never holds the event loop.
  child.unref();
  return child;
}

/**
 * The wrapper's environment. A root's turns outlive it (its wrapper stops when its owner
 * asks or its limits say so, never because the root went away); below the root a child's
 * pi ends with each of its turns, so its children's wrappers watch it (PI_SUBAGENTS_PARENT_PID).
 */
export function wrapperEnv(piBinary: string | undefined, env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...env, ...(piBinary && { [ENV.piBin]: piBinary }) };
  if (!identityFromEnv(env).isRoot) out[ENV.parentPid] = String(process.pid);
  else delete out[ENV.parentPid];
  return out;
}

/** What wrapper.pid holds: the wrapper's pid and what identifies it (ProcessIdentity). */
function writeWrapperPid(runDir: string, pid: number): void {
  try {
    fs.writeFileSync(path.join(runDir, RUN_FILES.wrapperPid), `${JSON.stringify(processIdentity(pid))}\n`);
  } catch {
    // a full disk: the turn runs all the same
  }
}

/** A live message file in the run's inbox, written whole (the task extension never reads half of one). */
export async function postLiveMessage(runDir: string, seq: number, message: InboxMessageV1): Promise<void> {
  await writeJsonAtomic(path.join(runDir, RUN_FILES.inbox, inboxFileName(seq)), message);
}

/** Turns as `subagent-wrapper` processes. */
export const wrapperTurns: TurnOperations = {
  start: startTurn,
  runStarted,
  settledResults: (runDirs, waitMs) => settledRunResults(runDirs, waitMs),
  attach: reattachTurn,
  postLive: postLiveMessage,
  deliveredIds: deliveredMessageIds,
};
