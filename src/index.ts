/**
 * pi-subagent-tree: the pure pieces any harness can share with the wrapper, so stop reasons
 * and the `[ABORT]` marker are read the same way everywhere.
 */
export * from "./contracts/index.js";
export { ABORT_MARKER, ABORT_NO_REASON, findAbortMarker } from "./wrapper/abort-marker.js";
export { loadMeta } from "./wrapper/load-meta.js";
export { type AssistantSummary, normalizePiEvent, type PiEvent } from "./wrapper/normalize.js";
export { type ChildExit, type Decision, type Outcome, OutcomeTracker, type Transition } from "./wrapper/outcome.js";
export { type RunOptions, type RunReport, runWrapper } from "./wrapper/run.js";
export { isTerminalStop, type NormalizedStopReason, normalizeStopReason } from "./wrapper/stop-reason.js";
