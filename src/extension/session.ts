/**
 * The agent tree of one pi session: its runtime started (restored from the tree directory,
 * its children's dialogs, a root's spare pi, ownership, spend question and UI) and ended.
 * index.ts imports this module when the tree is first needed — at session_start in a root and
 * in a child whose own children left something to take back, else at a child's first tool
 * call — because pi evaluates every module an extension imports at load again in each child's
 * pi, and most children never delegate.
 */

import type { ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { rootTreeDir, treeIsTemporary } from "../contracts/layout.js";
import type { Usage } from "../contracts/usage.js";
import { ProcessHelper } from "../lib/process-helper.js";
import { useProcessLauncher } from "../lib/process-launcher.js";
import { errorText } from "../lib/values.js";
import { type Identity, treeLimits } from "./config.js";
import { budgetLeftEnv } from "./progress/budget.js";
import { periodBudgetEnv, periodBudgetSource } from "./progress/period-budget.js";
import { progressOf } from "./progress/progress.js";
import { startSpendConfirmation } from "./progress/spend-confirm.js";
import { readSubagentSettings } from "./settings.js";
import type { TreeTracing } from "./tracing.js";
import { agentEntry, ENTRY_TYPE } from "./tree/session-entries.js";
import { TreeDir } from "./tree/tree-dir.js";
import { restore } from "./turns/restore.js";
import { TreeRuntime } from "./turns/runtime.js";
import type { TurnOperations } from "./turns/wrapper/launcher.js";
import { SpareKeeper } from "./turns/wrapper/spare.js";
import { launchSpare, spareTurns, spareWanted } from "./turns/wrapper/spare-launch.js";
import { setUpChildDialogs } from "./ui/child-dialogs.js";
import { type ActiveAgents, countActive, interactiveMode, type OnExit, onExitChoice, sayAtExit } from "./ui/exit.js";
import type { NoticeHold } from "./ui/notice-hold.js";
import type { SessionUi } from "./ui/session-ui.js";

/**
 * What only the root uses (index.ts imports it in a root): its tools' rendering, /agents, a
 * durable exit, the cleaning of a temporary tree, the person's view of the tree.
 */
export type RootParts = typeof import("./ui/tool-render.js") &
  typeof import("./ui/agents-command.js") &
  typeof import("./ui/durable-exit.js") &
  typeof import("./ui/agents-clean.js") &
  typeof import("./ui/session-ui.js");

/** What one pi process holds for the session it runs (replaced at each session_start). */
export interface SessionState {
  runtime?: TreeRuntime | undefined;
  session?: SessionUi | undefined;
  /** Set while the root's tree is a temporary one (see removeTemporaryTree): how to report its removal's problems. */
  temporary?: ((line: string) => void) | undefined;
  /** This process's hold on its tree (owner-lease.ts); undefined when it holds none. */
  ownership?: { release(): Promise<void> } | undefined;
  sessionFile?: string | undefined;
  interactive: boolean;
  /** The `onExit` setting (settings.json `subagents.onExit`), when set. */
  onExit?: OnExit | undefined;
  /** Ends the root's question before the tree spends more (settings `confirm_every_usd`). */
  endSpendConfirmation?: (() => void) | undefined;
  /** The root's spare pi (turns/wrapper/spare.ts), ended with the session. */
  spare?: SpareKeeper<ChildProcess> | undefined;
}

/** What the session's tree is started with: the extension's parts that live as long as pi does. */
export interface SessionParts {
  pi: ExtensionAPI;
  identity: Identity;
  root: RootParts | undefined;
  tracing: TreeTracing;
  hold: NoticeHold;
  state: SessionState;
}

/** What the session that starts the tree gave: its context, its problem line, a child's own usage so far. */
export interface SessionStart {
  ctx: ExtensionContext;
  problem: (line: string) => void;
  ownRunUsage: Usage;
}

/**
 * A `--no-session` root's tree (in the temp folder, never resumable) goes when the root ends:
 * its worktrees and bare branches first, as `clean` would (a branch with a child's commits
 * stays in the repository), then the folder, and the temp base when nothing else is in it.
 * Only once no turn runs: every turn is stopped at shutdown, and one still stopping keeps it.
 */
async function removeTemporaryTree(
  { treeCleanPlan, cleanTree }: RootParts,
  rt: TreeRuntime,
  problem: (line: string) => void,
): Promise<void> {
  const root = rt.tree.root;
  if (rt.hasActiveTurns() || !rt.tree.onDisk()) return;
  try {
    const { plan } = await treeCleanPlan(rt);
    for (const result of await cleanTree(plan))
      if (result.error !== undefined)
        problem(`pi-subagent-tree: could not clean ${result.step.agent}: ${result.error}`);
    await fs.promises.rm(root, { recursive: true, force: true });
    await fs.promises.rmdir(path.dirname(root)).catch(() => undefined); // not empty: another session's tree
  } catch (err) {
    problem(`pi-subagent-tree: the temporary tree directory ${root} could not be removed: ${errorText(err)}`);
  }
}

/**
 * What the root's deliberate exit does with running turns: a child's pi always stops
 * its children (it ends with each of its turns); a root that is dying (SIGTERM, SIGHUP: pi
 * still runs session_shutdown) leaves them; else onExit. A temporary tree (`--no-session`)
 * cannot be re-attached: its turns are stopped.
 */
function exitHow(root: RootParts | undefined, state: SessionState): OnExit {
  if (!root || treeIsTemporary(state.sessionFile)) return "stop";
  if (root.dyingSignal() !== undefined) return "detach";
  return onExitChoice(state.interactive, state.onExit);
}

/** session_shutdown (and the start of the next session): stop or leave the turns, say so, give the tree back. */
export async function endSession(parts: SessionParts, reason?: string): Promise<void> {
  // The spare ends beside the rest, and the session's end waits for it: nothing of the tree
  // outlives the root's exit.
  const spareGone = parts.state.spare?.close();
  parts.state.spare = undefined;
  try {
    await endTurns(parts, reason);
  } finally {
    await spareGone;
  }
}

async function endTurns({ pi, root, state }: SessionParts, reason?: string): Promise<void> {
  const { runtime: ending, session: ui, temporary: removal, ownership: lease } = state;
  state.runtime = undefined;
  state.session = undefined;
  state.temporary = undefined;
  state.ownership = undefined;
  state.endSpendConfirmation?.();
  state.endSpendConfirmation = undefined;
  ending?.dialogDesk?.stop();
  if (!ending) return void (await lease?.release());
  const how = ending.readOnly !== undefined ? "detach" : exitHow(root, state);
  // The dying signal may have come after the session started: the last frame says what happens now.
  if (ui) ui.exitHow = how;
  await ui?.beforeShutdown();
  // What this process knows of its turns, not a record on disk that a failed write left stale.
  const active = root ? turnsUnderWay(ending) : undefined;
  await ending.shutdown(how);
  const lines =
    root && active && countActive(active) > 0 && ending.readOnly === undefined
      ? root.exitMessage(ending, active, how, state.sessionFile)
      : undefined;
  if (ui) ui.afterShutdown(lines, reason);
  else if (lines) sayAtExit(lines);
  if (root) for (const record of await ending.tree.subtree(ending.self)) pi.appendEntry(ENTRY_TYPE, agentEntry(record));
  if (root && removal && !ending.isDetached) await removeTemporaryTree(root, ending, removal);
  await lease?.release();
}

/**
 * What each turn is told of spending: what is left of the tree's budget and where the turns
 * beside it post their use (its wrapper wraps it up once the tree has spent that much), the
 * tree's spend gate, where the person's spending ledger is and their period budgets.
 */
async function spendEnv(rt: TreeRuntime): Promise<Record<string, string>> {
  return {
    ...periodBudgetEnv(periodBudgetSource()),
    ...(await budgetLeftEnv(progressOf(rt), process.env, rt.tree.root)),
  };
}

/** The root's direct children with a turn running or queued, as this process holds them. */
function turnsUnderWay(rt: TreeRuntime): ActiveAgents {
  const { running, queued } = rt.activeTurns();
  return { running: running.map((s) => s.record), queued: queued.map((s) => s.record) };
}

/** The tree directory of this session, prepared when it exists (a new one waits for the first spawn). */
async function sessionTree(identity: Identity, ctx: ExtensionContext, problem: (line: string) => void) {
  const sessionManager = ctx.sessionManager;
  const sessionFile = sessionManager.getSessionFile();
  const treeDir = identity.treeDir ?? rootTreeDir(sessionManager.getSessionId(), sessionFile);
  const tree = new TreeDir(treeDir);
  tree.belongsTo(sessionFile ?? sessionManager.getSessionId());
  // A tree made earlier (this session resumed, or a child's, made by its parent) is prepared
  // now; a new one waits for the first spawn, so a session that never delegates leaves none.
  // The session starts whatever the tree directory holds; the tools then say what fails.
  if (!identity.isRoot || tree.onDisk()) {
    try {
      await tree.ensure();
    } catch (err) {
      problem(`pi-subagent-tree: the tree directory ${treeDir} cannot be prepared: ${errorText(err)}`);
    }
  }
  return { tree, sessionFile };
}

/**
 * One owner per tree: the root takes its tree at the start, or — a new tree — once its
 * first record is written; a root whose tree another live pi drives only reads it.
 */
async function claimTree(
  { ownTree }: RootParts,
  state: SessionState,
  rt: TreeRuntime,
  problem: (line: string) => void,
): Promise<void> {
  const owner = await ownTree(rt.tree.root, problem);
  if (owner?.held) state.ownership = owner;
  else if (owner) {
    rt.readOnly = owner.owner.pid;
    problem(
      `pi-subagent-tree: pid ${owner.owner.pid} drives the agent tree of this session; this pi only reads it (list_agents, /agents, reports)`,
    );
  }
}

/** git and the setup command start from a small helper, not from pi's large process (lib/process-helper.ts). */
let processHelperInstalled = false;
function startProgramsFromHelper(): void {
  if (processHelperInstalled) return;
  processHelperInstalled = true;
  useProcessLauncher(new ProcessHelper().launch);
}

/**
 * The root's settings at its session start. The project's settings may not choose what
 * outlives a session (the reader says so once). The root keeps a spare pi while its tree is
 * active: the next child skips pi's start-up.
 */
function readRootSettings(state: SessionState, cwd: string, problem: (line: string) => void): void {
  const settings = readSubagentSettings({ cwd }, problem).settings;
  state.onExit = settings.onExit;
  state.spare = spareWanted(settings.spare) ? new SpareKeeper(launchSpare) : undefined;
}

/** The runtime's turns through the spare, when the root keeps one. */
function spareOptions(state: SessionState): { turns?: TurnOperations } {
  return state.spare ? { turns: spareTurns(state.spare) } : {};
}

/**
 * Starts the session's tree: the runtime over the tree directory, its children restored (a
 * running turn re-attached, an ended one's notice given once), their dialogs answered here;
 * in a root also its settings, its hold on the tree, its spend question and, with a UI, the
 * person's view of the tree. Sets `state.runtime` once the tree is ready.
 */
export async function startSession(parts: SessionParts, { ctx, problem, ownRunUsage }: SessionStart): Promise<void> {
  const { pi, identity, root, tracing, hold, state } = parts;
  startProgramsFromHelper();
  const { tree, sessionFile } = await sessionTree(identity, ctx, problem);
  state.sessionFile = sessionFile;
  state.interactive = interactiveMode(ctx.hasUI);
  if (identity.isRoot) readRootSettings(state, ctx.cwd, problem);
  if (identity.isRoot && treeIsTemporary(sessionFile)) state.temporary = (line) => console.error(line);
  let claimed = root !== undefined && tree.onDisk();
  const fault = root?.killAtStep();
  let dialogEnv: Record<string, string> = {};
  const rt: TreeRuntime = new TreeRuntime(identity, tree, treeLimits(), ctx.cwd, {
    ...(fault && { fault }),
    ...spareOptions(state),
    ownRunUsage,
    hooks: {
      problem,
      recorded: (record) => {
        if (!root) return;
        pi.appendEntry(ENTRY_TYPE, agentEntry(record));
        if (!claimed && state.runtime === rt) void claimTree(root, state, rt, problem);
        claimed = true;
      },
      noticed: (notice) => state.session?.noticed(notice),
      turnEnv: async () => ({ ...dialogEnv, ...tracing.turnEnv(), ...(await spendEnv(rt)) }),
    },
  });
  if (root && claimed) await claimTree(root, state, rt, problem);
  if (identity.isRoot) state.endSpendConfirmation = startSpendConfirmation(rt.tree.root, ctx, progressOf(rt));
  dialogEnv = setUpChildDialogs(rt, ctx, identity, () => state.session?.refresh()).env;
  await restore(rt, ctx.sessionManager.getEntries(), { readOnly: rt.readOnly !== undefined });
  state.runtime = rt;
  // The person's view of the tree: a root's only. A child's UI (pi's RPC mode) is its wrapper,
  // which passes its dialogs up; nobody reads its notices' lines or its widget there.
  if (root && ctx.hasUI) {
    state.session = new root.SessionUi(pi, ctx, rt, sessionFile, hold);
    state.session.exitHow = exitHow(root, state);
    state.session.start();
    state.session.countDialogs(() => rt.dialogDesk?.waitingForPerson ?? 0);
    // Turns that ended while no root was there (restore): shown, and they wake an idle root.
    state.session.offerRestored();
  }
}
