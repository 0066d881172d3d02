/**
 * The runner protocol: how the local wrapper speaks with `subagent-wrapper serve`
 * over the far side's stdin and stdout. JSON lines, one frame a line, each line at most
 * MAX_FRAME_BYTES; a frame is an object whose `t` names its type. Files (the workspace bundle,
 * the session, the turn's commit) travel as `blob` frames of base64 chunks closed by
 * `blob_end`, each kind bounded in total. The first frame each way is `hello`, naming the
 * protocol version; a side that does not speak the other's version answers `error` and ends.
 * Version 2 adds kept workspaces: the local side names the agent's workspace in its `hello`,
 * the far side answers with the commits it still has of it (`have`) and its bundle bound, and
 * the local side sends only what the far side lacks (a bundle with those as prerequisites).
 * A far side speaks 1 and 2 (a version-1 peer gets version 1's behaviour: no key, no haves).
 * The session stream is a capability of version 2 named in both hellos (`session_stream`): a
 * local side that asks for it and a far side that grants it get the lines pi appends to its
 * session file during the turn as `session_append` frames, so that a connection lost mid-turn
 * leaves the local session file with what pi had written; a peer that does not name it gets
 * only the whole `session` blob at the end of the turn, which stays the authority when it comes.
 * pi's input is another capability of version 2 (`pi_input` in both hellos): a local side
 * whose child runs pi in RPC mode (a child with dialogs) sends the lines for pi's stdin as
 * `pi_input` frames and its end as `pi_input_end`; a far side that grants it starts such a pi
 * with its stdin a pipe. A local side whose far side does not grant it runs that pi in json mode.
 * A check run is a session of its own (version 2, `check` in both hellos, with the agent's
 * workspace key): no `start`, no turn; the far side claims the workspace the agent's last turn
 * left there and runs each `check` frame's command in it (`sh -c`, its own process group, no
 * stdin, the time-out), answering `check_result` with its exit code and the end of its output;
 * a `stop` ends the running check; stdin closed ends the session and keeps the workspace again.
 * A far side whose hello does not grant `check` (an older one) cannot run checks.
 * Pure: both sides (the far side imports only contracts and in-child) share this module.
 */
import { isRecord } from "../lib/values.js";

export { FrameSplitter, MAX_FRAME_BYTES } from "./frame-splitter.js";

export const SERVE_PROTOCOL_VERSION = 2;
/**
 * How serve's own stderr lines about the far side begin (`on far: pi not found on the far
 * PATH`): serve cannot know how the local side reaches it, so the local wrapper puts the far
 * side's name in (`on far (ssh me@host):`).
 */
export const FAR_LINE_MARK = "on far:";
/** The versions a far side answers: the current one and version 1 (whole workspaces only). */
export const SERVE_PROTOCOL_VERSIONS: readonly number[] = [1, 2];
/** The longest workspace key a `hello` may carry. */
export const MAX_WORKSPACE_KEY_CHARS = 1024;
/** The most commits a far side names in its `have`. */
export const MAX_HAVES = 16;
/**
 * The far side's environment: the folder it keeps scratch spaces and kept workspaces in
 * (default: the system's temporary folder), and a lower bound for bundles it accepts (bytes).
 */
export const SERVE_ENV = {
  root: "PI_SUBAGENTS_SERVE_ROOT",
  maxBundle: "PI_SUBAGENTS_SERVE_MAX_BUNDLE",
} as const;
/** Raw bytes per blob chunk. */
export const BLOB_CHUNK_BYTES = 1024 * 1024;
/** Total bytes of each blob kind. */
export const MAX_BLOB_BYTES: Record<BlobKind, number> = {
  bundle: 1024 * 1024 * 1024,
  session: 256 * 1024 * 1024,
  system_prompt: 4 * 1024 * 1024,
  task: 64 * 1024 * 1024,
};
/** Raw bytes of the session file per `session_append` frame. */
export const SESSION_APPEND_BYTES = 256 * 1024;
/** Raw bytes of pi's stdin per `pi_input` frame. */
export const PI_INPUT_BYTES = 256 * 1024;
/** A live message's text. */
export const MAX_MESSAGE_CHARS = 1024 * 1024;
/** A check's command (a shell command line). */
export const MAX_CHECK_COMMAND_CHARS = 64 * 1024;
/** A check's output kept and sent back (its end). */
export const MAX_CHECK_OUTPUT_CHARS = 16 * 1024;

export const BLOB_KINDS = ["bundle", "session", "system_prompt", "task"] as const;
export type BlobKind = (typeof BLOB_KINDS)[number];

