/**
 * Loaded into every child pi with `-e`. It does what pi cannot be asked for on its command
 * line:
 * - delivers the task verbatim: pi trims piped stdin, reads `-x` as an option, `@x` as a
 *   file and `/x` as a command, and caps one argument at 128 KiB. The wrapper passes a
 *   harmless placeholder message (contracts/task-handoff.ts) and this extension swaps in
 *   the task file's exact text through pi's `input` event (prompt templates are disabled
 *   with `-np`, so nothing expands it afterwards);
 * - hands live messages to the running child: with meta.json `inboxPath`, it watches that
 *   folder and steers each new message into pi's conversation before pi's next model
 *   request (inbox-feeder.ts says when that can work; the wrapper confirms what arrived);
 * - holds the child's tool calls until its cwd is ready (meta.json `cwdReadyPath`, see
 *   cwd-ready.ts), so a caller can finish writing the cwd while pi starts and the model thinks;
 * - stops the child when its wrapper is gone (the child runs in its own process group, so a
 *   wrapper killed with SIGKILL would otherwise leave it running).
 * Only node built-ins and the contracts' names: pi loads this compiled file as it is.
 */
import fs from "node:fs";
import { ENV } from "../contracts/env.js";
import { cwdStartedPath } from "../contracts/meta.js";
import { TASK_PLACEHOLDER } from "../contracts/task-handoff.js";
import { CWD_NOT_READY_EXIT, waitForCwdReady } from "./cwd-ready.js";
import { InboxFeeder } from "./inbox-feeder.js";
import { applySpareHandover } from "./spare-handover.js";

const ORPHAN_CHECK_MS = 1000;

interface InputEvent {
  text: string;
}

/** The part of pi's turn_end (and message_end) event the feeder looks at: did the reply call a tool, how did it stop. */
interface TurnEndEvent {
  message?: { role?: unknown; content?: unknown; stopReason?: unknown };
}

interface MinimalExtensionApi {
  on(event: "input", handler: (event: InputEvent) => unknown): void;
  on(event: "agent_start" | "turn_start" | "agent_end" | "session_shutdown", handler: () => unknown): void;
  on(event: "turn_end" | "message_end", handler: (event: TurnEndEvent) => unknown): void;
  on(event: "tool_call", handler: () => unknown): void;
  sendUserMessage(text: string, options: { deliverAs: "steer" }): void;
}

/** How pi goes on after a turn: `tools` (it runs them, then asks the model again), `maybe` (only if it holds a steering message), `ends`. */
export function afterTurn(event: TurnEndEvent): "tools" | "maybe" | "ends" {
  const message = event.message;
  const content = Array.isArray(message?.content) ? (message.content as Array<{ type?: unknown }>) : [];
  const stop = message?.stopReason;
  if (stop === "error" || stop === "aborted") return "ends";
  return content.some((block) => block?.type === "toolCall") ? "tools" : "maybe";
}

/**
 * The wait for meta.json `cwdReadyPath`, once per process: pi may run this factory more
 * than once while it starts (a pass before it decides whether to trust the project).
 */
let cwdReady: Promise<void> | undefined;

function cwdReadyWait(file: string): Promise<void> {
  cwdReady ??= waitForCwdReady(file).catch((err: unknown) => {
    // A blocked tool call would only tell the model; the run must end, as an error that says why.
    process.stderr.write(`pi-subagent-tree: the working directory is not ready: ${(err as Error).message}\n`);
    process.exit(CWD_NOT_READY_EXIT);
  });
  return cwdReady;
}

export default function taskExtension(pi: MinimalExtensionApi): void {
  // A spare pi handed to a turn: the turn's environment first (spare-handover.ts).
  applySpareHandover();
  const taskFile = process.env[ENV.taskFile];
  const wrapperPid = Number(process.env[ENV.wrapperPid]);
  const inboxDir = process.env[ENV.inboxDir];
  const cwdReadyFile = process.env[ENV.cwdReady];
  // Tools this child runs (bash, nested pi) must not see the wrapper's private channel.
  delete process.env[ENV.taskFile];
  delete process.env[ENV.wrapperPid];
  delete process.env[ENV.inboxDir];
  delete process.env[ENV.cwdReady];

  let delivered = false;
  pi.on("input", (event) => {
    if (delivered || !taskFile || event.text !== TASK_PLACEHOLDER) return { action: "continue" };
    delivered = true;
    const text = fs.readFileSync(taskFile, "utf8");
    // A one-shot hand-off: gone once read, even if the wrapper is killed before it cleans up.
    fs.rmSync(taskFile, { force: true });
    return { action: "transform", text };
  });

  if (inboxDir) {
    const feeder = new InboxFeeder(inboxDir, (text) => pi.sendUserMessage(text, { deliverAs: "steer" }));
    feeder.start();
    pi.on("agent_start", () => feeder.resume());
    pi.on("turn_start", () => feeder.resume());
    // The model's reply, before pi runs its tools: whether pi asks the model again after this turn.
    pi.on("message_end", (event) => {
      if (event.message?.role === "assistant" && afterTurn(event) === "tools") feeder.toolsCalled();
    });
    pi.on("turn_end", (event) => {
      const next = afterTurn(event);
      if (next === "tools") feeder.toolTurnEnds();
      else if (next === "maybe") feeder.lastChance();
      else feeder.pause();
    });
    pi.on("agent_end", () => feeder.pause());
    pi.on("session_shutdown", () => feeder.stop());
  }

  if (Number.isInteger(wrapperPid) && wrapperPid > 1) {
    // Node's own timer, not the package's Clock: code inside the child imports only the
    // contracts, and this check is tested against real processes (the wrapper SIGKILLed).
    const timer = setInterval(() => {
      if (process.ppid === wrapperPid) return;
      clearInterval(timer);
      try {
        process.kill(-process.pid, "SIGTERM");
      } catch {
        process.kill(process.pid, "SIGTERM");
      }
    }, ORPHAN_CHECK_MS);
    // pi exits when its event loop drains: this timer must never hold it open.
    timer.unref();
    pi.on("session_shutdown", () => clearInterval(timer));
  }

  if (cwdReadyFile) {
    // Loaded first, this handler runs before any other extension's: no tool touches the cwd
    // before it is ready. pi awaits tool_call handlers in order on both lines.
    const ready = cwdReadyWait(cwdReadyFile);
    pi.on("tool_call", () => ready);
    // pi's start-up is over and its first request on its way: the caller may write now
    // without slowing that start down.
    let told = false;
    pi.on("agent_start", () => {
      if (told) return;
      told = true;
      fs.writeFile(cwdStartedPath(cwdReadyFile), "", () => undefined);
    });
  }
}
