/**
 * Everything a session with a UI (interactive pi, or RPC) does for the person: the tree's
 * display, a line for every notice, the idle wake, the idle inbox poll, the last frame when
 * pi quits, and the lines that say what was stopped. One instance per session, started once
 * the runtime is restored and stopped on session_shutdown, after which it holds no timer.
 */
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import type { Notice } from "../../contracts/notice.js";
import type { AgentRecordV1 } from "../../contracts/tree.js";
import { type Clock, systemClock, type TimerHandle } from "../../lib/clock.js";
import { budgetFromEnv } from "../progress/budget.js";
import { progressOf } from "../progress/progress.js";
import { DELIVERY_KEYS_FIELD } from "../turns/delivery/delivery-keys.js";
import type { TreeRuntime } from "../turns/runtime.js";
import { type ActiveAgents, activeAgents, countActive, type OnExit, sayAtExit, stoppingStatus } from "./exit.js";
import type { NoticeHold } from "./notice-hold.js";
import { noticeLevel, noticeLine } from "./notice-view.js";
import { type Painter, plain, themePainter } from "./paint.js";
import { watchForQuit } from "./quit-watch.js";
import { IdleWake, WAKE_MESSAGE_TYPE, wakeEnabled, wakeText } from "./wake.js";
import { TreeDisplay } from "./widget.js";

/** How often an idle root looks for messages its children sent (and for a wake to send). */
const IDLE_INBOX_POLL_MS = 1000;
/** How often the status line and widget are redrawn. */
const DISPLAY_REFRESH_MS = 1000;

/** A ctx call that may throw once pi has replaced or ended the session. */
function safely<T>(fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch {
    return fallback;
  }
}

/** Colours in pi's terminal; plain strings where they travel as JSON (RPC) or nowhere. */
export function painterFor(ctx: ExtensionContext | undefined): Painter {
  if (!ctx?.hasUI || !process.stdout.isTTY) return plain;
  return safely(() => themePainter(ctx.ui.theme as Parameters<typeof themePainter>[0]), plain);
}

export class SessionUi {
  private readonly display: TreeDisplay;
  private readonly wake: IdleWake | undefined;
  private inboxTimer: TimerHandle | undefined;
  private unwatchQuit: (() => void) | undefined;
  /** What a deliberate exit does with running turns (index.ts sets it from onExit). */
  exitHow: OnExit = "stop";

  constructor(
    pi: ExtensionAPI,
    private readonly ctx: ExtensionContext,
    private readonly rt: TreeRuntime,
    /** The root's session file (the exit lines' resume hint); undefined when not saved. */
    readonly sessionFile: string | undefined,
    /** Which notices reached pi in a message (the wake gives back those that did not). */
    hold: Pick<NoticeHold, "reachedPi">,
    /** Times the display, the inbox poll, the wake and the quit keys (tests move a fake one). */
    private readonly clock: Clock = systemClock,
  ) {
    this.display = new TreeDisplay(
      ctx.ui,
      rt.self,
      () => progressOf(rt).snapshot(rt.self, clock),
      () => budgetFromEnv(),
      () => this.painter(),
      clock,
    );
    // An interactive root stays alive between prompts: a child that ends while it is idle
    // wakes its model with the notice (PI_SUBAGENTS_WAKE=0: the notice is only shown).
    this.wake = wakeEnabled()
      ? new IdleWake({
          mailbox: rt.mailbox,
          isIdle: () => safely(() => ctx.isIdle(), false),
          // Their keys ride in the details: once pi has written the message they are taken (notice-hold.ts).
          send: (notices, pending) =>
            safely(() => {
              pi.sendMessage(
                {
                  customType: WAKE_MESSAGE_TYPE,
                  content: wakeText(notices, pending),
                  display: true,
                  details: { notices, pending, [DELIVERY_KEYS_FIELD]: rt.deliveryKeysOf(notices) },
                },
                { triggerTurn: true, deliverAs: "followUp" },
              );
              return true;
            }, false),
          reachedPi: (notice) => hold.reachedPi(notice),
          clock,
        })
      : undefined;
  }

  painter(): Painter {
    return painterFor(this.ctx);
  }

  start(): void {
    // A clock's interval never keeps pi alive; beforeShutdown() clears it anyway.
    this.inboxTimer = this.clock.setInterval(() => {
      if (!safely(() => this.ctx.isIdle(), false)) return;
      void this.rt
        .collectInbox()
        .then(() => this.wake?.tick())
        .catch(() => undefined);
    }, IDLE_INBOX_POLL_MS);
    // The tree at a glance: nickname, status, model, elapsed, current tool, usage and cost.
    this.display.start(DISPLAY_REFRESH_MS);
    if (this.rt.identity.isRoot)
      this.unwatchQuit = watchForQuit(this.ctx.ui, () => this.freezeForExit(this.display.lastRecords()), this.clock);
  }

  /**
   * The notices a restore put in the mailbox (turns that ended while no root was there, and
   * notices given but not read before): shown, and they wake the root when it is idle.
   */
  offerRestored(): void {
    for (const notice of this.rt.mailbox.list()) this.noticed(notice);
  }

  /** The count of child dialogs waiting for the person, shown with the tree. */
  countDialogs(waiting: () => number): void {
    this.display.dialogsWaiting = waiting;
  }

  refresh(): void {
    void this.display.refresh();
  }

  /** Every notice that reaches the root gets a line; a waking one may start a turn. */
  noticed(notice: Notice): void {
    safely(() => this.ctx.ui.notify(noticeLine(notice), noticeLevel(notice)), undefined);
    this.wake?.offer(notice);
  }

  /** The last frame while pi exits says the agents are being stopped, not that they run. */
  private freezeForExit(records: readonly AgentRecordV1[]): ActiveAgents {
    const active = activeAgents(records);
    if (countActive(active) > 0) this.display.freeze(stoppingStatus(active, this.painter(), this.exitHow));
    return active;
  }

  /** Before the runtime stops its children: no timer runs, the last frame is up; returns who was working. */
  async beforeShutdown(): Promise<ActiveAgents | undefined> {
    if (this.inboxTimer !== undefined) this.clock.clearInterval(this.inboxTimer);
    this.inboxTimer = undefined;
    this.wake?.stop();
    this.unwatchQuit?.();
    this.unwatchQuit = undefined;
    if (!this.rt.identity.isRoot) return undefined;
    return this.freezeForExit(await this.rt.tree.subtree(this.rt.self).catch(() => []));
  }

  /** Once the children are stopped or left: the display is gone, and the person is told `lines` (exit.ts). */
  afterShutdown(lines: string[] | undefined, reason: string | undefined): void {
    this.display.stop();
    if (!lines) return;
    // Quitting: pi restores the terminal before the process exits, so the lines go below its
    // last frame. Another session replacing this one (new, resume, fork, reload): pi stays.
    if (reason === undefined || reason === "quit") sayAtExit(lines);
    else safely(() => this.ctx.ui.notify(lines.join("\n"), "warning"), undefined);
  }
}
