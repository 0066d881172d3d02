/**
 * The root's side of durable children that index.ts wires: telling a dying root
 * (SIGTERM, SIGHUP — pi still runs session_shutdown then) from a deliberate exit, the exit
 * lines for either choice, one owner per tree, and the tools a reading-only root refuses.
 */

import { ENV } from "../../contracts/env.js";
import { treeIsTemporary } from "../../contracts/layout.js";
import { type Ownership, takeOwnership } from "../../lib/owner-lease.js";
import { errorText } from "../../lib/values.js";
import { budgetFromEnv } from "../progress/budget.js";
import type { DeliveryStep } from "../turns/deliveries.js";
import type { TreeRuntime } from "../turns/runtime.js";
import { type ActiveAgents, detachLines, exitLines, type OnExit } from "./exit.js";

const DYING_SIGNALS = ["SIGTERM", "SIGHUP"] as const;
let received: string | undefined;
let watching = false;

/**
 * Notes SIGTERM and SIGHUP to this process, so session_shutdown knows the root is dying, not
 * leaving: its turns go on whatever onExit says. The handlers change nothing else: where
 * nothing else handles the signal (pi always does), the signal is raised again as if unheard.
 */
export function watchDyingSignals(): void {
  if (watching) return;
  watching = true;
  for (const signal of DYING_SIGNALS) {
    const handler = () => {
      received = signal;
      if (process.listenerCount(signal) === 1) {
        process.off(signal, handler);
        process.kill(process.pid, signal);
      }
    };
    process.on(signal, handler);
  }
}

/** The signal that is ending this process, if one is. */
export function dyingSignal(): string | undefined {
  return received;
}

/** What the person reads as the root leaves with children working (exit.ts). */
export function exitMessage(
  rt: TreeRuntime,
  active: ActiveAgents,
  how: OnExit,
  sessionFile: string | undefined,
): string[] {
  const budget = budgetFromEnv();
  const budgetText = [
    budget.tokens !== undefined && `${budget.tokens} tokens`,
    budget.cost !== undefined && `$${budget.cost}`,
  ]
    .filter(Boolean)
    .join(", ");
  const hint = {
    sessionFile,
    treeDir: rt.tree.root,
    temporary: rt.identity.isRoot && treeIsTemporary(sessionFile),
    turnLimitMs: rt.limits.turnTimeoutMs,
    ...(budgetText && { budget: budgetText }),
  };
  return how === "detach" ? detachLines(active, hint) : exitLines(active, hint);
}

/**
 * Takes the tree at the root's start (owner-lease.ts). A tree directory whose lease cannot be
 * written at all is driven as before, and said once.
 */
export async function ownTree(treeDir: string, problem: (line: string) => void): Promise<Ownership | undefined> {
  try {
    return await takeOwnership(treeDir, { report: (line) => problem(`pi-subagent-tree: ${line}`) });
  } catch (err) {
    problem(`pi-subagent-tree: could not take the tree's owner lease: ${errorText(err)}`);
    return undefined;
  }
}

/** The tools that start, stop, message or wait on turns: a root that only reads the tree refuses them. */
const ACTING_TOOLS: ReadonlySet<string> = new Set([
  "spawn_agent",
  "wait_agent",
  "send_message",
  "followup_task",
  "interrupt_agent",
  "close_agent",
]);

type Tool = { name: string; execute?: (...args: never[]) => unknown };

/** `tool`, refusing to act while another live process drives the tree (`runtime().readOnly`). */
export function ownerOnly<T extends Tool>(tool: T, runtime: () => TreeRuntime | undefined): T {
  if (!ACTING_TOOLS.has(tool.name) || typeof tool.execute !== "function") return tool;
  const execute = tool.execute as (...args: unknown[]) => unknown;
  return {
    ...tool,
    execute: (...args: unknown[]) => {
      const owner = runtime()?.readOnly;
      if (owner !== undefined)
        throw new Error(
          `pid ${owner} drives this agent tree; this pi only reads it (list_agents, get_agent_report, /agents)`,
        );
      return execute(...args);
    },
  };
}

const DELIVERY_STEPS: ReadonlySet<string> = new Set(["end_recorded", "given", "pushed", "taking", "taken"]);

/**
 * Testing only (PI_SUBAGENTS_TEST_KILL_AT): the fault hook that SIGKILLs this process at one
 * step of a notice's delivery; undefined when the variable is not set to a step.
 */
export function killAtStep(env: NodeJS.ProcessEnv = process.env): ((step: DeliveryStep) => void) | undefined {
  const at = env[ENV.faultAt];
  if (!at || !DELIVERY_STEPS.has(at)) return undefined;
  return (step) => {
    if (step === at) process.kill(process.pid, "SIGKILL");
  };
}
