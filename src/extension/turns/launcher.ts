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
    inboxPath: path.join(runDir, RUN_FILES.inbox),
  };
}

/** Writes the run directory and starts the wrapper (its own process group, no shell). */
export async function startTurn(spec: TurnSpec): Promise<RunningTurn> {
  const name = runName(spec.record.runs.length + 1, spec.kind);
  const runDir = path.join(spec.agentDir, TREE_FILES.runs, name);
  await fs.promises.mkdir(path.join(runDir, RUN_FILES.inbox), { recursive: true });
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

/** A live message file in the run's inbox, written whole (the task extension never reads half of one). */
export async function postLiveMessage(runDir: string, seq: number, message: InboxMessageV1): Promise<void> {
  await writeJsonAtomic(path.join(runDir, RUN_FILES.inbox, inboxFileName(seq)), message);
}

/** Lines of a JSON Lines file that mention `needle`, parsed (a file that is not there has none). */
async function linesWith(file: string, needle: string): Promise<unknown[]> {
  const text = await fs.promises.readFile(file, "utf8").catch(() => "");
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
  const sessionPath = (await readJson<MetaV1>(path.join(runDir, RUN_FILES.meta)))?.sessionPath;
  if (!sessionPath) return ids;
  // A wrapper that died (no result.json) leaves its pi for up to a second, stopping: what
  // it writes to the session as it goes counts, so the session is read once it is gone.
  if (!(await runResult(runDir))) await childGone(events, ORPHAN_CHILD_WAIT_MS);
  for (const name of names) {
    const message = parseInboxMessage(await fs.promises.readFile(path.join(inbox, name), "utf8").catch(() => ""));
    if (!message || ids.has(message.id)) continue;
    const entries = await linesWith(sessionPath, message.id);
    if (entries.some((entry) => sessionUserText(entry) === message.text)) ids.add(message.id);
  }
  return ids;
}

/** Turns as `subagent-wrapper` processes. */
export const wrapperTurns: TurnOperations = {
  start: startTurn,
  settledResult: settledRunResult,
  postLive: postLiveMessage,
  deliveredIds: deliveredMessageIds,
};
