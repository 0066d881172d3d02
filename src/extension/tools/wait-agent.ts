import type { ExtensionContext, ToolDefinition } from "@mariozechner/pi-coding-agent";
import type { Notice } from "../../contracts/notice.js";
import { LIMITS } from "../../contracts/tree.js";
import { usageTotals } from "../../contracts/usage.js";
import { type Clock, systemClock } from "../../lib/clock.js";
import { errorValue } from "../../lib/text.js";
import type { AgentProgress, ProgressFields } from "../progress/progress.js";
import { DELIVERY_KEYS_FIELD } from "../turns/delivery/delivery-keys.js";
import type { TreeRuntime } from "../turns/runtime.js";
import { jsonResult, subtreeTarget, type ToolDeps } from "./common.js";
import { array, boolean, number, object, optional, string } from "./schema.js";
import { stillWorking, waitGroup } from "./wait-group.js";

const parameters = object({
  timeout_ms: optional(
    number({ description: `Default ${LIMITS.waitDefaultMs}, clamped to 0…${LIMITS.waitMaxMs}; 0 = just look.` }),
  ),
  target: optional(string({ description: "Agent of your subtree (default: any child)." })),
  all: optional(boolean({ description: "true: wait until every working child (or target) ends." })),
  targets: optional(array(string(), { description: "Direct children." })),
});

/** How often a waiting parent looks at its inbox for messages its children sent up, and for a message the user typed. */
const INBOX_POLL_MS = 200;
/** How often a waiting parent streams the progress of its subtree (pi's onUpdate). */
export const PROGRESS_UPDATE_MS = 1000;

/**
 * One partial result while waiting: one line of text (the widget draws the tree), its active
 * agents as details, each with its `progressFields` (progress.ts).
 */
export function progressUpdate(
  agents: AgentProgress[],
  waitedMs: number,
  progressFields: (agent: AgentProgress) => ProgressFields,
) {
  const active = agents.filter((agent) => agent.record.status === "running" || agent.record.status === "pending_init");
  const running = active.filter((agent) => agent.record.status === "running");
  const counts = [
    running.length && `${running.length} running`,
    active.length - running.length && `${active.length - running.length} queued`,
  ].filter(Boolean);
  const doing = running.map((agent) => {
    const tool = progressFields(agent).current_tool;
    return `${agent.record.taskName} (${agent.record.nickname})${tool ? ` ${tool}` : ""}`;
  });
  const text = `waiting ${Math.round(waitedMs / 1000)}s for notices${counts.length ? ` · ${counts.join(", ")}` : ""}${doing.length ? `: ${doing.join(", ")}` : ""}`;
  return {
    content: [{ type: "text" as const, text }],
    details: {
      waiting_ms: waitedMs,
      agents: active.map((agent) => ({
        agent_name: agent.record.path,
        nickname: agent.record.nickname,
        agent_status: agent.record.status,
        model: agent.record.model,
        ...progressFields(agent),
        ...(agent.queuePosition !== undefined && { queue_position: agent.queuePosition }),
        usage: usageTotals(agent.usage),
      })),
    },
  };
}

async function sendProgress(
  rt: TreeRuntime,
  clock: Clock,
  waitedMs: number,
  onUpdate: ((update: ReturnType<typeof progressUpdate>) => void) | undefined,
): Promise<void> {
  if (!onUpdate) return;
  try {
    // Loaded with the first update: a wait that ends at once needs none of it.
    const { progressFields, progressOf } = await import("../progress/progress.js");
    onUpdate(progressUpdate(await progressOf(rt).snapshot(rt.self, clock), waitedMs, progressFields));
  } catch {
    // progress is a courtesy: a failed read never fails the wait
  }
}

/** Whether pi holds a message the user typed for this agent (it is delivered once the tool returns). */
function userMessagePending(ctx: { hasPendingMessages?: () => boolean } | undefined): boolean {
  try {
    return ctx?.hasPendingMessages?.() === true;
  } catch {
    return false; // a ctx from a session that has ended
  }
}

/** How many of the caller's children have a turn running and queued. */
function workingCounts(rt: TreeRuntime): { running: number; queued: number } {
  const { running, queued } = rt.activeTurns();
  return { running: running.length, queued: queued.length };
}

/** The visible line when Esc cancels a wait: the children keep working, and how to stop them. */
export function cancelledLine({ running, queued }: { running: number; queued: number }): string {
  const working = [running && `${running} running`, queued && `${queued} queued`].filter(Boolean).join(", ");
  const one = running + queued === 1;
  return working
    ? `wait_agent cancelled: ${working} child agent${one ? "" : "s"} ${one ? "keeps" : "keep"} working — /agents stop stops ${one ? "it" : "them"}`
    : "wait_agent cancelled";
}

