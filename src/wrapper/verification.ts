/**
 * A turn's verification at work (meta.json `verify`): after each pi process of the run
 * ends, the checks run in the child's cwd — the commands (check-process.ts), their results
 * reused on unchanged content (check-reuse.ts), then the review (review-check.ts) — and the
 * pure verify-machine.ts decides: done, or a repair prompt for the same session. run.ts starts
 * the repair's pi; a stop of the run (signal, time-out, limit) ends a running check at once.
 */

import { ENV } from "../contracts/env.js";
import type { EventRecordBody } from "../contracts/events.js";
import type { MetaV1 } from "../contracts/meta.js";
import type { MetaVerify, Verification, VerificationCheck } from "../contracts/verify.js";
import type { Clock } from "../lib/clock.js";
import { runCheckCommand } from "./check-process.js";
import { type KeptCheck, readKeptChecks, workspaceFingerprint, writeKeptChecks } from "./check-reuse.js";
import type { ChildOperations, FarCheckRound } from "./child.js";
import { runReview } from "./review-check.js";
import { afterRound, checkPassed, notRun, shouldCheck, type TurnEnd } from "./verify-machine.js";

export interface VerifierDeps {
  meta: MetaV1;
  clock: Clock;
  processes: ChildOperations;
  /** The child's environment (the run's, with meta.json `env`). */
  env: Record<string, string>;
  runToken: string;
  /** The run's own folder in the temp folder (run-temp.ts): the reviewer's task file goes there. */
  tempDir: string;
  record: (body: EventRecordBody) => void;
  /** A note for the user (result.json warnings): the kept results could not be written. */
  warn: (line: string) => void;
}

/** A repair round: the prompt that sends the child back. */
export interface Repair {
  round: number;
  prompt: string;
}

export class Verifier {
  private repairs = 0;
  private last: Verification | undefined;
  private readonly stopped = new AbortController();
  /** The round's far side, once a command needed it (a runner's: checks run where the child worked). */
  private far: FarCheckRound | undefined;
  private farUnable = false;
  /** The kept results being written. */
  private keeping: Promise<void> = Promise.resolve();

  constructor(
    private readonly verify: MetaVerify,
    private readonly deps: VerifierDeps,
  ) {}

  /** result.json `verification`: how the checks ended (not_run until a turn was checked). */
  get verification(): Verification {
    return this.last ?? notRun(this.repairs);
  }

  /** Whether a failed round would still send the child back. */
  get repairsLeft(): boolean {
    return this.repairs < this.verify.maxRepairs && !this.stopped.signal.aborted;
  }

  /** Ends a running check now, and no repair follows: the run is being stopped. */
  stop(): void {
    this.stopped.abort();
  }

  /**
   * A pi process of the run ended: its checks, and the repair when one failed and repairs are
   * left. A repair's pi that ended other than `completed` leaves the verification failed.
   */
  async afterTurn(end: TurnEnd, answer: string, bin: string): Promise<Repair | undefined> {
    if (!shouldCheck(end) || this.stopped.signal.aborted) {
      this.last =
        this.repairs > 0 && this.last
          ? { ...this.last, status: "failed", repairs: this.repairs }
          : notRun(this.repairs, this.last?.checks);
      await this.keeping;
      return undefined;
    }
    this.farUnable = false;
    const checks = await this.round(answer, bin);
    // A check the far side could not run at all (an older serve, a lost connection): a repair cannot help.
    const noRepair = this.stopped.signal.aborted || this.farUnable;
    const step = afterRound(checks, this.repairs, this.verify.maxRepairs, noRepair);
    if (step.kind === "done") {
      this.last = step.verification;
      await this.keeping;
      return undefined;
    }
    this.repairs = step.round;
    this.last = { status: "failed", repairs: this.repairs, checks };
    this.deps.record({ type: "repair", round: step.round, checks: step.failed.map((check) => check.name) });
    return { round: step.round, prompt: step.prompt };
  }

  /** Every check once, in order: the commands, then the review. */
  private async round(answer: string, bin: string): Promise<VerificationCheck[]> {
    const checks = await this.commands(this.verify.run ?? []);
    const review = this.verify.review;
    if (review && !this.stopped.signal.aborted) {
      const result = await runReview({
        meta: this.deps.meta,
        review,
        answer,
        bin,
        env: this.checkEnv(),
        runToken: this.deps.runToken,
        tempDir: this.deps.tempDir,
        processes: this.deps.processes,
        clock: this.deps.clock,
        timeoutMs: this.verify.timeoutMs,
        signal: this.stopped.signal,
      });
      checks.push(
        this.noted({
          name: review.name,
          kind: "review",
          ...(result.verdict && { verdict: result.verdict }),
          duration_ms: result.durationMs,
          output_tail: result.output,
        }),
      );
    }
    return checks;
  }

