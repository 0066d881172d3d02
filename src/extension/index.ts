/**
 * pi-subagent-tree's pi extension: coordination tools for a tree of out-of-process child
 * agents. Wires the parts together; the logic lives in the modules beside it.
 */
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { rootTreeDir } from "../contracts/layout.js";
import { errorText } from "../lib/values.js";
import { identityFromEnv, treeLimits } from "./config.js";
import { budgetFromEnv } from "./progress/budget.js";
import { progressOf } from "./progress/progress.js";
import { loadRoleCatalog } from "./roles/agent-definitions.js";
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
import { agentEntry, ENTRY_TYPE, restore } from "./tree/persistence.js";
import { TreeDir } from "./tree/tree-dir.js";
import { describeNotice } from "./turns/notices.js";
import { TreeRuntime } from "./turns/runtime.js";
import { TreeDisplay } from "./ui/widget.js";

/** How often an interactive root looks for messages its children sent while it is idle. */
const IDLE_INBOX_POLL_MS = 1000;
/** How often the status line and widget of an interactive session are redrawn. */
const DISPLAY_REFRESH_MS = 1000;

export default function piSubagentTree(pi: ExtensionAPI): void {
  const identity = identityFromEnv();
  let runtime: TreeRuntime | undefined;
  let uiContext: ExtensionContext | undefined;
  let inboxTimer: NodeJS.Timeout | undefined;
  let display: TreeDisplay | undefined;

  const deps: ToolDeps = {
    pi,
    runtime: () => {
      if (!runtime) throw new Error("the agent tree is not ready: the session has not started");
      return runtime;
    },
  };
  for (const make of [
    listModelsTool,
    spawnAgentTool,
    waitAgentTool,
    listAgentsTool,
    sendMessageTool,
    followupTaskTool,
    interruptAgentTool,
    closeAgentTool,
    getAgentReportTool,
  ]) {
    pi.registerTool(make(deps) as Parameters<ExtensionAPI["registerTool"]>[0]);
  }

  const stop = async (): Promise<void> => {
    if (inboxTimer) clearInterval(inboxTimer);
    inboxTimer = undefined;
    display?.stop();
    display = undefined;
    const ending = runtime;
    runtime = undefined;
    if (!ending) return;
    await ending.shutdown();
    if (identity.isRoot) for (const record of await ending.tree.subtree(ending.self)) pi.appendEntry(ENTRY_TYPE, agentEntry(record));
  };

  pi.on("session_start", async (_event, ctx) => {
    await stop();
    // Every extension has registered its tools by now, so definition files' tool names can be
    // checked; spawn_agent is registered again so agent_type lists the roles of this cwd.
    const roles = loadRoleCatalog(ctx.cwd, describeRegistry(pi.getAllTools()));
    pi.registerTool(spawnAgentTool(deps, roles) as Parameters<ExtensionAPI["registerTool"]>[0]);
    const warnings = definitionWarnings(roles);
    if (ctx.hasUI) for (const line of warnings) ctx.ui.notify(line, "warning");
    else if (identity.isRoot) for (const line of warnings) console.error(line);
    const sessionManager = ctx.sessionManager;
    const treeDir = identity.treeDir ?? rootTreeDir(sessionManager.getSessionId(), sessionManager.getSessionFile());
    const tree = new TreeDir(treeDir);
    // A line for the user: pi's UI where there is one (interactive, RPC), else stderr.
    const problem = (line: string) => (ctx.hasUI ? ctx.ui.notify(line, "warning") : console.error(line));
    // The session starts whatever the tree directory holds; the tools then say what fails.
    try {
      await tree.init(sessionManager.getSessionFile() ?? sessionManager.getSessionId());
    } catch (err) {
      problem(`pi-subagent-tree: the tree directory ${treeDir} cannot be prepared: ${errorText(err)}`);
    }
    const rt = new TreeRuntime(identity, tree, treeLimits(), ctx.cwd, {
      hooks: {
        problem,
        recorded: (record) => {
          if (identity.isRoot) pi.appendEntry(ENTRY_TYPE, agentEntry(record));
        },
        // An interactive root stays alive between prompts: a notice that arrives while it is
        // idle is shown to the user without starting a turn (it stays in the mailbox too).
        noticed: (notice) => {
          if (uiContext?.hasUI && uiContext.isIdle()) uiContext.ui.notify(describeNotice(notice), "info");
        },
      },
    });
    await restore(rt, sessionManager.getEntries());
    runtime = rt;
    if (ctx.hasUI) {
      uiContext = ctx;
      inboxTimer = setInterval(() => {
        if (ctx.isIdle()) void rt.collectInbox().catch(() => undefined);
      }, IDLE_INBOX_POLL_MS);
      inboxTimer.unref();
      // The tree at a glance: nickname, status, model, elapsed, current tool, usage and cost.
      display = new TreeDisplay(
        ctx.ui,
        rt.self,
        () => progressOf(rt).snapshot(rt.self),
        () => budgetFromEnv(),
      );
      display.start(DISPLAY_REFRESH_MS);
    }
  });

  // After this, the extension holds no timer or handle, or pi would never exit.
  pi.on("session_shutdown", async () => {
    await stop();
  });
}
