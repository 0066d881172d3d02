/**
 * `subagent-wrapper [run] <meta.json>`: load meta.json, run the child, report. Kept apart
 * from src/program.ts (commander) so bin/subagent-wrapper can run a plain meta file without
 * loading the argument parser: start-up is the wrapper's whole overhead on a short run
 * (docs/performance.md).
 */

import { MetaError, type MetaV1 } from "../contracts/meta.js";
import { RESULT_VERSION, type ResultV1, WRAPPER_EXIT } from "../contracts/result.js";
import { emptyUsage } from "../contracts/usage.js";
import { errorText } from "../lib/values.js";
import { writeResultAtomic } from "../wrapper/artifacts.js";
import { loadMeta } from "../wrapper/load-meta.js";
import { runnerOperations } from "../wrapper/remote/index.js";
import { runWrapper } from "../wrapper/run.js";
import type { SparePi } from "../wrapper/spare-pi.js";

/**
 * One line on stderr, which never fails the run: stderr may be a file on the disk that just
 * filled up (a synchronous write throws ENOSPC) or a pipe whose reader is gone (an 'error'
 * event). The run's outcome is in result.json; a lost line is only a lost line.
 */
export const say = (line: string): void => {
  try {
    process.stderr.write(`${line}\n`);
  } catch {
    // the line is lost, the run goes on
  }
};
process.stderr.on("error", () => undefined);
const sayLine = say;

/** The result.json of a run that never started because its meta.json was invalid. */
export function metaErrorResult(error: MetaError, now = new Date()): ResultV1 {
  return {
    version: RESULT_VERSION,
    runId: error.runId ?? "",
    status: "failed",
    exitCode: WRAPPER_EXIT.usage,
    finalText: "",
    usage: emptyUsage(),
    turns: 0,
    toolCalls: 0,
    startedAt: now.toISOString(),
    endedAt: now.toISOString(),
    durationMs: 0,
    childExitCode: null,
    childSignal: null,
    forcedExit: false,
    errorMessage: error.message,
  };
}

const HANDLED_SIGNALS = ["SIGTERM", "SIGINT", "SIGHUP"] as const;

/** What a spare wrapper (spare-command.ts) brings to the run it is handed: its pi, and where its lines go. */
export interface RunCommandExtras {
  spare?: SparePi;
  say?: (line: string) => void;
}

export async function runCommand(metaPath: string, extras: RunCommandExtras = {}): Promise<number> {
  const say = extras.say ?? sayLine;
  // A stop asked for while meta.json is read is remembered, so it is recorded as
  // `interrupted` rather than killing the wrapper before result.json exists.
  let earlySignal: NodeJS.Signals | undefined;
  const remember = (signal: NodeJS.Signals) => {
    earlySignal ??= signal;
  };
  for (const signal of HANDLED_SIGNALS) process.on(signal, remember);
  const forget = () => {
    for (const signal of HANDLED_SIGNALS) process.off(signal, remember);
  };
  let meta: MetaV1;
  try {
    meta = await loadMeta(metaPath, { warn: (line) => say(`subagent-wrapper: warning: ${line}`) });
  } catch (err) {
    forget();
    if (!(err instanceof MetaError)) throw err;
    // Every problem at once, one line each: a writer fixes them all in one go.
    for (const problem of err.problems) say(`subagent-wrapper: ${problem}`);
    if (err.resultPath) await writeResultAtomic(err.resultPath, metaErrorResult(err)).catch(() => undefined);
    return WRAPPER_EXIT.usage;
  }
  // runWrapper installs its own handlers before its first await, so none is missed.
  // A runner other than local: the child is the far side (wrapper/remote/).
  const child = await runnerOperations(meta, process.env);
  const running = runWrapper(meta, {
    warn: say,
    handleSignals: true,
    ...(earlySignal && { earlySignal }),
    ...(child && { child }),
    ...(extras.spare && { spare: extras.spare }),
  });
  forget();
  const { result, exitCode } = await running;
  await child?.end?.();
  if (result.status !== "completed" && result.errorMessage)
    say(`subagent-wrapper: ${result.status}: ${result.errorMessage}`);
  return exitCode;
}

/** Entry of the fast path: like `main` for a plain `[run] <meta.json>`, never throws. */
export async function runMetaFile(metaPath: string): Promise<number> {
  try {
    return await runCommand(metaPath);
  } catch (err) {
    sayLine(`subagent-wrapper: internal error: ${errorText(err)}`);
    return WRAPPER_EXIT.outcome;
  }
}
