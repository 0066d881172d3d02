/**
 * pi-subagent-tree/wrapper: the wrapper run from code, as `subagent-wrapper <meta.json>` does
 * it — read and check a meta.json, run its child pi, get the result (also written to
 * result.json). The pure pieces are the package's root export.
 */

export type { Clock, TimerHandle } from "../lib/clock.js";
export type { ChildHandle, ChildOperations, SpawnOptions } from "./child.js";
export { loadMeta } from "./load-meta.js";
export { type RunOptions, type RunReport, runWrapper } from "./run.js";
