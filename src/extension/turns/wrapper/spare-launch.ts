/**
 * The real spare wrappers (spare.ts keeps them): `subagent-wrapper spare <spare.json>` in a
 * folder of its own in the temp folder, its own process group, its stdin a pipe from this
 * process. A turn is handed over as a line on that pipe; closing it ends the spare, and so
 * does this process's end, however it ends (the pipe closes with it). The wrapper removes
 * its folder when it exits.
 */
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ENV, newRunToken, runTokenEntry } from "../../../contracts/env.js";
import type { MetaV1 } from "../../../contracts/meta.js";
import { SPARE_FILES, SPARE_TAKE_COMMAND } from "../../../contracts/spare.js";
import { killProcessesWithEnvSync } from "../../../lib/process.js";
import { signalGroup } from "../../../lib/run-process.js";
import { WRAPPER_BIN } from "../../config.js";
import { currentPiBinary, startTurn, type TurnOperations, wrapperEnv, wrapperTurns } from "./launcher.js";
import type { SpareKeeper, SpareLauncher } from "./spare.js";

/** Whether a root keeps a spare pi when neither PI_SUBAGENTS_SPARE nor the setting `spare` says. */
export const SPARE_DEFAULT = true;

/** Whether this root keeps a spare pi: PI_SUBAGENTS_SPARE (`0` or `1`), else the setting `spare`, else SPARE_DEFAULT. */
export function spareWanted(setting: boolean | undefined, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env[ENV.spare] === "0") return false;
  if (env[ENV.spare] === "1") return true;
  return setting ?? SPARE_DEFAULT;
}

export const launchSpare: SpareLauncher<ChildProcess> = (template: MetaV1) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-subagent-spare-"));
  const templatePath = path.join(dir, SPARE_FILES.template);
  fs.writeFileSync(templatePath, JSON.stringify(template));
  const log = fs.openSync(path.join(dir, SPARE_FILES.log), "a");
  const runToken = newRunToken();
  const child = spawn(process.execPath, [WRAPPER_BIN, "spare", templatePath], {
    cwd: template.cwd,
    env: { ...wrapperEnv(currentPiBinary()), [ENV.spareRunToken]: runToken },
    stdio: ["pipe", "ignore", log],
    detached: true,
  });
  fs.closeSync(log);
  // Neither the process nor its pipe may keep pi from exiting: the pipe's end is the spare's end.
  child.unref();
  const stdin = child.stdin;
  stdin?.on("error", () => undefined);
  (stdin as unknown as { unref?: () => void } | null)?.unref?.();
  let exited = false;
  const gone = new Promise<void>((resolve) => {
    child.once("exit", () => {
      exited = true;
      resolve();
    });
    child.once("error", () => {
      exited = true;
      fs.rmSync(dir, { recursive: true, force: true });
      resolve();
    });
  });
  return {
    pid: child.pid,
    handle: child,
    alive: () => !exited && child.exitCode === null && child.signalCode === null,
    take: (metaPath) => {
      if (exited || !stdin || stdin.destroyed) return false;
      // The line, then the pipe's end: from here the wrapper is the turn's and hears nothing more from the root.
      stdin.end(`${SPARE_TAKE_COMMAND} ${metaPath}\n`);
      return true;
    },
    end: () => {
      if (!stdin?.destroyed) stdin?.end();
    },
    exited: gone,
    kill: () => {
      if (!exited) killSpare(child.pid, runToken, dir);
    },
  };
};

/**
 * Kills a spare wrapper that did not end in time, with its pi and its folder. The wrapper has
 * a process group of its own (detached) and its pi another (the wrapper starts pi so): killed
 * alone, the wrapper's orphan guard would end the pi with SIGTERM after this root has exited,
 * and that pi would go on writing into the temp folder for a moment. The pi carries the run
 * token this root chose for it. Its processes are found first and killed before the wrapper,
 * so the guard (which acts once the wrapper is dead) finds them killed already; a second look
 * after the wrapper is dead finds one it forked meanwhile.
 */
export function killSpare(wrapperPid: number | undefined, runToken: string, dir: string): void {
  // A process the wrapper had forked but not yet made pi still carries the wrapper's entry.
  const entries = [runTokenEntry(runToken), `${ENV.spareRunToken}=${runToken}`] as const;
  killProcessesWithEnvSync(...entries);
  signalGroup(wrapperPid, "SIGKILL");
  killProcessesWithEnvSync(...entries);
  fs.rmSync(dir, { recursive: true, force: true });
}

/** Turns as wrapper processes, the spare's wrapper when it fits; the keeper hears each start and end. */
export function spareTurns(keeper: SpareKeeper<ChildProcess>, base: TurnOperations = wrapperTurns): TurnOperations {
  return {
    ...base,
    start: async (spec) => {
      const turn = await startTurn(spec, {
        handTo: (meta, metaPath) => keeper.handTo(meta, metaPath)?.handle,
        started: (meta) => keeper.turnStarted(meta),
      });
      void turn.finished.then(() => keeper.turnEnded());
      return turn;
    },
  };
}