/**
 * Tokens the local side puts in pi's argv where a path lives on the far side: the far side
 * puts its own paths there (its task extension, the system prompt and session it received).
 */
export const ARG_TOKENS = {
  taskExtension: "@@subagent-task-extension@@",
  systemPrompt: "@@subagent-system-prompt@@",
  session: "@@subagent-session@@",
} as const;

/** What the far side needs to run one turn (the `start` frame). */
export interface ServeStart {
  t: "start";
  runId: string;
  /** pi's arguments, with ARG_TOKENS where far-side paths go. */
  args: string[];
  /** Extra environment for pi (meta.json `env`). */
  env: Record<string, string>;
  /** The child's cwd below the workspace's top ("" for the top itself), `/`-separated. */
  cwd: string;
  /** The commit the bundle carries as `refs/heads/base` (the turn's starting state). */
  base: string;
  /** Blobs that follow before the turn starts. */
  blobs: BlobKind[];
  /** The child gets live messages (an inbox folder on the far side). */
  inbox: boolean;
}

/** A piece of a file, or its end (with its size): the same both ways. */
export type BlobFrame = { t: "blob"; kind: BlobKind; data: string } | { t: "blob_end"; kind: BlobKind; bytes: number };

/**
 * The local side's `hello`. `workspace` (version 2): the agent's workspace key; the far side
 * keeps that workspace after the turn and offers it to the next turn with the same key.
 */
export type ClientHello = {
  t: "hello";
  version: number;
  workspace?: string;
  session_stream?: boolean;
  /** Version 2: this side will send pi's stdin (`pi_input`): its child runs pi in RPC mode. */
  pi_input?: boolean;
  /** Version 2, with `workspace`: a check run, not a turn (`check` frames on the kept workspace). */
  check?: boolean;
};

/**
 * The far side's `hello`. Version 2: `have`, the commits of the kept workspace for the key
 * (none: it has nothing, send it all); `max_bundle`, the largest bundle it accepts.
 */
export type ServerHello = {
  t: "hello";
  version: number;
  server: string;
  have?: string[];
  max_bundle?: number;
  /** The far side streams the session (the local side asked for it). */
  session_stream?: boolean;
  /** The far side hands `pi_input` to pi's stdin (the local side asked for it). */
  pi_input?: boolean;
  /** The far side runs `check` frames (the local side asked for a check run). */
  check?: boolean;
};

/**
 * One check command of a check run: `sh -c <command>` in the kept workspace, `cwd` below its
 * top, with the far side's environment and `env` (meta.json `env`), ended after `timeout_ms`.
 */
export type CheckRequest = {
  t: "check";
  command: string;
  cwd: string;
  env: Record<string, string>;
  timeout_ms: number;
};

/** How a check ended: its exit code (null: ended by its time-out, a stop or a signal), its output's end, its time. */
export type CheckResult = { t: "check_result"; exit_code: number | null; output: string; duration_ms: number };

/**
 * A piece of what pi appended to its session file during the turn: `data` (base64, at most
 * SESSION_APPEND_BYTES raw) follows `at` bytes appended before it (counted from the end of the
 * session the turn started with). Pieces end on a line's end except for a line longer than a
 * frame, which comes in several; the local side keeps only whole lines.
 */
export type SessionAppend = { t: "session_append"; at: number; data: string };

export type ClientFrame =
  | ClientHello
  | ServeStart
  | BlobFrame
  | { t: "message"; name: string; id: string; text: string }
  | { t: "stop"; signal: "SIGTERM" | "SIGKILL" }
  /** Bytes for pi's stdin (base64, at most PI_INPUT_BYTES raw), in order; `pi_input_end` closes it. */
  | { t: "pi_input"; data: string }
  | { t: "pi_input_end" }
  | CheckRequest;

export type ServerFrame =
  | ServerHello
  | { t: "started"; pid: number }
  | { t: "stdout"; data: string }
  | { t: "stderr"; data: string }
  | BlobFrame
  | SessionAppend
  /** The turn's commit (in the `bundle` blob just sent), or none when nothing changed. */
  | { t: "commit"; head?: string; base: string }
  | { t: "exit"; code: number | null; signal: string | null }
  | CheckResult
  | { t: "error"; message: string };

export type Frame = ClientFrame | ServerFrame;

export const encodeFrame = (frame: Frame): string => `${JSON.stringify(frame)}\n`;

