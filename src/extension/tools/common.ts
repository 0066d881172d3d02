import type { AgentToolResult, ExtensionAPI } from "@mariozechner/pi-coding-agent";
import type { Clock } from "../../lib/clock.js";
import { errorText } from "../../lib/values.js";
import { isStrictDescendant, parentOf, resolveTarget } from "../tree/paths.js";
import type { ChildState, TreeRuntime } from "../turns/runtime.js";

/** Every tool answers with one JSON object, as text for the model and as details for scripts. */
export function jsonResult<T extends object>(value: T): AgentToolResult<T> {
  return { content: [{ type: "text", text: JSON.stringify(value) }], details: value };
}

/**
 * The runtime of this session, or a clear error before session_start has run; in a child whose
 * tree is not started yet, the promise of its start (index.ts: the tree's machinery loads when
 * first needed). A tool awaits only that promise: a ready runtime is used in the same turn of
 * the event loop as the call, so what the tool reads of the tree is what it was when called.
 */
export type RuntimeGetter = () => TreeRuntime | Promise<TreeRuntime>;

export interface ToolDeps {
  pi: ExtensionAPI;
  runtime: RuntimeGetter;
  /**
   * spawn.ts, imported at the first spawn. Given by index.ts, whose import() goes through pi's
   * loader: spawn.ts imports pi's package, whose name only pi's loader resolves (by alias), and
   * a tool module may have been loaded by Node itself, whose import() would not. Without it
   * (a tool built to read its description) spawn_agent cannot spawn.
   */
  spawnPart?: () => Promise<typeof import("../spawn/spawn.js")>;
  /** What the tools read the time and wait on; the system's clock when not given (tests move a fake one). */
  clock?: Clock;
}

/** A target given as a canonical path or relative to the caller, that must exist. */
export function existingTarget(runtime: TreeRuntime, target: unknown): string {
  const resolved = typeof target === "string" ? resolveTarget(runtime.self, target) : undefined;
  if (!resolved || resolved === runtime.self || !(runtime.children.has(resolved) || runtime.tree.exists(resolved))) {
    throw new Error("agent not found");
  }
  return resolved;
}

/** A target in the caller's subtree (list, wait, reports reach the whole subtree). */
export function subtreeTarget(runtime: TreeRuntime, target: unknown): string {
  const resolved = typeof target === "string" ? resolveTarget(runtime.self, target) : undefined;
  if (!resolved || !isStrictDescendant(runtime.self, resolved) || !runtime.tree.exists(resolved))
    throw new Error("agent not found");
  return resolved;
}

/** What a tool does to a direct child, as its "cannot take …" message says it. */
export type ChildAction =
  | "messages"
  | "follow-ups"
  | "an interrupt"
  | "a close"
  | "messages, follow-ups, interrupts or a close";

/**
 * A direct child of the caller: the only agents it may message, follow up, interrupt or close.
 * A child whose record was damaged when this session started is not loaded: it is named as
 * such, never as someone else's child.
 */
export function directChild(
  runtime: TreeRuntime,
  target: unknown,
  action: ChildAction = "messages, follow-ups, interrupts or a close",
): ChildState {
  const resolved = existingTarget(runtime, target);
  const state = runtime.children.get(resolved);
  if (state) return state;
  const parent = parentOf(resolved) ?? "none";
  if (parent !== runtime.self)
    throw new Error(`${resolved} is not a direct child of ${runtime.self}; its parent ${parent} can act on it`);
  const damage = runtime.damaged.get(resolved);
  if (damage !== undefined) throw new Error(`${resolved}'s record is damaged (${damage}); it cannot take ${action}`);
  throw new Error(`${resolved}'s record could not be read when this session started; it cannot take ${action}`);
}

/**
 * A part of the extension a tool imports when it is first called rather than when pi loads the
 * extension: pi evaluates every module imported at load again in each child's pi, and most
 * children never call these tools. A failed import is the tool's error, said plainly; pi goes on.
 */
export async function loadPart<T>(what: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    throw new Error(`pi-subagent-tree could not load ${what}: ${errorText(err)}`);
  }
}

export function requireText(value: unknown, name: string): string {
  if (typeof value !== "string" || value.trim() === "") throw new Error(`${name} must be a non-empty string`);
  return value;
}
