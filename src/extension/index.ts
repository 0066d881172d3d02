/**
 * pi-subagent-tree's pi extension: coordination tools for a tree of out-of-process child
 * agents. Wires the parts together; the logic lives in the modules beside it.
 */

import fs from "node:fs";
import path from "node:path";
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { rootTreeDir, treeIsTemporary } from "../contracts/layout.js";
import { errorText } from "../lib/values.js";
import { identityFromEnv, treeLimits } from "./config.js";
import { budgetLeftEnv } from "./progress/budget.js";
import { progressOf } from "./progress/progress.js";
import { loadRoleCatalog } from "./roles/definition-files.js";
import { definitionWarnings, describeRegistry } from "./roles/roles.js";
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
import { agentEntry, ENTRY_TYPE } from "./tree/session-entries.js";
import { TreeDir } from "./tree/tree-dir.js";
import { restore } from "./turns/restore.js";
import { TreeRuntime } from "./turns/runtime.js";
import { cleanTree, treeCleanPlan } from "./ui/agents-clean.js";
import { registerAgentsCommand } from "./ui/agents-command.js";
import { plain } from "./ui/paint.js";
import { SessionUi } from "./ui/session-ui.js";
import { wakeMessageRenderer, withRenderers } from "./ui/tool-render.js";
import { WAKE_MESSAGE_TYPE } from "./ui/wake.js";

type ToolMaker = (deps: ToolDeps) => { name: string };

/**
 * A `--no-session` root's tree (in the temp folder, never resumable) goes when the root ends:
 * its worktrees and bare branches first, as `clean` would (a branch with a child's commits
 * stays in the repository), then the folder, and the temp base when nothing else is in it.
 * Only once no turn runs: every turn is stopped at shutdown, and one still stopping keeps it.
 */
async function removeTemporaryTree(rt: TreeRuntime, problem: (line: string) => void): Promise<void> {
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

export default function piSubagentTree(pi: ExtensionAPI): void {
  const identity = identityFromEnv();
  let runtime: TreeRuntime | undefined;
  let session: SessionUi | undefined;
  /** Set while the root's tree is a temporary one (see removeTemporaryTree): how to report its removal's problems. */
  let temporary: ((line: string) => void) | undefined;

  const deps: ToolDeps = {
    pi,
    runtime: () => {
      if (!runtime) throw new Error("the agent tree is not ready: the session has not started");
      return runtime;
    },
  };
  const register = (tool: { name: string }) => pi.registerTool(withRenderers(tool) as unknown as ToolDefinitionArg);
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
  pi.registerMessageRenderer(WAKE_MESSAGE_TYPE, wakeMessageRenderer);
  registerAgentsCommand(pi, {
    runtime: () => runtime,
    painter: () => session?.painter() ?? plain,
    refresh: () => session?.refresh(),
  });

  const stop = async (reason?: string): Promise<void> => {
    const ending = runtime;
    const ui = session;
    const removal = temporary;
    runtime = undefined;
    session = undefined;
    temporary = undefined;
    const stopped = await ui?.beforeShutdown();
    if (ending) await ending.shutdown();
    ui?.afterShutdown(stopped, reason);
    if (ending && identity.isRoot)
      for (const record of await ending.tree.subtree(ending.self)) pi.appendEntry(ENTRY_TYPE, agentEntry(record));
    if (ending && removal) await removeTemporaryTree(ending, removal);
  };

  pi.on("session_start", async (_event, ctx) => {
    await stop("restart");
    // Every extension has registered its tools by now, so definition files' tool names can be
    // checked; spawn_agent is registered again so agent_type lists the roles of this cwd.
    const roles = loadRoleCatalog(ctx.cwd, describeRegistry(pi.getAllTools()));
    register(spawnAgentTool(deps, roles));
    const warnings = definitionWarnings(roles);
    if (ctx.hasUI) for (const line of warnings) ctx.ui.notify(line, "warning");
    else if (identity.isRoot) for (const line of warnings) console.error(line);
    const sessionManager = ctx.sessionManager;
    const sessionFile = sessionManager.getSessionFile();
    const treeDir = identity.treeDir ?? rootTreeDir(sessionManager.getSessionId(), sessionFile);
    const tree = new TreeDir(treeDir);
    tree.belongsTo(sessionFile ?? sessionManager.getSessionId());
    // A line for the user: pi's UI where there is one (interactive, RPC), else stderr.
    const problem = (line: string) => (ctx.hasUI ? ctx.ui.notify(line, "warning") : console.error(line));
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
    if (identity.isRoot && treeIsTemporary(sessionFile)) temporary = (line) => console.error(line);
    const rt = new TreeRuntime(identity, tree, treeLimits(), ctx.cwd, {
      hooks: {
        problem,
        recorded: (record) => {
          if (identity.isRoot) pi.appendEntry(ENTRY_TYPE, agentEntry(record));
        },
        noticed: (notice) => session?.noticed(notice),
        // Each turn is told what is left of the tree's budget: its wrapper wraps it up there.
        turnEnv: () => budgetLeftEnv(progressOf(rt)),
      },
    });
    // Notices a restore finds (turns that ended while the root was away) wait for wait_agent:
    // the session's UI does not exist yet, so they neither show nor wake.
    await restore(rt, sessionManager.getEntries());
    runtime = rt;
    if (ctx.hasUI) {
      session = new SessionUi(pi, ctx, rt, sessionFile);
      session.start();
    }
  });

  // After this, the extension holds no timer or handle, or pi would never exit.
  pi.on("session_shutdown", async (event) => {
    await stop((event as { reason?: string }).reason);
  });
}