export function clampTimeout(value: unknown): number {
  if (typeof value !== "number" || !Number.isFinite(value)) return LIMITS.waitDefaultMs;
  return Math.min(LIMITS.waitMaxMs, Math.max(0, Math.floor(value)));
}

/** One wait_agent call: what it was given. */
interface WaitCall {
  rt: TreeRuntime;
  timeoutMs: number;
  signal: AbortSignal | undefined;
  /** pi's context; a test may leave it out. */
  ctx: ExtensionContext | undefined;
  /** With `all: true`: the children to wait for (fixed when the wait starts); else any notice ends the wait. */
  group?: ReadonlySet<string>;
}

/**
 * Esc or a message the person typed: the wait gives way at once, in either mode, and takes
 * no notice (they stay pending). An all-wait also names the children it still waited for.
 */
function givenWay({ rt, timeoutMs, signal, ctx, group }: WaitCall) {
  const waiting = group && { waiting_for: stillWorking(rt, group) };
  // Esc: the person wants the model back; the children keep working.
  if (signal?.aborted) {
    const counts = workingCounts(rt);
    if (ctx?.hasUI) ctx.ui.notify(cancelledLine(counts), "warning");
    return jsonResult({
      notices: [],
      pending: rt.mailbox.pending,
      timed_out: false,
      cancelled: true,
      ...counts,
      ...waiting,
      timeout_ms: timeoutMs,
    });
  }
  // The person typed while the model waits: the message goes first, the notices stay pending.
  if (userMessagePending(ctx)) {
    return jsonResult({
      notices: [],
      pending: rt.mailbox.pending,
      timed_out: false,
      user_message_pending: true,
      ...workingCounts(rt),
      ...waiting,
      timeout_ms: timeoutMs,
    });
  }
  return undefined;
}

const idleResult = (timeoutMs: number) =>
  jsonResult({ notices: [], pending: 0, timed_out: false, idle: true, timeout_ms: timeoutMs });

/** Without `all`: the pending notices, else idle when no child turn is under way, else keep waiting. */
function anyNotice({ rt, timeoutMs }: WaitCall) {
  if (rt.mailbox.pending > 0) {
    const notices = rt.mailbox.take(LIMITS.noticesPerWait);
    return jsonResult({ notices, pending: rt.mailbox.pending, timed_out: false, timeout_ms: timeoutMs });
  }
  if (!rt.hasAwaitedTurns()) return idleResult(timeoutMs);
  return undefined;
}

/**
 * What an all-wait returns once its group has ended, or at its time-out: the group's notices
 * (bounded per call like any wait; the rest stay pending for the next call), and the members
 * still working. Notices of other children stay in the mailbox.
 */
function groupResult({ rt, timeoutMs }: WaitCall, group: ReadonlySet<string>, timedOut: boolean) {
  const notices = rt.mailbox.takeFrom(group, LIMITS.noticesPerWait);
  return jsonResult({
    notices,
    pending: rt.mailbox.pending,
    timed_out: timedOut,
    waiting_for: stillWorking(rt, group),
    timeout_ms: timeoutMs,
  });
}

/** With `all`: idle when there is no one to wait for, the group's notices once every member has ended. */
function groupEnded(call: WaitCall, group: ReadonlySet<string>) {
  if (group.size === 0) return idleResult(call.timeoutMs);
  return stillWorking(call.rt, group).length === 0 ? groupResult(call, group, false) : undefined;
}

/**
 * The answer the wait has now, before its time-out, or undefined to keep waiting. Checked in
 * this order: Esc, a message the person typed, then the notices (any, or the group's).
 */
function answerNow(call: WaitCall) {
  return givenWay(call) ?? (call.group ? groupEnded(call, call.group) : anyNotice(call));
}

function timedOutResult(call: WaitCall) {
  if (call.group) return groupResult(call, call.group, true);
  return jsonResult({ notices: [], pending: 0, timed_out: true, timeout_ms: call.timeoutMs });
}