  /** The round's commands, in order, each reused when it can be. */
  private async commands(commands: string[]): Promise<VerificationCheck[]> {
    const checks: VerificationCheck[] = [];
    if (commands.length === 0) return checks;
    const statePath = this.verify.statePath;
    // The fingerprint is taken while the kept results are read, and while a command that
    // has none runs: nothing could be reused for it, so it does not wait for the fingerprint.
    await this.keeping;
    const fingerprinted = statePath ? workspaceFingerprint(this.deps.meta.cwd) : Promise.resolve(undefined);
    const kept = statePath ? await readKeptChecks(statePath) : new Map<string, KeptCheck>();
    let keptChanged = false;
    try {
      for (const command of commands) {
        if (this.stopped.signal.aborted) break;
        const earlier = kept.get(command);
        if (earlier && earlier.fingerprint === (await fingerprinted)) {
          checks.push(this.noted(reusedCheck(command, earlier)));
          continue;
        }
        const [check, fingerprint] = await Promise.all([this.runCommand(command), fingerprinted]);
        checks.push(this.noted(check));
        if (fingerprint && check.exit_code !== undefined) {
          kept.set(command, { fingerprint, exitCode: check.exit_code, output: check.output_tail });
          keptChanged = true;
        }
      }
    } finally {
      await this.far?.close();
      this.far = undefined;
    }
    // Written while a repair goes on (the next round, and the run's end, wait for it).
    if (statePath && keptChanged) {
      this.keeping = writeKeptChecks(statePath, kept).catch((err: Error) =>
        this.deps.warn(`verification: could not keep the checks' results (${err.message})`),
      );
    }
    return checks;
  }

  private async runCommand(command: string): Promise<VerificationCheck> {
    const { cwd } = this.deps.meta;
    const env = this.checkEnv();
    if (this.deps.processes.farChecks) {
      this.far ??= this.deps.processes.farChecks(env);
      const result = await this.far.run(command, this.verify.timeoutMs, this.stopped.signal);
      if (result.cannotRun) this.farUnable = true;
      return {
        name: command,
        kind: "run",
        ...(result.exitCode !== null && { exit_code: result.exitCode }),
        duration_ms: result.durationMs,
        output_tail: result.output,
      };
    }
    const launch = this.deps.processes.checkLaunch
      ? await this.deps.processes.checkLaunch(command, cwd, env).catch((err: Error) => err)
      : undefined;
    if (launch instanceof Error) {
      return {
        name: command,
        kind: "run",
        duration_ms: 0,
        output_tail: `the check could not start: ${launch.message}`,
      };
    }
    const result = await runCheckCommand(command, {
      cwd,
      env,
      launch,
      timeoutMs: this.verify.timeoutMs,
      clock: this.deps.clock,
      signal: this.stopped.signal,
    });
    return {
      name: command,
      kind: "run",
      ...(result.exitCode !== null && { exit_code: result.exitCode }),
      duration_ms: result.durationMs,
      output_tail: result.output,
    };
  }

  /** The child's environment, with the run's token: the orphan guard ends a check the wrapper leaves behind. */
  private checkEnv(): Record<string, string> {
    return { ...this.deps.env, [ENV.runToken]: this.deps.runToken, [ENV.wrapperPid]: String(process.pid) };
  }

  /** events.jsonl `check` for each check as it ends. */
  private noted(check: VerificationCheck): VerificationCheck {
    this.deps.record({
      type: "check",
      name: check.name,
      kind: check.kind,
      passed: checkPassed(check),
      ...(check.exit_code !== undefined && { exitCode: check.exit_code }),
      ...(check.verdict && { verdict: check.verdict }),
      durationMs: check.duration_ms,
      ...(check.reused && { reused: true }),
    });
    return check;
  }
}

/** A command's kept result, reused: the same content, the same command. */
function reusedCheck(command: string, earlier: KeptCheck): VerificationCheck {
  return {
    name: command,
    kind: "run",
    exit_code: earlier.exitCode,
    duration_ms: 0,
    output_tail: earlier.output,
    reused: true,
  };
}
