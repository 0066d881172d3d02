/**
 * pi-subagent-tree's pi extension: coordination tools for a tree of out-of-process child
 * agents. Wires the parts together; the logic lives in the modules beside it.
 *
 * pi loads an extension through jiti with its module cache off, so every module this file
 * imports statically is evaluated again in every child's pi, and most children never
 * delegate. So only the tools' definitions and the session's light hooks load here; the tree's
 * machinery (session.ts: the runtime, restore, spawns, turns, dialogs) is imported when first
 * needed — at session_start in a root, and in a child whose own children left something to
 * take back; in any other child at its first tool call. test/unit/extension/load-graph.test.ts
 * keeps the static graph small.
 */

import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { ENV } from "../contracts/env.js";
import { addUsage, emptyUsage, normalizeUsage, type Usage } from "../contracts/usage.js";
import { errorText } from "../lib/values.js";
import { identityFromEnv } from "./config.js";
import { sessionRoleCatalog } from "./roles/definition-dirs.js";
import { BUILTIN_CATALOG, definitionWarnings, describeRegistry } from "./roles/roles.js";
import type { RootParts, SessionParts, SessionState } from "./session.js";
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
import { childrenLeftTraces } from "./tree/child-traces.js";
import type { TreeRuntime } from "./turns/runtime.js";
import { watchNoticeHold } from "./ui/notice-hold.js";
import { plain } from "./ui/paint.js";
import { WAKE_MESSAGE_TYPE } from "./ui/wake.js";

type ToolMaker = (deps: ToolDeps) => { name: string };
type ToolDefinitionArg = Parameters<ExtensionAPI["registerTool"]>[0];

/**
 * What only the root uses: its tools' rendering, /agents, a durable exit, the cleaning of a
 * temporary tree, the person's view of the tree (SessionUi). Imported when the extension loads
 * in a root, never in a child: the terminal UI library these import would be evaluated a
 * second time in every child's pi.
 *
 * Every part loaded on first use that reaches pi's packages is imported here: pi loads this
 * entry through its jiti, which resolves pi's packages by the names pi gives them (an alias);
 * a module that Node loaded itself (jiti lets Node load those whose imports Node resolves)
 * would import with Node's resolver, which may not know those names.
 */
async function rootParts(): Promise<RootParts> {
  const [render, command, durable, clean, ui] = await Promise.all([
    import("./ui/tool-render.js"),
    import("./ui/agents-command.js"),
    import("./ui/durable-exit.js"),
    import("./ui/agents-clean.js"),
    import("./ui/session-ui.js"),
  ]);
  return { ...render, ...command, ...durable, ...clean, ...ui };
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

/** What only a root's UI offers: the wake message's look and /agents. */
function registerRootUi(pi: ExtensionAPI, root: RootParts, state: SessionState): void {
  pi.registerMessageRenderer(WAKE_MESSAGE_TYPE, root.wakeMessageRenderer);
  root.registerAgentsCommand(pi, {
    runtime: () => state.runtime,
    painter: () => state.session?.painter() ?? plain,
    refresh: () => state.session?.refresh(),
  });
}

/** The session that started: what its tree is started with, whenever that is. */
interface StartedSession {
  ctx: ExtensionContext;
  problem: (line: string) => void;
  ownRunUsage: Usage;
  /** The tree's start, once asked for (at most once per session). */
  tree?: Promise<TreeRuntime>;
}

export default async function piSubagentTree(pi: ExtensionAPI): Promise<void> {
  // A spare pi still waiting for its turn is nobody: it registers nothing and watches nothing
  // (pi loads this again at the hand-over, with the turn's agent in the environment).
  if (process.env[ENV.spareHandover]) return;
  const identity = identityFromEnv();
  const root = identity.isRoot ? await rootParts() : undefined;
  root?.watchDyingSignals();
  const state: SessionState = { interactive: false };
  const tracing = new TreeTracing(identity);
  let tracingProblem = (line: string) => console.error(line);
  tracing.watch(pi, () => tracingProblem);
  // A notice counts as read once pi's session holds the message that carries it.
  const hold = watchNoticeHold(pi, () => state.runtime);
  const parts: SessionParts = { pi, identity, root, tracing, hold, state };
  /** The session module, once imported (the tree's machinery). */
  let machinery: typeof import("./session.js") | undefined;
  let started: StartedSession | undefined;

  /** Starts this session's tree (once); rejects with a plain line when its machinery cannot load. */
  const startTree = (session: StartedSession): Promise<TreeRuntime> => {
    session.tree ??= (async () => {
      try {
        machinery ??= await import("./session.js");
      } catch (err) {
        throw new Error(`pi-subagent-tree could not load the agent tree: ${errorText(err)}`);
      }
      await machinery.startSession(parts, session);
      if (!state.runtime) throw new Error("the agent tree is not ready: the session has ended");
      return state.runtime;
    })();
    return session.tree;
  };

  const deps: ToolDeps = {
    pi,
    spawnPart: () => import("./spawn/spawn.js"),
    runtime: () => {
      if (state.runtime) return state.runtime;
      if (!started) throw new Error("the agent tree is not ready: the session has not started");
      return startTree(started);
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

  /** Ends the session's tree, once its start (if one is under way) is over. */
  const endSession = async (reason?: string) => {
    const ending = started;
    started = undefined;
    await ending?.tree?.catch(() => undefined);
    if (machinery) await machinery.endSession(parts, reason);
  };

  pi.on("session_start", async (_event, ctx) => {
    await endSession("restart");
    // A line for the user: pi's UI where there is one (interactive, RPC), else stderr.
    const problem = (line: string) => (ctx.hasUI ? ctx.ui.notify(line, "warning") : console.error(line));
    // Every extension has registered its tools by now, so definition files' tool names can be
    // checked; spawn_agent is registered again so agent_type lists the roles of this cwd.
    const roles = await sessionRoleCatalog(ctx.cwd, describeRegistry(pi.getAllTools())).catch((err: unknown) => {
      problem(`pi-subagent-tree could not read the agent definitions: ${errorText(err)}`);
      return BUILTIN_CATALOG;
    });
    register(spawnAgentTool(deps, roles));
    const warnings = definitionWarnings(roles);
    if (ctx.hasUI) for (const line of warnings) ctx.ui.notify(line, "warning");
    else if (identity.isRoot) for (const line of warnings) console.error(line);
    tracingProblem = problem;
    const session: StartedSession = { ctx, problem, ownRunUsage: emptyUsage() };
    started = session;
    // A root, and a child whose children are still running or recorded, take the tree now
    // (restore); any other child when a tool first needs it.
    if (identity.isRoot || childrenLeftTraces(identity.treeDir!, identity.self))
      await startTree(session).catch((err: unknown) => problem(errorText(err)));
  });

  // A child counts its own answers as they come: its budget checks must not wait for the wrapper.
  pi.on("message_end", (event) => {
    const { message } = event;
    if (identity.isRoot || message.role !== "assistant" || !started) return;
    addUsage(started.ownRunUsage, normalizeUsage(message.usage));
  });

  // After this, the extension holds no timer or handle, or pi would never exit.
  pi.on("session_shutdown", async (event) => {
    await tracing.flush();
    await endSession((event as { reason?: string }).reason);
  });
}