const isString = (value: unknown): value is string => typeof value === "string";
const isStringList = (value: unknown): value is string[] => Array.isArray(value) && value.every(isString);
const isBlobKind = (value: unknown): value is BlobKind => (BLOB_KINDS as readonly unknown[]).includes(value);
const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;
const isBase64 = (value: unknown): value is string => isString(value) && /^[A-Za-z0-9+/]*={0,2}$/.test(value);
const isEnv = (value: unknown): value is Record<string, string> =>
  isRecord(value) && Object.values(value).every(isString);
const isFlag = (value: unknown): boolean => value === undefined || typeof value === "boolean";
const isSignal = (value: unknown): boolean => value === "SIGTERM" || value === "SIGKILL";
const isCommit = (value: unknown): value is string => isString(value) && /^[0-9a-f]{40,64}$/.test(value);
/** A relative path that stays below its folder: no `..`, no absolute start, no NUL. */
export const isInsidePath = (value: unknown): boolean =>
  isString(value) &&
  !value.startsWith("/") &&
  !value.includes("\0") &&
  value.split("/").every((part) => part !== ".." && part !== ".git");

type Check = (frame: Record<string, unknown>) => boolean;
const CLIENT_CHECKS: Record<string, Check> = {
  hello: (f) =>
    isCount(f.version) &&
    (f.workspace === undefined ||
      (isString(f.workspace) && f.workspace !== "" && f.workspace.length <= MAX_WORKSPACE_KEY_CHARS)) &&
    isFlag(f.session_stream) &&
    isFlag(f.pi_input) &&
    isFlag(f.check),
  start: (f) =>
    isString(f.runId) &&
    isStringList(f.args) &&
    isEnv(f.env) &&
    isInsidePath(f.cwd) &&
    isCommit(f.base) &&
    Array.isArray(f.blobs) &&
    f.blobs.every(isBlobKind) &&
    typeof f.inbox === "boolean",
  blob: (f) => isBlobKind(f.kind) && isBase64(f.data),
  blob_end: (f) => isBlobKind(f.kind) && isCount(f.bytes),
  message: (f) =>
    isString(f.name) &&
    /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,199}$/.test(f.name) &&
    f.name.endsWith(".json") &&
    isString(f.id) &&
    f.id !== "" &&
    isString(f.text) &&
    f.text.length <= MAX_MESSAGE_CHARS,
  stop: (f) => isSignal(f.signal),
  pi_input: (f) => isBase64(f.data) && (f.data as string).length <= Math.ceil(PI_INPUT_BYTES / 3) * 4,
  pi_input_end: () => true,
  check: (f) =>
    isString(f.command) &&
    f.command.trim() !== "" &&
    f.command.length <= MAX_CHECK_COMMAND_CHARS &&
    isInsidePath(f.cwd) &&
    isEnv(f.env) &&
    isCount(f.timeout_ms) &&
    (f.timeout_ms as number) > 0,
};
const SERVER_CHECKS: Record<string, Check> = {
  hello: (f) =>
    isCount(f.version) &&
    isString(f.server) &&
    (f.have === undefined || (Array.isArray(f.have) && f.have.length <= MAX_HAVES && f.have.every(isCommit))) &&
    (f.max_bundle === undefined || isCount(f.max_bundle)) &&
    isFlag(f.session_stream) &&
    isFlag(f.pi_input) &&
    isFlag(f.check),
  started: (f) => isCount(f.pid),
  stdout: (f) => isBase64(f.data),
  stderr: (f) => isBase64(f.data),
  blob: CLIENT_CHECKS.blob!,
  blob_end: CLIENT_CHECKS.blob_end!,
  session_append: (f) =>
    isCount(f.at) && isBase64(f.data) && (f.data as string).length <= Math.ceil(SESSION_APPEND_BYTES / 3) * 4,
  commit: (f) => isCommit(f.base) && (f.head === undefined || isCommit(f.head)),
  exit: (f) => (f.code === null || Number.isInteger(f.code)) && (f.signal === null || isString(f.signal)),
  check_result: (f) =>
    (f.exit_code === null || Number.isInteger(f.exit_code)) &&
    isString(f.output) &&
    f.output.length <= MAX_CHECK_OUTPUT_CHARS &&
    isCount(f.duration_ms),
  error: (f) => isString(f.message),
};

