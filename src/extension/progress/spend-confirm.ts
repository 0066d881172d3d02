/**
 * Settings `confirm_every_usd`: each time the tree's agents have spent another multiple of it,
 * the person is asked whether the tree may spend more. The root alone decides and writes the
 * tree's spend gate (contracts/spend-gate.ts); every process of the tree reads it before it
 * starts a turn, every turn's wrapper while its turn runs.
 *
 * - With a person (the root has a UI — interactive or RPC — and `dialogs` is not "deny"): the
 *   root looks at the tree's spend every second; once it reaches the ceiling it asks with pi's
 *   own confirm dialog. Running turns go on while the question is open (stopping them would
 *   waste the work the person may well approve); a new spawn or follow-up anywhere in the tree
 *   is held until the answer, so nothing new starts on money nobody approved. "Yes" raises the
 *   ceiling to the next multiple above what was spent; "no", or no answer within
 *   `dialog_timeout`, marks the gate declined: every running turn's wrapper wraps its turn up
 *   as for a spent tree budget, and every new spawn is refused with one line.
 * - Without a person (print or json root, or `dialogs: "deny"`): the ceiling is a budget — a
 *   turn gets it as what is left of the tree's cost budget, and nothing starts past it.
 *
 * A new session of the root keeps the ceiling reached so far but asks again: "no" holds for
 * the session it was said in.
 */
import fs from "node:fs";
import path from "node:path";
import { dialogTimeoutMs } from "../../contracts/dialog-settings.js";
import { ENV } from "../../contracts/env.js";
import { TREE_FILES } from "../../contracts/layout.js";
import {
  CONFIRM_EVERY_KEY,
  ceilingReached,
  declinedRefusal,
  nextCeiling,
  readSpendGateSync,
  type SpendGateV1,
  unconfirmedRefusal,
} from "../../contracts/spend-gate.js";
import { formatCost } from "../../contracts/usage.js";
import { writeJsonAtomic } from "../../lib/atomic-file.js";
import { type Clock, sleep, systemClock, type TimerHandle } from "../../lib/clock.js";
import { readSubagentSettings } from "../settings.js";
import { treeSpend } from "./budget.js";
import type { TreeProgress } from "./progress.js";

/** How often the root looks at the tree's spend, and a held spawn below the root at the gate. */
export const SPEND_LOOK_MS = 1000;
/** A held spawn below the root waits this much longer than the dialog: the root notices the crossing within a look. */
const HELD_MARGIN_MS = 5000;

/** The part of pi's UI the question uses (ctx.ui). */
export interface ConfirmUi {
  confirm(title: string, message: string, options: { signal: AbortSignal }): Promise<boolean>;
  notify(message: string, level: "info" | "warning" | "error"): void;
}

export interface SpendConfirmationOptions {
  /** The gate file (`spend-gate.json` at the top of the tree directory). */
  file: string;
  every: number;
  /** Who is asked; undefined when the root has no person (the ceiling is then a budget). */
  ui: ConfirmUi | undefined;
  /** How long the question waits for an answer; no answer counts as no. */
  timeoutMs: number;
  /** What the tree's agents have spent so far, in USD. */
  spent: () => Promise<number>;
  clock?: Clock;
  /** The gate a former session of this root left, if any. */
  previous?: SpendGateV1 | undefined;
}

/** The root's side: holds the gate, asks the person, writes each change. */
export class SpendConfirmation {
  private gate: SpendGateV1;
  private readonly clock: Clock;
  private asking: Promise<void> | undefined;
  private abortQuestion: (() => void) | undefined;
  private timer: TimerHandle | undefined;
  private writing: Promise<void> = Promise.resolve();
  private written = false;
  private stopped = false;

  constructor(private readonly options: SpendConfirmationOptions) {
    this.clock = options.clock ?? systemClock;
    const { every, previous } = options;
    const ceiling = previous?.every_usd === every ? Math.max(previous.ceiling_usd, every) : every;
    this.gate = { version: 1, every_usd: every, ceiling_usd: ceiling, person: options.ui !== undefined };
  }

