/**
 * The spare pi: a child pi already started (RPC mode) by a spare wrapper that the root keeps
 * while its tree is active, so that the next turn skips pi's start-up. A turn takes it over:
 * the extension hands the turn's meta.json to the spare wrapper (a line on its stdin), which
 * writes the hand-over file, has pi open the turn's session (`switch_session`: pi loads its
 * extensions again, and the task extension sets the turn's environment from the hand-over
 * first) and sends the prompt. What pi fixed at its start cannot change that way: its cwd,
 * command line (model, thinking level, tools, extensions) and the environment pi itself reads.
 * A turn that differs in any of them starts its own pi, as without a spare.
 *
 * pi's `set_model` and `set_thinking_level` are not used: on pi 0.73.1 they write the person's
 * default model and thinking level into their global settings.json.
 */
import { effectiveModel, type MetaV1 } from "./meta.js";

/** The files of a spare's folder (the tree's `spare/<n>/`). */
export const SPARE_FILES = {
  /** The meta.json of the turn the spare was started for: its pi's command line and cwd. */
  template: "spare.json",
  /** The turn's environment, for the task extension (SpareHandoverV1). */
  handover: "handover.json",
  /** The system prompt addition pi reads again at the hand-over: the turn's instructions are copied here. */
  instructions: "instructions.md",
  /** The session the spare opens at its start (never written: nothing is asked in it). */
  session: "spare.jsonl",
  /** The spare wrapper's stderr until a turn takes it. */
  log: "spare.log",
} as const;

/** The line on a spare wrapper's stdin that hands it a turn: `take <meta.json path>`. */
export const SPARE_TAKE_COMMAND = "take";

/** What the task extension sets in pi's environment at the hand-over, and what it removes. */
export interface SpareHandoverV1 {
  version: 1;
  env: Record<string, string>;
  unset: string[];
}

/** The package's own variables: read by its extensions when they load, never by pi itself. */
const OWN_VARIABLE = /^PI_SUBAGENTS?_/;

/** Whether pi's start-up may have read `name` (anything not the package's own). */
export function fixedAtStart(name: string): boolean {
  return !OWN_VARIABLE.test(name);
}

/**
 * Why a turn cannot take a spare started for `spare`, or undefined when it can: every part of
 * the child's start that pi fixed when the spare started must be the turn's too.
 */
export function spareRefusal(spare: MetaV1, turn: MetaV1): string | undefined {
  if (turn.runner) return "it runs on another runner";
  if (turn.cwdReadyPath) return "its checkout is still being written";
  if (!turn.sessionPath) return "it has no session file";
  if (turn.cwd !== spare.cwd) return "another cwd";
  if (effectiveModel(turn) !== effectiveModel(spare)) return "another model";
  if (turn.thinking !== spare.thinking) return "another thinking level";
  if (!sameList(turn.tools, spare.tools)) return "other tools";
  if (!sameList(turn.extensions, spare.extensions) || Boolean(turn.noExtensions) !== Boolean(spare.noExtensions))
    return "other extensions";
  if (Boolean(turn.noContextFiles) !== Boolean(spare.noContextFiles)) return "other context files";
  if (turn.task.startsWith("/skill:") !== spare.task.startsWith("/skill:")) return "other skills";
  if (Boolean(turn.systemPromptPath) !== Boolean(spare.systemPromptPath)) return "another system prompt";
  const fixed = [...Object.keys(turn.env ?? {}), ...Object.keys(spare.env ?? {})].filter(fixedAtStart);
  if (fixed.some((name) => turn.env?.[name] !== spare.env?.[name])) return "other environment pi reads at its start";
  return undefined;
}

function sameList(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.length === b.length && a.every((item, index) => item === b[index]);
}

/**
 * The hand-over that turns the spare pi's environment (`started`) into the turn's (`wanted`),
 * the package's own variables only (the rest must be equal: spareRefusal).
 */
export function spareHandover(
  started: Readonly<Record<string, string | undefined>>,
  wanted: Readonly<Record<string, string | undefined>>,
): SpareHandoverV1 {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(wanted)) {
    if (value !== undefined && !fixedAtStart(name)) env[name] = value;
  }
  const unset = Object.keys(started).filter((name) => !fixedAtStart(name) && wanted[name] === undefined);
  return { version: 1, env, unset };
}
