/**
 * pi-subagent-tree's pi extension: coordination tools for a tree of out-of-process child
 * agents. Wires the parts together; the logic lives in the modules beside it.
 */

import type { ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { ENV } from "../contracts/env.js";
import { rootTreeDir, treeIsTemporary } from "../contracts/layout.js";
import { addUsage, normalizeUsage } from "../contracts/usage.js";
import { ProcessHelper } from "../lib/process-helper.js";
import { useProcessLauncher } from "../lib/process-launcher.js";
import { errorText } from "../lib/values.js";
import { type Identity, identityFromEnv, treeLimits } from "./config.js";
import { budgetLeftEnv } from "./progress/budget.js";
import { periodBudgetEnv, periodBudgetSource } from "./progress/period-budget.js";
import { progressOf } from "./progress/progress.js";
import { startSpendConfirmation } from "./progress/spend-confirm.js";
import { loadRoleCatalog } from "./roles/definition-files.js";
import { definitionWarnings, describeRegistry } from "./roles/roles.js";
import { readSubagentSettings } from "./settings.js";
import { closeAgentTool } from "./tools/close-agent.js";
import type { ToolDeps } from "./tools/common.js";
import { followupTaskTool } from "./tools/followup-task.js";
import { getAgentReportTool } from "./tools/get-agent-report.js";
import { interruptAgentTool } from "./tools/interrupt-agent.js";
import { listAgentsTool } from "./tools/list-agents.js";
import { listModelsTool } from "./tools/list-models.js";
import { sendMessageTool } from "./tools/send-message.js";
import { spawnAgentTool } from "./tools/spawn-agent.js";
import { waitAgentTool } from "./tools/wait-agent.js";
import { TreeTracing } from "./tracing.js";
import { agentEntry, ENTRY_TYPE } from "./tree/session-entries.js";
import { TreeDir } from "./tree/tree-dir.js";
import { restore } from "./turns/restore.js";
import { TreeRuntime } from "./turns/runtime.js";
import type { TurnOperations } from "./turns/wrapper/launcher.js";
import { SpareKeeper } from "./turns/wrapper/spare.js";
import { launchSpare, spareTurns, spareWanted } from "./turns/wrapper/spare-launch.js";
import { setUpChildDialogs } from "./ui/child-dialogs.js";
import { type ActiveAgents, countActive, interactiveMode, type OnExit, onExitChoice, sayAtExit } from "./ui/exit.js";
import { watchNoticeHold } from "./ui/notice-hold.js";
import { plain } from "./ui/paint.js";
import type { SessionUi } from "./ui/session-ui.js";
import { WAKE_MESSAGE_TYPE } from "./ui/wake.js";

type ToolMaker = (deps: ToolDeps) => { name: string };

/**
 * What only the root uses: its tools' rendering, /agents, a durable exit, the cleaning of a
 * temporary tree. Imported when the extension loads in a root, never in a child: pi loads an
 * extension through jiti with its module cache off, so the terminal UI library these import
 * would be evaluated a second time in every child's pi, most of which never delegate.
 */
async function rootParts() {
  const [render, command, durable, clean] = await Promise.all([
    import("./ui/tool-render.js"),
    import("./ui/agents-command.js"),
    import("./ui/durable-exit.js"),
    import("./ui/agents-clean.js"),
  ]);
  return { ...render, ...command, ...durable, ...clean };
}
type RootParts = Awaited<ReturnType<typeof rootParts>>;

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
type ToolDefinitionArg = Parameters<ExtensionAPI["registerTool"]>[0];

/** What one pi process holds for the session it runs (replaced at each session_start). */
interface SessionState {
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
async function endSession(
  pi: ExtensionAPI,
  root: RootParts | undefined,
  state: SessionState,
  reason?: string,
): Promise<void> {
  const { runtime: ending, session: ui, temporary: removal, ownership: lease } = state;
  state.spare?.close();
  state.spare = undefined;
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
 * Registers a tool, traced; in a root also drawn and refused while another pi drives the tree.
 * A child's pi never draws its tools (no terminal) and never reads a tree another pi drives.
 */
function toolRegistrar(pi: ExtensionAPI, root: RootParts | undefined, state: SessionState) {
  return (tool: { name: string }) => {
    const traced = TreeTracing.inToolCall(tool);
    pi.registerTool(
      (root ? root.withRenderers(root.ownerOnly(traced, () => state.runtime)) : traced) as unknown as ToolDefinitionArg,
    );
  };
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

/** What only a root's UI offers: the wake message's look and /agents. */
function registerRootUi(pi: ExtensionAPI, root: RootParts, state: SessionState): void {
  pi.registerMessageRenderer(WAKE_MESSAGE_TYPE, root.wakeMessageRenderer);
  root.registerAgentsCommand(pi, {
    runtime: () => state.runtime,
    painter: () => state.session?.painter() ?? plain,
    refresh: () => state.session?.refresh(),
  });
}

export default async function piSubagentTree(pi: ExtensionAPI): Promise<void> {
  // A spare pi still waiting for its turn is nobody: it registers nothing and watches nothing
  // (pi loads this again at the hand-over, with the turn's agent in the environment).
  if (process.env[ENV.spareHandover]) return;
  startProgramsFromHelper();
  const identity = identityFromEnv();
  const root = identity.isRoot ? await rootParts() : undefined;
  root?.watchDyingSignals();
  const state: SessionState = { interactive: false };
  const tracing = new TreeTracing(identity);
  let tracingProblem = (line: string) => console.error(line);
  tracing.watch(pi, () => tracingProblem);

  const deps: ToolDeps = {
    pi,
    runtime: () => {
      if (!state.runtime) throw new Error("the agent tree is not ready: the session has not started");
      return state.runtime;
    },
  };
  const register = toolRegistrar(pi, root, state);
  const makers: ToolMaker[] = [
    listModelsTool,
    spawnAgentTool,
    waitAgentTool,
    listAgentsTool,
    sendMessageTool,
    followupTaskTool,
    interruptAgentTool,
    closeAgentTool,
    getAgentReportTool,
  ];
  for (const make of makers) register(make(deps));
  if (root) registerRootUi(pi, root, state);

  // A notice counts as read once pi's session holds the message that carries it.
  const hold = watchNoticeHold(pi, () => state.runtime);

  pi.on("session_start", async (_event, ctx) => {
    await endSession(pi, root, state, "restart");
    // Every extension has registered its tools by now, so definition files' tool names can be
    // checked; spawn_agent is registered again so agent_type lists the roles of this cwd.
    const roles = loadRoleCatalog(ctx.cwd, describeRegistry(pi.getAllTools()));
    register(spawnAgentTool(deps, roles));
    const warnings = definitionWarnings(roles);
    if (ctx.hasUI) for (const line of warnings) ctx.ui.notify(line, "warning");
    else if (identity.isRoot) for (const line of warnings) console.error(line);
    // A line for the user: pi's UI where there is one (interactive, RPC), else stderr.
    const problem = (line: string) => (ctx.hasUI ? ctx.ui.notify(line, "warning") : console.error(line));
    tracingProblem = problem;
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
    if (ctx.hasUI) {
      const { SessionUi } = await import("./ui/session-ui.js");
      state.session = new SessionUi(pi, ctx, rt, sessionFile, hold);
      state.session.exitHow = exitHow(root, state);
      state.session.start();
      state.session.countDialogs(() => rt.dialogDesk?.waitingForPerson ?? 0);
      // Turns that ended while no root was there (restore): shown, and they wake an idle root.
      state.session.offerRestored();
    }
  });

  // A child counts its own answers as they come: its budget checks must not wait for the wrapper.
  pi.on("message_end", (event) => {
    const { message } = event;
    if (identity.isRoot || message.role !== "assistant" || !state.runtime) return;
    addUsage(state.runtime.ownRunUsage, normalizeUsage(message.usage));
  });

  // After this, the extension holds no timer or handle, or pi would never exit.
  pi.on("session_shutdown", async (event) => {
    await tracing.flush();
    await endSession(pi, root, state, (event as { reason?: string }).reason);
  });
}