/** Waits until there is an answer or the time-out, streaming progress every PROGRESS_UPDATE_MS. */
async function waitForAnswer(
  call: WaitCall,
  clock: Clock,
  onUpdate: ((update: ReturnType<typeof progressUpdate>) => void) | undefined,
) {
  const { rt, timeoutMs, signal } = call;
  const started = clock.now();
  const deadline = started + timeoutMs;
  let lastUpdate: number | undefined;
  for (;;) {
    await rt.collectInbox();
    // What this pass looks at: the sleep below ends only for a notice that arrives after it.
    const seen = rt.mailbox.arrivals;
    const answer = answerNow(call);
    if (answer) return answer;
    const left = deadline - clock.now();
    if (left <= 0) return timedOutResult(call);
    if (lastUpdate === undefined || clock.now() - lastUpdate >= PROGRESS_UPDATE_MS) {
      lastUpdate = clock.now();
      await sendProgress(rt, clock, lastUpdate - started, onUpdate);
    }
    // Short steps: a message the person types is seen within INBOX_POLL_MS. Notices this pass
    // left pending (an all-wait's group is not done) do not wake it again: that would spin.
    await rt.mailbox.waitForNotice(Math.min(left, INBOX_POLL_MS), signal, seen);
  }
}

/** The answer with the delivery keys of the notices it hands on in its details (none: unchanged). */
export function withDeliveryKeys<T extends { details: object }>(
  rt: TreeRuntime,
  answer: T,
  notices: readonly Notice[] = (answer.details as { notices?: Notice[] }).notices ?? [],
): T {
  const keys = rt.deliveryKeysOf(notices);
  return keys.length === 0 ? answer : { ...answer, details: { ...answer.details, [DELIVERY_KEYS_FIELD]: keys } };
}

/** `targets`, when given: a non-empty list (null and [] mean not given). */
function givenTargets(targets: unknown): unknown[] | undefined {
  if (targets === undefined || targets === null) return undefined;
  if (!Array.isArray(targets)) throw new Error(`targets must be a list of agent paths, got ${errorValue(targets)}`);
  return targets.length > 0 ? targets : undefined;
}

/** What waiting for a group of children needs beyond the runtime: the same for wait_agent and spawn_agent's `wait`. */
export interface GroupWait {
  timeoutMs: number;
  /** The group; absent: every child working now or whose notice is pending. */
  targets?: readonly unknown[] | undefined;
  signal: AbortSignal | undefined;
  ctx: ExtensionContext | undefined;
  clock: Clock;
  onUpdate: ((update: ReturnType<typeof progressUpdate>) => void) | undefined;
}

/**
 * Waits until every member of the group has ended (or the time-out), and returns their notices;
 * the caller adds their delivery keys (withDeliveryKeys) to the result it gives pi.
 */
export async function waitForGroup(rt: TreeRuntime, wait: GroupWait) {
  // The group is fixed at the call: the children working now, and those whose notice is in the
  // mailbox once the inbox is collected. Taken before the collection too, so a child that ends
  // (or is interrupted) while the inbox is read is still one of the group.
  const group = waitGroup(rt, wait.targets);
  await rt.collectInbox();
  if (!wait.targets?.length) for (const member of waitGroup(rt, undefined)) group.add(member);
  const call: WaitCall = {
    rt,
    timeoutMs: wait.timeoutMs,
    signal: wait.signal,
    ctx: wait.ctx,
    group,
  };
  return waitForAnswer(call, wait.clock, wait.onUpdate);
}

export function waitAgentTool({ runtime, clock = systemClock }: ToolDeps): ToolDefinition<typeof parameters> {
  return {
    name: "wait_agent",
    label: "Wait for agents",
    description: [
      `Children's notices, ≤${LIMITS.noticesPerWait} per call (pending counts the rest):`,
      "pending ones at once, else the next; idle: true if none is working.",
      "user_message_pending: true (answer the user; notices stay).",
    ].join(" "),
    parameters,
    execute: async (_id, params, signal, onUpdate, ctx) => {
      const started = runtime();
      const rt = started instanceof Promise ? await started : started;
      if (params.target !== undefined) subtreeTarget(rt, params.target);
      const targets = givenTargets(params.targets);
      if (targets && params.all !== true) throw new Error("targets needs all: true");
      const timeoutMs = clampTimeout(params.timeout_ms);
      const answer =
        params.all === true
          ? await waitForGroup(rt, { timeoutMs, targets, signal, ctx, clock, onUpdate })
          : await waitForAnswer({ rt, timeoutMs, signal, ctx }, clock, onUpdate);
      // Their keys ride in the details (not shown to the model): once pi has written this tool
      // result to the session they are recorded as taken (ui/notice-hold.ts), and a restore
      // finds them there if the process died before (turns/delivery/deliveries.ts).
      return withDeliveryKeys(rt, answer);
    },
  };
}
