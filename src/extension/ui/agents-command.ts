/**
 * `/agents`: the person's own handle on the tree, without asking (and paying) the model.
 * The tree as the widget draws it; pick an agent to read its status, model, usage, run
 * folder, live transcript and latest report, and to follow it up, message it (live while it
 * runs), interrupt or close it; `/agents stop` stops every running and queued turn; `/agents
 * clean` removes ended agents' worktrees (agents-clean.ts). The actions go through the runtime
 * methods the tools use, so the model learns of them from its mailbox as usual — a stop the
 * person ordered is told as theirs ("interrupted by the user"; the person reads "stopped by you"). Dialogs are
 * pi's (ui.select / ui.input / ui.confirm), which RPC clients get as extension UI requests.
 */
import path from "node:path";
import type { ExtensionAPI, ExtensionCommandContext } from "@mariozechner/pi-coding-agent";
import { RUN_FILES, TREE_FILES } from "../../contracts/layout.js";
import { LIMITS } from "../../contracts/tree.js";
import type { Clock } from "../../lib/clock.js";
import { readFileTail } from "../../lib/file-tail.js";
import { errorText } from "../../lib/values.js";
import { assertBudgetLeft } from "../progress/budget.js";
import type { AgentProgress } from "../progress/progress.js";
import { progressOf } from "../progress/progress.js";
import { resolveTarget } from "../tree/paths.js";
import { readReportPage } from "../turns/delivery/reports.js";
import { followupWaits } from "../turns/lifecycle.js";
import type { ChildState, TreeRuntime } from "../turns/runtime.js";
import { type AgentAction, type AgentFiles, agentActions, agentDetails } from "./agent-view.js";
import { agentsClean } from "./agents-clean.js";
import { activeCounts, someNames } from "./exit.js";
import type { Painter } from "./paint.js";
import { statusLine, treeLines } from "./widget.js";

export const AGENTS_COMMAND = "agents";
const STOP_ALL = "stop every running and queued turn";
const TRANSCRIPT_TAIL_BYTES = 8 * 1024;

export interface AgentsCommandDeps {
  /** The session's runtime, or undefined before session_start. */
  runtime(): TreeRuntime | undefined;
  painter(): Painter;
  /** Redraw the widget now (an action changed the tree). */
  refresh(): void;
  /** What the agents' elapsed times are read on; the system's clock when not given. */
  clock?: Clock;
}

async function agentFiles(rt: TreeRuntime, agent: AgentProgress): Promise<AgentFiles> {
  const agentDir = rt.tree.agentDir(agent.record.path);
  const latest = agent.record.runs.at(-1);
  const runDir = latest ? path.join(agentDir, TREE_FILES.runs, latest) : undefined;
  const page = await readReportPage(agentDir).catch(() => undefined);
  return {
    ...(runDir && { runDir }),
    ...(runDir && { transcriptTail: readFileTail(path.join(runDir, RUN_FILES.transcript), TRANSCRIPT_TAIL_BYTES) }),
    ...(page?.available && { report: { text: page.text, turn: page.turn_number, totalChars: page.total_chars } }),
  };
}

/** Stops every running and queued turn of this agent's children (and so of the whole tree below). */
export async function stopEveryTurn(rt: TreeRuntime): Promise<string> {
  const { running, queued } = rt.activeTurns();
  const states = [...running, ...queued];
  if (states.length === 0) return "no agent is running or queued";
  const counts = activeCounts({ running: running.map((s) => s.record), queued: queued.map((s) => s.record) });
  await Promise.all(states.map((state) => rt.interrupt(state, "user")));
  const after =
    states.length === 1
      ? "it is interrupted; follow it up to resume it"
      : "they are interrupted; follow one up to resume it";
  return `stopped ${counts} (${someNames(states.map((s) => s.record))}): ${after}`;
}

async function act(
  rt: TreeRuntime,
  state: ChildState,
  action: AgentAction,
  ctx: ExtensionCommandContext,
): Promise<string | undefined> {
  const name = state.record.path;
  switch (action) {
    case "interrupt": {
      const previous = await rt.interrupt(state, "user");
      return `${name}: ${previous} → ${state.record.status}`;
    }
    case "close": {
      const sure = await ctx.ui.confirm(
        `Close ${name}?`,
        "It and its whole subtree shut down for good: no follow-up afterwards.",
      );
      if (!sure) return undefined;
      const previous = await rt.close(state, "user");
      return `${name}: ${previous} → ${state.record.status}`;
    }
    case "follow up": {
      const title = followupWaits(state.phase)
        ? `Follow-up task for ${name} (it is working: this queues behind its turn; "message" reaches it now)`
        : `Follow-up task for ${name}`;
      const text = await ctx.ui.input(title, "what should it do next?");
      if (text === undefined || text.trim() === "") return undefined;
      const result = await rt.followup(state, text, () => assertBudgetLeft(progressOf(rt)));
      return `${name}: follow-up ${result.queuedBehindRunningTurn ? "queued behind its running turn" : `sent (${result.status})`}`;
    }
    case "message":
      return sendMessage(rt, state, ctx);
    default:
      return undefined;
  }
}

