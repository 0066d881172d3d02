/**
 * pi-subagent-tree's pi extension: coordination tools for a tree of out-of-process child
 * agents. Wires the parts together; the logic lives in the modules beside it.
 */
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { rootTreeDir } from "../contracts/layout.js";
import type { Notice } from "../contracts/tree.js";
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
import { TreeRuntime } from "./turns/runtime.js";
import { registerAgentsCommand } from "./ui/agents-command.js";
import { activeAgents, countActive, exitLines, sayAtExit, stoppingStatus } from "./ui/exit.js";
import { noticeLevel, noticeLine } from "./ui/notice-view.js";
import { type Painter, plain, themePainter } from "./ui/paint.js";
import { watchForQuit } from "./ui/quit-watch.js";
import { wakeMessageRenderer, withRenderers } from "./ui/tool-render.js";
import { IdleWake, WAKE_MESSAGE_TYPE, wakeEnabled, wakeText } from "./ui/wake.js";
import { TreeDisplay } from "./ui/widget.js";

/** How often an interactive root looks for messages its children sent while it is idle. */
const IDLE_INBOX_POLL_MS = 1000;
/** How often the status line and widget of an interactive session are redrawn. */
const DISPLAY_REFRESH_MS = 1000;

type ToolMaker = (deps: ToolDeps) => { name: string };
type ToolDefinitionArg = Parameters<ExtensionAPI["registerTool"]>[0];

/** Colours in pi's terminal; plain strings where they travel as JSON (RPC) or nowhere. */
function painterFor(ctx: ExtensionContext | undefined): Painter {
  if (!ctx?.hasUI || !process.stdout.isTTY) return plain;
  try {
    return themePainter(ctx.ui.theme as Parameters<typeof themePainter>[0]);
  } catch {
    return plain;
  }
}

/** A ctx call that may throw once pi has replaced or ended the session. */
function safely<T>(fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch {
    return fallback;
  }
}

export default function piSubagentTree(pi: ExtensionAPI): void {
  const identity = identityFromEnv();
  let runtime: TreeRuntime | undefined;
  let uiContext: ExtensionContext | undefined;
  let inboxTimer: NodeJS.Timeout | undefined;
  let display: TreeDisplay | undefined;
  let wake: IdleWake | undefined;
  let unwatchQuit: (() => void) | undefined;
  let sessionFile: string | undefined;

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
  registerAgentsCommand(pi, { runtime: () => runtime, painter: () => painterFor(uiContext), refresh: () => void display?.refresh() });

  /** Every notice that reaches an interactive root gets a line; a waking one may start a turn. */
  const noticed = (notice: Notice) => {
    const ctx = uiContext;
    if (!ctx?.hasUI) return;
    safely(() => ctx.ui.notify(noticeLine(notice), noticeLevel(notice)), undefined);
    wake?.offer(notice);
  };

  /** The last frame while pi exits says the agents are being stopped, not that they run. */
  const freezeForExit = (records: Parameters<typeof activeAgents>[0]) => {
    const active = activeAgents(records);
    if (countActive(active) > 0) display?.freeze(stoppingStatus(active, painterFor(uiContext)));
    return active;
  };

  const stop = async (reason?: string): Promise<void> => {
    if (inboxTimer) clearInterval(inboxTimer);
    inboxTimer = undefined;
    wake?.stop();
    wake = undefined;
    unwatchQuit?.();
    unwatchQuit = undefined;
    const ending = runtime;
    const ctx = uiContext;
    runtime = undefined;
    uiContext = undefined;
    if (!ending) {
      display?.stop();
      display = undefined;
      return;
    }
    const told = identity.isRoot && ctx?.hasUI ? freezeForExit(await ending.tree.subtree(ending.self).catch(() => [])) : undefined;
    await ending.shutdown();
    display?.stop();
    display = undefined;
    if (identity.isRoot) for (const record of await ending.tree.subtree(ending.self)) pi.appendEntry(ENTRY_TYPE, agentEntry(record));
    if (!told || countActive(told) === 0) return;
    const lines = exitLines(told, { sessionFile, treeDir: ending.tree.root });
    // Quitting: pi restores the terminal before the process exits, so the lines go below its
    // last frame. Another session replacing this one (new, resume, fork, reload): pi stays.
    if (reason === undefined || reason === "quit") sayAtExit(lines);
    else safely(() => ctx?.ui.notify(lines.join("\n"), "warning"), undefined);
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
    sessionFile = sessionManager.getSessionFile();
    const treeDir = identity.treeDir ?? rootTreeDir(sessionManager.getSessionId(), sessionFile);
    const tree = new TreeDir(treeDir);
    await tree.init(sessionFile ?? sessionManager.getSessionId());
    const rt = new TreeRuntime(identity, tree, treeLimits(), ctx.cwd, {
      hooks: {
        recorded: (record) => {
          if (identity.isRoot) pi.appendEntry(ENTRY_TYPE, agentEntry(record));
        },
        noticed,
      },
    });
    // Notices a restore finds (turns that ended while the root was away) wait for wait_agent:
    // uiContext is not set yet, so they neither show nor wake.
    await restore(rt, sessionManager.getEntries());
    runtime = rt;
    if (ctx.hasUI) {
      uiContext = ctx;
      // An interactive root stays alive between prompts: a child that ends while it is idle
      // wakes its model with the notice (PI_SUBAGENTS_WAKE=0: the notice is only shown).
      if (wakeEnabled()) {
        wake = new IdleWake({
          mailbox: rt.mailbox,
          isIdle: () => safely(() => ctx.isIdle(), false),
          send: (notices, pending) =>
            pi.sendMessage(
              { customType: WAKE_MESSAGE_TYPE, content: wakeText(notices, pending), display: true, details: { notices, pending } },
              { triggerTurn: true, deliverAs: "followUp" },
            ),
          later: (fn, ms) => {
            const timer = setTimeout(fn, ms);
            timer.unref();
            return () => clearTimeout(timer);
          },
          now: Date.now,
        });
      }
      inboxTimer = setInterval(() => {
        if (!safely(() => ctx.isIdle(), false)) return;
        void rt
          .collectInbox()
          .then(() => wake?.tick())
          .catch(() => undefined);
      }, IDLE_INBOX_POLL_MS);
      inboxTimer.unref();
      // The tree at a glance: nickname, status, model, elapsed, current tool, usage and cost.
      const shown = new TreeDisplay(
        ctx.ui,
        rt.self,
        () => progressOf(rt).snapshot(rt.self),
        () => budgetFromEnv(),
        () => painterFor(ctx),
      );
      display = shown;
      shown.start(DISPLAY_REFRESH_MS);
      if (identity.isRoot) unwatchQuit = watchForQuit(ctx.ui, () => freezeForExit(shown.lastRecords()));
    }
  });

  // After this, the extension holds no timer or handle, or pi would never exit.
  pi.on("session_shutdown", async (event) => {
    await stop((event as { reason?: string }).reason);
  });
}