  get current(): SpendGateV1 {
    return this.gate;
  }

  get file(): string {
    return this.options.file;
  }

  /** The gate on disk, written once before the first turn starts (the tree directory exists by then). */
  async publish(): Promise<void> {
    if (!this.written) await this.write();
  }

  /** With a person: looks at the tree's spend every SPEND_LOOK_MS and asks once it reaches the ceiling. */
  watch(): void {
    if (!this.options.ui || this.timer !== undefined) return;
    this.timer = this.clock.setInterval(() => void this.look(), SPEND_LOOK_MS);
  }

  /** Whether a turn may start with the tree at `spent`: undefined, or the one line it is refused with. Holds it while the person is asked. */
  async admit(spent: number): Promise<string | undefined> {
    for (;;) {
      if (this.gate.declined) return declinedRefusal(this.gate);
      if (!ceilingReached(this.gate, spent)) return undefined;
      if (!this.gate.person || this.stopped) return unconfirmedRefusal(this.gate, spent);
      await this.ask(spent);
      spent = await this.options.spent().catch(() => spent);
    }
  }

  /** The session ends: no more looks; an open question is closed unanswered (the gate stays as it is). */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.clock.clearInterval(this.timer);
    this.timer = undefined;
    this.abortQuestion?.();
  }

  private async look(): Promise<void> {
    if (this.asking || this.gate.declined || this.stopped) return;
    let spent: number;
    try {
      spent = await this.options.spent();
    } catch {
      return; // the tree directory is briefly unreadable: next look
    }
    if (ceilingReached(this.gate, spent)) await this.ask(spent);
  }

  /** One question at a time: a spawn held meanwhile waits for the same answer. */
  private ask(spent: number): Promise<void> {
    this.asking ??= this.question(spent).finally(() => {
      this.asking = undefined;
    });
    return this.asking;
  }

  private async question(spent: number): Promise<void> {
    const ui = this.options.ui;
    if (!ui || this.gate.declined) return;
    const { every_usd } = this.gate;
    const next = nextCeiling(every_usd, spent);
    const title = `pi-subagent-tree: this tree's agents have spent ${formatCost(spent)} — let them spend up to ${formatCost(next)}?`;
    const message =
      `${CONFIRM_EVERY_KEY} is ${formatCost(every_usd)}: you are asked each time the tree spends that much more. ` +
      `Yes: its agents go on, and you are asked again at ${formatCost(next)}. ` +
      `No: every running turn wraps up and no new turn starts in this tree.`;
    const controller = new AbortController();
    let timedOut = false;
    const timer = this.clock.setTimeout(
      () => {
        timedOut = true;
        controller.abort();
      },
      this.options.timeoutMs,
      { unref: true },
    );
    this.abortQuestion = () => controller.abort();
    let yes = false;
    try {
      yes = await ui.confirm(title, message, { signal: controller.signal });
    } catch {
      yes = false; // the UI went away: nobody said yes
    } finally {
      this.clock.clearTimeout(timer);
      this.abortQuestion = undefined;
    }
    if (this.stopped && !timedOut && !yes) return; // closed by the session's end, not answered
    if (yes) {
      const now = await this.options.spent().catch(() => spent);
      this.gate = { ...this.gate, ceiling_usd: nextCeiling(every_usd, Math.max(now, spent)) };
    } else {
      const by = timedOut ? "timeout" : "no";
      this.gate = { ...this.gate, declined: { spent_usd: spent, by, at: new Date(this.clock.now()).toISOString() } };
    }
    await this.write();
    if (!yes) ui.notify(declinedRefusal(this.gate), "warning");
  }

  /** Writes are queued, so the file always ends with the latest gate. */
  private write(): Promise<void> {
    this.written = true;
    const gate = this.gate;
    this.writing = this.writing.then(() => writeJsonAtomic(this.options.file, gate)).catch(() => undefined);
    return this.writing;
  }
}

