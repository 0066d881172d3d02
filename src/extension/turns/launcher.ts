/**
 * One child turn = one `subagent-wrapper` process with its own run directory. The
 * extension knows the wrapper only through meta.json, result.json and a process.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { ENV } from "../../contracts/env.js";
import { RUN_FILES, runName, TREE_FILES } from "../../contracts/layout.js";
import type { MetaV1 } from "../../contracts/meta.js";
import type { ResultV1 } from "../../contracts/result.js";
import type { AgentRecordV1 } from "../../contracts/tree.js";
import { processAlive } from "../../lib/process.js";
import { WRAPPER_BIN } from "../config.js";
import { readJson, writeJsonAtomic } from "../tree/tree-dir.js";
import { withRolePrompt } from "./envelope.js";

export interface TurnSpec {
  record: AgentRecordV1;
  agentDir: string;
  treeDir: string;
  prompt: string;
  kind: "spawn" | "followup";
  cwd: string;
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
   * The result of a run a previous process of this agent's parent started: when its wrapper
   * is still running, waits up to `waitMs` for it to finish; undefined when it wrote none.
   */
  settledResult(runDir: string, waitMs: number): Promise<ResultV1 | undefined>;
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
}

/**
 * The pi that runs this process, so children run the same pi even when it is not on PATH
 * (started as node_modules/.bin/pi or by absolute path). An explicit PI_SUBAGENTS_PI_BIN wins.
 */
export function currentPiBinary(env: NodeJS.ProcessEnv = process.env, argv: readonly string[] = process.argv): string | undefined {
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
  };
}

/** Writes the run directory and starts the wrapper (its own process group, no shell). */
export async function startTurn(spec: TurnSpec): Promise<RunningTurn> {
  const name = runName(spec.record.runs.length + 1, spec.kind);
  const runDir = path.join(spec.agentDir, TREE_FILES.runs, name);
  await fs.promises.mkdir(runDir, { recursive: true });
  // A user-defined role's text, snapshotted at spawn, follows the tree instructions every turn.
  const rolePrompt = await fs.promises.readFile(path.join(spec.agentDir, TREE_FILES.rolePrompt), "utf8").catch(() => undefined);
  await fs.promises.writeFile(path.join(runDir, RUN_FILES.instructions), withRolePrompt(spec.instructions, spec.record.role, rolePrompt), "utf8");
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
  // A restarted parent uses it to wait for a wrapper that outlived the previous process.
  if (child.pid) fs.writeFileSync(path.join(runDir, RUN_FILES.wrapperPid), `${child.pid}\n`);
  // The wrapper is not pi's to wait for: pi must be able to exit while a turn runs (it
  // stops the turn on session_shutdown), so the handle never holds the event loop.
  child.unref();
  let exitDescription: string | undefined;
  const finished = new Promise<ResultV1 | undefined>((resolve) => {
    const done = () => void readJson<ResultV1>(meta.resultPath).then(resolve);
    child.once("exit", (code, signal) => {
      exitDescription = signal ?? `exit code ${code}`;
      done();
    });
    child.once("error", (err) => {
      exitDescription = `could not start: ${err.message}`;
      done();
    });
  });
  return {
    runDir,
    runName: name,
    pid: child.pid,
    finished,
    howExited: () => exitDescription,
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

export async function runResult(runDir: string): Promise<ResultV1 | undefined> {
  return readJson<ResultV1>(path.join(runDir, RUN_FILES.result));
}

/**
 * A wrapper whose parent went away notices within a second, stops pi (SIGKILL 3 s after
 * SIGTERM) and drains its output (at most 2 s) before it writes result.json.
 */
export const ORPHAN_WRAPPER_WAIT_MS = 10_000;

/**
 * The result of a run that a previous process started: when its wrapper is still running
 * (the parent was killed and restarted at once), waits up to `waitMs` for it to finish, so
 * a restore reports what the run really did instead of guessing.
 */
export async function settledRunResult(runDir: string, waitMs = ORPHAN_WRAPPER_WAIT_MS): Promise<ResultV1 | undefined> {
  const result = await runResult(runDir);
  if (result) return result;
  const pid = Number((await fs.promises.readFile(path.join(runDir, RUN_FILES.wrapperPid), "utf8").catch(() => "")).trim());
  if (!Number.isInteger(pid) || pid <= 1) return undefined;
  const deadline = Date.now() + waitMs;
  while (processAlive(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  return runResult(runDir);
}

/** Turns as `subagent-wrapper` processes. */
export const wrapperTurns: TurnOperations = { start: startTurn, settledResult: settledRunResult };
