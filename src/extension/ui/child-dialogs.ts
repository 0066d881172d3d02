/**
 * A child's dialogs in this process: which route the tree takes (the root decides it from its
 * `dialogs` setting and whether it has a UI, and hands it down in every child's environment),
 * what every turn's meta.json and environment carry, and the desk (turns/dialogs/dialogs.ts) that
 * answers this agent's children, with pi's own dialog when the route leads to the person.
 */
import path from "node:path";
import type { ExtensionContext } from "@mariozechner/pi-coding-agent";
import {
  DEFAULT_DIALOG_ROUTE,
  DIALOG_ROUTES,
  type DialogRoute,
  dialogTimeoutMs,
} from "../../contracts/dialog-settings.js";
import type { DialogAskV1 } from "../../contracts/dialogs.js";
import { ENV } from "../../contracts/env.js";
import { TREE_FILES } from "../../contracts/layout.js";
import type { Identity } from "../config.js";
import { readSubagentSettings } from "../settings.js";
import { dialogHandling, treeDialogRoute } from "../turns/dialogs/dialog-routing.js";
import { nodeFolderWatch } from "../turns/dialogs/dialog-watch.js";
import { DialogDesk, type DialogPresenter, type DialogRun } from "../turns/dialogs/dialogs.js";
import { liveTurnOf } from "../turns/lifecycle.js";
import type { TreeRuntime } from "../turns/runtime.js";

/**
 * The route of this tree: the root's from its settings and UI; below the root, what the root
 * handed down (a parent that handed none down predates dialogs: its model answers).
 */
export function dialogRouteOf(
  identity: Identity,
  setting: DialogRoute | undefined,
  hasUi: boolean,
  env: NodeJS.ProcessEnv = process.env,
): DialogRoute {
  if (identity.isRoot) return treeDialogRoute(setting ?? DEFAULT_DIALOG_ROUTE, hasUi);
  const handed = env[ENV.dialogRoute];
  return (DIALOG_ROUTES as readonly string[]).includes(handed ?? "") ? (handed as DialogRoute) : "parent";
}

/** The root's session id, which every child's environment holds (pi permission extensions read it). */
export function rootSessionId(identity: Identity, ownSessionId: string, env: NodeJS.ProcessEnv = process.env): string {
  if (identity.isRoot) return ownSessionId;
  return env[ENV.parentSession] ?? (identity.treeDir ? path.basename(identity.treeDir) : ownSessionId);
}

/** pi's dialog of the ask's kind. `editor` takes no signal: an editor answered elsewhere stays open until closed. */
export function piPresenter(ui: ExtensionContext["ui"]): DialogPresenter {
  return (ask: DialogAskV1, title: string, signal: AbortSignal) => {
    switch (ask.method) {
      case "select":
        return ui.select(title, ask.options ?? [], { signal });
      case "confirm":
        return ui.confirm(title, ask.message ?? "", { signal });
      case "input":
        return ui.input(title, ask.placeholder, { signal });
      case "editor":
        return ui.editor(title, ask.prefill);
    }
  };
}

/** The running turns of this agent's children. */
export function runningTurns(rt: TreeRuntime): DialogRun[] {
  const runs: DialogRun[] = [];
  for (const state of rt.children.values()) {
    const live = liveTurnOf(state.phase);
    if (live) runs.push({ record: state.record, runDir: live.turn.runDir });
  }
  return runs;
}

export interface ChildDialogs {
  /** What every child's meta.json `env` carries. */
  env: Record<string, string>;
  desk: DialogDesk | undefined;
}

/**
 * Sets up this process's part: the meta.json `dialogs` of every turn and the desk (not in a pi
 * that only reads the tree); the root's session id in every child's environment always. A
 * `dialogs: "deny"` setting is the way to keep children's dialogs from anyone: they are cancelled
 * at once, and still recorded.
 */
export function setUpChildDialogs(
  rt: TreeRuntime,
  ctx: ExtensionContext,
  identity: Identity,
  changed: () => void,
  env: NodeJS.ProcessEnv = process.env,
): ChildDialogs {
  const session = { [ENV.parentSession]: rootSessionId(identity, ctx.sessionManager.getSessionId(), env) };
  // Only the process that drives the tree answers its children's dialogs.
  if (rt.readOnly !== undefined) return { env: session, desk: undefined };
  // A project's settings may not choose what a person is asked: the reader says so once.
  const { settings } = readSubagentSettings({ cwd: ctx.cwd });
  const route = dialogRouteOf(identity, settings.dialogs, ctx.hasUI, env);
  rt.dialogSettings = { timeoutMs: dialogTimeoutMs(settings.dialogTimeout) };
  const desk = new DialogDesk({
    handling: dialogHandling(route, ctx.hasUI),
    runs: () => runningTurns(rt),
    present: ctx.hasUI ? piPresenter(ctx.ui) : undefined,
    question: (notice) => rt.notify(notice),
    recordPath: path.join(rt.tree.root, TREE_FILES.dialogs),
    report: (line) => rt.report(line),
    changed,
    watch: nodeFolderWatch,
  });
  rt.dialogDesk = desk;
  desk.start();
  return { env: { ...session, [ENV.dialogRoute]: route }, desk };
}