/** A live message, as send_message sends it: read before the child's next model request while it runs, else at its next turn. */
async function sendMessage(
  rt: TreeRuntime,
  state: ChildState,
  ctx: ExtensionCommandContext,
): Promise<string | undefined> {
  const name = state.record.path;
  const text = await ctx.ui.input(`Message to ${name}`, "it reads it while it works; no new turn starts");
  if (text === undefined || text.trim() === "") return undefined;
  if (text.length > LIMITS.maxMessageChars)
    throw new Error(`the message is ${text.length} characters; the limit is ${LIMITS.maxMessageChars}`);
  const delivery = await rt.queueMessage(state, text);
  return delivery.delivered === "live"
    ? `${name}: message sent; it reads it before its next model request`
    : `${name}: message queued for its next turn (it is ${delivery.status})`;
}

/** One agent's details and action menu; true when the person asked to go back to the list. */
async function agentMenu(
  rt: TreeRuntime,
  agent: AgentProgress,
  ctx: ExtensionCommandContext,
  p: Painter,
): Promise<boolean> {
  const state = rt.children.get(agent.record.path);
  const details = agentDetails(agent, await agentFiles(rt, agent), state !== undefined, p, rt.limits.turnTimeoutMs);
  const actions = agentActions(agent.record, state !== undefined);
  const choice = (await ctx.ui.select(details.join("\n"), actions)) as AgentAction | undefined;
  if (choice === undefined) return false;
  if (choice === "back" || !state) return choice === "back";
  try {
    const said = await act(rt, state, choice, ctx);
    if (said) ctx.ui.notify(said, "info");
  } catch (err) {
    ctx.ui.notify(`${agent.record.path}: ${errorText(err)}`, "error");
  }
  return false;
}

/** `/agents <name>`: straight to that agent (a canonical path or one relative to this agent); false when there is none. */
async function showNamedAgent(
  rt: TreeRuntime,
  word: string,
  agents: AgentProgress[],
  ctx: ExtensionCommandContext,
  p: Painter,
): Promise<boolean> {
  const wanted = resolveTarget(rt.self, word);
  const agent = agents.find((a) => a.record.path === wanted);
  if (!agent) {
    ctx.ui.notify(`no agent ${word} in this tree`, "error");
    return false;
  }
  await agentMenu(rt, agent, ctx, p);
  return true;
}

/** The tree to pick an agent from (or to stop them all); true when the person came back to the list. */
async function pickFromTree(
  rt: TreeRuntime,
  agents: AgentProgress[],
  ctx: ExtensionCommandContext,
  p: Painter,
): Promise<boolean> {
  const lines = treeLines(rt.self, agents, p);
  const busy = rt.activeTurns();
  const options = busy.running.length + busy.queued.length > 0 ? [...lines, STOP_ALL] : lines;
  const title = `${statusLine(agents, undefined, p) ?? "agents"} — pick one to see it and act on it`;
  const picked = await ctx.ui.select(title, options);
  if (picked === undefined) return false;
  if (picked === STOP_ALL) {
    ctx.ui.notify(await stopEveryTurn(rt), "warning");
    return false;
  }
  const agent = agents[lines.indexOf(picked)];
  return agent !== undefined && (await agentMenu(rt, agent, ctx, p));
}

/** What `/agents [stop | name]` does; true when the widget should be redrawn (the person may have acted). */
async function runAgentsCommand(
  rt: TreeRuntime,
  word: string,
  ctx: ExtensionCommandContext,
  deps: AgentsCommandDeps,
): Promise<boolean> {
  if (word === "stop") {
    ctx.ui.notify(await stopEveryTurn(rt), "warning");
    return true;
  }
  const [first, ...rest] = word.split(/\s+/);
  if (first === "clean") {
    await agentsClean(rt, rest, ctx);
    return true;
  }
  for (;;) {
    const agents = await progressOf(rt).snapshot(rt.self, deps.clock);
    if (agents.length === 0) {
      ctx.ui.notify("no child agents yet: ask the model to spawn some", "info");
      return false;
    }
    const p = deps.painter();
    if (word !== "") return showNamedAgent(rt, word, agents, ctx, p);
    if (!(await pickFromTree(rt, agents, ctx, p))) return true;
  }
}

export function registerAgentsCommand(pi: ExtensionAPI, deps: AgentsCommandDeps): void {
  pi.registerCommand(AGENTS_COMMAND, {
    description:
      "pi-subagent-tree: your child agents — inspect one, follow up, message, interrupt or close it; /agents stop stops them all; /agents clean removes ended agents' worktrees",
    getArgumentCompletions: (prefix: string) => {
      const words = ["stop", "clean"].filter((word) => word.startsWith(prefix));
      return words.length > 0 ? words.map((value) => ({ value, label: value })) : null;
    },
    handler: async (args, ctx) => {
      const rt = deps.runtime();
      if (!rt) return ctx.ui.notify("the agent tree is not ready: the session has not started", "error");
      try {
        if (await runAgentsCommand(rt, args.trim(), ctx, deps)) deps.refresh();
      } catch (err) {
        ctx.ui.notify(`/agents: ${errorText(err)}`, "error");
      }
    },
  });
}