/** This process's confirmation, by tree directory: only a root has one. */
const confirmations = new Map<string, SpendConfirmation>();

export function spendGateFile(treeDir: string): string {
  return path.join(treeDir, TREE_FILES.spendGate);
}

/** Makes `confirmation` the one of the tree at `treeDir` (until the returned function is called). */
export function holdSpendConfirmation(treeDir: string, confirmation: SpendConfirmation): () => void {
  confirmations.set(treeDir, confirmation);
  return () => {
    confirmation.stop();
    if (confirmations.get(treeDir) === confirmation) confirmations.delete(treeDir);
  };
}

/** The tree's gate as this process sees it: the root's own, else the file (undefined: none). */
export async function spendGateOf(treeDir: string): Promise<SpendGateV1 | undefined> {
  const own = confirmations.get(treeDir);
  if (own) {
    await own.publish();
    return own.current;
  }
  return readSpendGateSync(spendGateFile(treeDir));
}

/** meta.json `env` of a turn about to start: the gate its wrapper watches; the cost cap when nobody can be asked. */
export async function spendGateEnv(
  treeDir: string,
): Promise<{ env: Record<string, string>; costCap?: number | undefined }> {
  const gate = await spendGateOf(treeDir);
  if (!gate) return { env: {} };
  return { env: { [ENV.spendGate]: spendGateFile(treeDir) }, ...(!gate.person && { costCap: gate.ceiling_usd }) };
}

export interface GateWait {
  clock?: Clock;
  /** How long a spawn below the root is held while the person is asked. */
  timeoutMs: number;
}

/**
 * Whether a new turn may start in the tree at `treeDir`: undefined, or the line it is refused
 * with. In the root the person may be asked first; below it, a spawn is held while the root
 * asks (the gate is read again every SPEND_LOOK_MS), at most the dialog's time-out and a margin.
 */
export async function spendGateRefusal(
  treeDir: string,
  spent: () => Promise<number>,
  wait: GateWait,
): Promise<string | undefined> {
  const own = confirmations.get(treeDir);
  if (own) return own.admit(await spent());
  const file = spendGateFile(treeDir);
  const clock = wait.clock ?? systemClock;
  const deadline = clock.now() + wait.timeoutMs + HELD_MARGIN_MS;
  for (let gate = readSpendGateSync(file); gate; gate = readSpendGateSync(file)) {
    if (gate.declined) return declinedRefusal(gate);
    const now = await spent();
    if (!ceilingReached(gate, now)) return undefined;
    if (!gate.person) return unconfirmedRefusal(gate, now);
    if (clock.now() >= deadline)
      return declinedRefusal({ ...gate, declined: { spent_usd: now, by: "timeout", at: "" } });
    await sleep(clock, SPEND_LOOK_MS);
  }
  return undefined;
}

/**
 * The root's part at a session's start: with `confirm_every_usd` set, its confirmation — asking
 * the person when the root has one (a UI, and `dialogs` is not "deny"), else holding the tree
 * to the ceiling; without it, a gate a former session left is removed, so no process of the
 * tree goes by it. Returns what ends it at the session's end.
 */
export function startSpendConfirmation(
  treeDir: string,
  ctx: { cwd: string; hasUI: boolean; ui: ConfirmUi },
  progress: TreeProgress,
): () => void {
  const { settings } = readSubagentSettings({ cwd: ctx.cwd });
  const file = spendGateFile(treeDir);
  const every = settings.confirmEveryUsd;
  if (every === undefined) {
    fs.rm(file, { force: true }, () => undefined);
    return () => undefined;
  }
  const confirmation = new SpendConfirmation({
    file,
    every,
    ui: ctx.hasUI && settings.dialogs !== "deny" ? ctx.ui : undefined,
    timeoutMs: dialogTimeoutMs(settings.dialogTimeout),
    spent: async () => (await treeSpend(progress)).cost,
    clock: progress.clock,
    previous: readSpendGateSync(file),
  });
  confirmation.watch();
  return holdSpendConfirmation(treeDir, confirmation);
}
