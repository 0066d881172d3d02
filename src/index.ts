/**
 * pi-subagent-tree, the root export: the contracts (meta.json, result.json, events.jsonl,
 * the tree's records, env names, file names, usage arithmetic) and the pure readers the
 * wrapper itself decides with, so another harness reads pi's stop reasons, the `[ABORT]`
 * marker and a run's outcome exactly as the wrapper does. No I/O here: running a child is
 * `pi-subagent-tree/wrapper`.
 */
export * from "./contracts/index.js";
export { ABORT_MARKER, ABORT_NO_REASON, findAbortMarker } from "./wrapper/abort-marker.js";
export { type AssistantSummary, normalizePiEvent, type PiEvent } from "./wrapper/normalize.js";
export {
  type ChildExit,
  type Decision,
  type Observation,
  type Outcome,
  type OutcomeOptions,
  OutcomeTracker,
  type Transition,
} from "./wrapper/outcome.js";
export { isTerminalStop, type NormalizedStopReason, normalizeStopReason } from "./wrapper/stop-reason.js";
