/**
 * Loaded into every child pi with `-e`. It does two things pi cannot be asked for on its
 * command line:
 * - delivers the task verbatim: pi trims piped stdin, reads `-x` as an option, `@x` as a
 *   file and `/x` as a command, and caps one argument at 128 KiB. The wrapper passes a
 *   harmless placeholder message and this extension swaps in the task file's exact text
 *   through pi's `input` event (prompt templates are disabled with `-np`, so nothing
 *   expands it afterwards);
 * - stops the child when its wrapper is gone (the child runs in its own process group, so a
 *   wrapper killed with SIGKILL would otherwise leave it running).
 * Only node built-ins and the contracts' names: pi loads this compiled file as it is.
 */
import fs from "node:fs";
import { ENV } from "../contracts/env.js";

export const TASK_PLACEHOLDER = "(subagent task: delivered by the pi-subagent-tree task extension)";
const ORPHAN_CHECK_MS = 1000;

interface InputEvent {
  text: string;
}

interface MinimalExtensionApi {
  on(event: "input", handler: (event: InputEvent) => unknown): void;
  on(event: "session_shutdown", handler: () => unknown): void;
}

export default function taskExtension(pi: MinimalExtensionApi): void {
  const taskFile = process.env[ENV.taskFile];
  const wrapperPid = Number(process.env[ENV.wrapperPid]);
  // Tools this child runs (bash, nested pi) must not see the wrapper's private channel.
  delete process.env[ENV.taskFile];
  delete process.env[ENV.wrapperPid];

  let delivered = false;
  pi.on("input", (event) => {
    if (delivered || !taskFile || event.text !== TASK_PLACEHOLDER) return { action: "continue" };
    delivered = true;
    const text = fs.readFileSync(taskFile, "utf8");
    // A one-shot hand-off: gone once read, even if the wrapper is killed before it cleans up.
    fs.rmSync(taskFile, { force: true });
    return { action: "transform", text };
  });

  if (Number.isInteger(wrapperPid) && wrapperPid > 1) {
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
}
