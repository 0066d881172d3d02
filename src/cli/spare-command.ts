/**
 * `subagent-wrapper spare <spare.json>`: a spare wrapper (contracts/spare.ts). It starts a pi
 * for the template meta.json in RPC mode (wrapper/spare-pi.ts) and waits. A line
 * `take <meta.json>` on its stdin hands it a turn: from there it is that turn's wrapper, run
 * as `subagent-wrapper run` would run it, with the spare pi as the turn's pi when it fits, and
 * its own lines in the run folder's wrapper.log. Its stdin ending (the root that keeps it gone
 * or done with it) or a signal before that ends the spare pi and the wrapper: a spare never
 * outlives its tree's root, and nothing of it is left.
 */
import fs from "node:fs";
import path from "node:path";
import { ENV, runTokenEntry, runTokenOr } from "../contracts/env.js";
import { RUN_FILES } from "../contracts/layout.js";
import { MetaError } from "../contracts/meta.js";
import { WRAPPER_EXIT } from "../contracts/result.js";
import { SPARE_FILES, SPARE_TAKE_COMMAND } from "../contracts/spare.js";
import { killProcessesWithEnvSync } from "../lib/process.js";
import { errorText } from "../lib/values.js";
import { childEnvironment, resolvePiBinary, signalGroup, spawnChild } from "../wrapper/child.js";
import { loadMeta } from "../wrapper/load-meta.js";
import { startOrphanGuard } from "../wrapper/orphan-guard.js";
import { SparePi, spareArgs, spareSpawnOptions } from "../wrapper/spare-pi.js";
import { lowerPriority } from "../wrapper/standby.js";
import { runCommand, say } from "./run-command.js";

const STOP_SIGNALS = ["SIGTERM", "SIGINT", "SIGHUP"] as const;

export async function spareCommand(templatePath: string): Promise<number> {
  let template: Awaited<ReturnType<typeof loadMeta>>;
  try {
    template = await loadMeta(templatePath);
  } catch (err) {
    if (!(err instanceof MetaError)) throw err;
    for (const problem of err.problems) say(`subagent-wrapper: ${problem}`);
    return WRAPPER_EXIT.usage;
  }
  const dir = path.dirname(path.resolve(templatePath));
  const env = { ...process.env, ...template.env } as Record<string, string>;
  let bin: string;
  try {
    bin = resolvePiBinary(env, template.cwd);
  } catch (err) {
    say(`subagent-wrapper: ${errorText(err)}`);
    return WRAPPER_EXIT.usage;
  }
  const runToken = spareRunToken(process.env);
  // From pi's spawn on, nothing the spare starts outlives this wrapper, even SIGKILLed.
  const guard = startOrphanGuard(runToken, path.join(dir, "spare-reserve"), (err) =>
    say(`subagent-wrapper: warning: the spare's orphan guard could not start (${errorText(err)})`),
  );
  const instructions = template.systemPromptPath ? fs.readFileSync(template.systemPromptPath) : "";
  fs.writeFileSync(path.join(dir, SPARE_FILES.instructions), instructions);
  const options = spareSpawnOptions(template, dir, env, runToken);
  const args = spareArgs(template, dir);
  const child = spawnChild(bin, args, options);
  child.on("error", () => undefined);
  if (child.pid) {
    guard.watch(child.pid);
    // Its start-up comes while a turn's pi starts too: that one goes first (its niceness back at the hand-over).
    lowerPriority(child.pid);
  }
  const spare = new SparePi({ dir, template, bin, args, env: childEnvironment(options), options }, child);
  const piExited = new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.once("error", () => resolve());
  });

  const metaPath = await takeOrEnd(process.stdin);
  let code = 0;
  if (metaPath !== undefined) {
    const runLog = path.join(path.dirname(path.resolve(metaPath)), RUN_FILES.wrapperLog);
    code = await runCommand(metaPath, { spare, say: (line) => appendLine(runLog, line) });
  }
  if (spare.available()) {
    // A spare nobody took holds no turn, no session and no work: it is killed, not asked to end.
    // Asked (SIGTERM), a pi niced while it waited needs seconds on a loaded machine to run its
    // exit (and write Node's compile cache into the temp folder), after its root has exited.
    signalGroup(child.pid, "SIGKILL");
    killProcessesWithEnvSync(runTokenEntry(runToken));
    await piExited;
  }
  await guard.release();
  removeSpareFiles(dir);
  return code;
}

/** The spare's own files, then its folder if nothing else is in it (a folder someone named is never removed whole). */
function removeSpareFiles(dir: string): void {
  for (const name of [...Object.values(SPARE_FILES), "no-task", `${SPARE_FILES.handover}.tmp`])
    fs.rmSync(path.join(dir, name), { force: true });
  try {
    fs.rmdirSync(dir);
  } catch {
    // not empty, or gone: left as it is
  }
}

/**
 * The meta.json path of the turn handed over, or undefined when stdin ends or a stop signal
 * comes first. Once it has one, it listens to neither: the run handles its own signals, and a
 * root that goes away no longer ends it (a turn outlives its root).
 */
export function takeOrEnd(input: NodeJS.ReadableStream & { destroy?(): void }): Promise<string | undefined> {
  return new Promise((resolve) => {
    let buffered = "";
    const done = (value: string | undefined) => {
      input.off("data", onData);
      input.off("end", onEnd);
      input.off("error", onEnd);
      for (const signal of STOP_SIGNALS) process.off(signal, onEnd);
      input.destroy?.();
      resolve(value);
    };
    const onEnd = () => done(undefined);
    const onData = (chunk: Buffer | string) => {
      buffered += chunk.toString();
      const newline = buffered.indexOf("\n");
      if (newline === -1) return;
      const line = buffered.slice(0, newline);
      const prefix = `${SPARE_TAKE_COMMAND} `;
      done(line.startsWith(prefix) ? line.slice(prefix.length) : undefined);
    };
    input.on("data", onData);
    input.on("end", onEnd);
    input.on("error", onEnd);
    for (const signal of STOP_SIGNALS) process.on(signal, onEnd);
  });
}

/** The token the root chose for this spare's pi (it kills by it), else a new one. */
export function spareRunToken(env: NodeJS.ProcessEnv): string {
  return runTokenOr(env[ENV.spareRunToken]);
}

function appendLine(file: string, line: string): void {
  try {
    fs.appendFileSync(file, `${line}\n`);
  } catch {
    // the line is lost, the run goes on
  }
}

/** Entry of `subagent-wrapper spare`: never throws. */
export async function runSpareFile(templatePath: string): Promise<number> {
  try {
    return await spareCommand(templatePath);
  } catch (err) {
    say(`subagent-wrapper: internal error: ${errorText(err)}`);
    return WRAPPER_EXIT.outcome;
  }
}