/** One line parsed and checked against the frames `side` may receive; a string says what is wrong. */
function parseWith<F>(line: string, checks: Record<string, Check>): F | string {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return `not JSON: ${line.slice(0, 60)}`;
  }
  if (!isRecord(value) || !isString(value.t)) return "a frame must be an object with a string `t`";
  const check = checks[value.t];
  if (!check) return `unknown frame type ${JSON.stringify(value.t.slice(0, 40))}`;
  return check(value) ? (value as F) : `malformed ${value.t} frame`;
}

export const parseClientFrame = (line: string): ClientFrame | string => parseWith<ClientFrame>(line, CLIENT_CHECKS);
export const parseServerFrame = (line: string): ServerFrame | string => parseWith<ServerFrame>(line, SERVER_CHECKS);

/** Collects one blob's chunks, within its kind's bound; `end` checks the announced size. */
export class BlobCollector {
  private readonly chunks: Buffer[] = [];
  private size = 0;

  constructor(
    readonly kind: BlobKind,
    private readonly bound: number = MAX_BLOB_BYTES[kind],
  ) {}

  /** Undefined, or what is wrong (past the bound). */
  add(data: string): string | undefined {
    const bytes = Buffer.from(data, "base64");
    this.size += bytes.length;
    if (this.size > this.bound) return `${this.kind} larger than its bound of ${this.bound} bytes`;
    this.chunks.push(bytes);
    return undefined;
  }

  end(bytes: number): Buffer | string {
    if (bytes !== this.size) return `${this.kind} is ${this.size} bytes, its end frame says ${bytes}`;
    return Buffer.concat(this.chunks);
  }
}

/** What one blob frame did: nothing yet (a chunk), a whole blob, or a problem that ends the run. */
export interface BlobStep {
  /** The whole blob, once its end frame came. */
  done?: { kind: BlobKind; data: Buffer };
  /** What is wrong (past the bound, sizes that disagree, a blob inside another). */
  problem?: string;
}

/**
 * Puts blobs back together from their frames, one blob at a time, each checked against its
 * bound and its end frame's size: both sides of the protocol receive blobs through this.
 */
export class BlobReceiver {
  private collector: BlobCollector | undefined;

  /** `bounds`: lower bounds than MAX_BLOB_BYTES for some kinds (a far side's configured bundle bound). */
  constructor(private readonly bounds: Partial<Record<BlobKind, number>> = {}) {}

  take(frame: BlobFrame): BlobStep {
    this.collector ??= new BlobCollector(frame.kind, this.bounds[frame.kind]);
    if (this.collector.kind !== frame.kind) return { problem: `blob ${frame.kind} inside ${this.collector.kind}` };
    if (frame.t === "blob") {
      const problem = this.collector.add(frame.data);
      return problem ? { problem } : {};
    }
    const data = this.collector.end(frame.bytes);
    this.collector = undefined;
    return typeof data === "string" ? { problem: data } : { done: { kind: frame.kind, data } };
  }
}

/** The frames that carry `data` as a blob of `kind`. */
export function blobFrames(kind: BlobKind, data: Buffer): BlobFrame[] {
  const frames: BlobFrame[] = [];
  for (let at = 0; at < data.length; at += BLOB_CHUNK_BYTES) {
    frames.push({ t: "blob", kind, data: data.subarray(at, at + BLOB_CHUNK_BYTES).toString("base64") });
  }
  frames.push({ t: "blob_end", kind, bytes: data.length });
  return frames;
}

/** The bundle bound a far side announces: SERVE_ENV.maxBundle when it is a lower positive count, else the protocol's. */
export function serveBundleBound(env: Record<string, string | undefined>): number {
  const value = Number(env[SERVE_ENV.maxBundle]);
  return Number.isSafeInteger(value) && value > 0 && value < MAX_BLOB_BYTES.bundle ? value : MAX_BLOB_BYTES.bundle;
}

/**
 * The session with its header's `cwd` set to `cwd`: pi (1.x) refuses to continue a session
 * whose stored working directory does not exist. The far side sets its scratch workspace (new
 * each turn), the local side the agent's own folder, so each side's copy works where it is.
 */
export function sessionHere(session: Buffer, cwd: string): Buffer {
  const text = session.toString("utf8");
  const end = text.indexOf("\n");
  const first = end === -1 ? text : text.slice(0, end);
  let header: unknown;
  try {
    header = JSON.parse(first);
  } catch {
    return session;
  }
  if (typeof header !== "object" || header === null || typeof (header as { cwd?: unknown }).cwd !== "string") {
    return session;
  }
  const rewritten = JSON.stringify({ ...header, cwd });
  return Buffer.from(end === -1 ? rewritten : `${rewritten}${text.slice(end)}`, "utf8");
}
