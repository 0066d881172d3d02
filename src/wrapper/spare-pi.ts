/**
 * A spare pi (contracts/spare.ts): started in RPC mode for a template meta.json before any turn
 * needs it, and handed to the turn that takes the spare wrapper over. pi's command line is
 * the template's with the spare folder's own session and instructions files in it; the
 * hand-over writes the turn's instructions over the spare's, its environment into the
 * hand-over file, and the run then has pi switch to the turn's session (rpc-session.ts) and
 * prompt it. A turn whose command line would differ gets no spare pi: the run starts its own.
 */
import fs from "node:fs";
import path from "node:path";
import { ENV } from "../contracts/env.js";
import type { MetaV1 } from "../contracts/meta.js";
import { fixedAtStart, SPARE_FILES, type SpareHandoverV1, spareHandover, spareRefusal } from "../contracts/spare.js";
import { buildChildArgs, type ChildHandle, childEnvironment, type SpawnOptions } from "./child.js";
import { restorePriority } from "./standby.js";

/** The spare pi's command line for `meta`: its RPC mode, and the spare folder's session and instructions. */
export function spareArgs(meta: MetaV1, spareDir: string): string[] {
  return buildChildArgs(
    {
      ...meta,
      sessionPath: path.join(spareDir, SPARE_FILES.session),
      ...(meta.systemPromptPath && { systemPromptPath: path.join(spareDir, SPARE_FILES.instructions) }),
    },
    undefined,
    true,
  );
}

/** The spare's start: what pi got then, which a turn must match. */
export interface SpareStart {
  dir: string;
  template: MetaV1;
  bin: string;
  args: string[];
  /** The environment pi started with (childEnvironment of `options`). */
  env: Record<string, string>;
  options: SpawnOptions;
}

/**
 * A spare's options for `template`: its token, the hand-over file in pi's environment, no task
 * file yet, and none of the package's own variables: a waiting spare is nobody (its extensions
 * stay inert until the hand-over gives them the turn's agent), never the template turn's agent
 * — which would take that agent's children and notices as its own.
 */
export function spareSpawnOptions(
  template: MetaV1,
  dir: string,
  env: Record<string, string>,
  runToken: string,
): SpawnOptions {
  return {
    cwd: template.cwd,
    env: {
      ...Object.fromEntries(Object.entries(env).filter(([name]) => fixedAtStart(name))),
      [ENV.spareHandover]: path.join(dir, SPARE_FILES.handover),
    },
    // The turn's task file comes with the hand-over; this one is never written.
    taskFile: path.join(dir, "no-task"),
    runToken,
  };
}

/** The run's view of a spare pi: taken once, by the run's first pi, or ended. */
export class SparePi {
  private taken = false;
  private exited = false;

  constructor(
    readonly start: SpareStart,
    readonly child: ChildHandle,
  ) {
    child.once("exit", () => {
      this.exited = true;
    });
    child.once("error", () => {
      this.exited = true;
    });
  }

  /** The run's token: the spare's processes carry it already (orphan-guard.ts). */
  get runToken(): string {
    return this.start.options.runToken;
  }

  /** Whether its pi still runs, not yet taken. */
  available(): boolean {
    return !this.taken && !this.exited;
  }

  /**
   * The pi for the turn `meta` (`bin`, `options` as the run would start its own): handed over,
   * with the session it must switch to; undefined (a refusal said to `warn`) when it cannot be.
   */
  take(
    meta: MetaV1,
    bin: string,
    options: SpawnOptions,
    warn: (line: string) => void,
  ): { child: ChildHandle; args: string[]; switchTo: string; handOver(): void } | undefined {
    if (!this.available()) return undefined;
    const refusal =
      spareRefusal(this.start.template, meta) ??
      (bin !== this.start.bin ? "another pi" : undefined) ??
      (sameArgs(spareArgs(meta, this.start.dir), this.start.args) ? undefined : "another command line");
    if (refusal || !meta.sessionPath) {
      warn(`the spare pi was not used (${refusal ?? "no session"}): the turn starts its own`);
      return undefined;
    }
    this.taken = true;
    // Niced while it waited (spare-command.ts), so that its start-up left the CPU to the turns running then.
    if (this.child.pid) restorePriority(this.child.pid);
    return {
      child: startedHandle(this.child),
      args: this.start.args,
      switchTo: meta.sessionPath,
      handOver: () => this.handOver(meta, options),
    };
  }

  /** The turn's instructions over the spare's, and its environment in the hand-over file (written whole). */
  private handOver(meta: MetaV1, options: SpawnOptions): void {
    const dir = this.start.dir;
    if (meta.systemPromptPath) fs.copyFileSync(meta.systemPromptPath, path.join(dir, SPARE_FILES.instructions));
    const handover: SpareHandoverV1 = spareHandover(this.start.env, childEnvironment(options));
    const file = path.join(dir, SPARE_FILES.handover);
    fs.writeFileSync(`${file}.tmp`, JSON.stringify(handover));
    fs.renameSync(`${file}.tmp`, file);
  }
}

function sameArgs(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((arg, index) => arg === b[index]);
}

/** The spare's pi as a handle whose `spawn` has happened already: it started before the turn. */
function startedHandle(child: ChildHandle): ChildHandle {
  const handle: ChildHandle = {
    pid: child.pid,
    stdin: child.stdin,
    stdout: child.stdout,
    stderr: child.stderr,
    once(event: "spawn" | "error" | "exit", listener: (...args: never[]) => void): unknown {
      if (event === "spawn") queueMicrotask(listener as () => void);
      else child.once(event as "exit", listener as (code: number | null, signal: NodeJS.Signals | null) => void);
      return handle;
    },
  } as ChildHandle;
  return handle;
}
