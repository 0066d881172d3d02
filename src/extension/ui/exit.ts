/**
 * Leaving pi while children work. `onExit` decides: `detach` — running turns go on to
 * their own end under their own limits and queued ones stay queued, for the next root on the
 * session to take back; `stop` — they are stopped (they end `interrupted`, and a follow-up
 * resumes them). Default: detach in interactive mode, stop in print, json and rpc modes,
 * where a script expects its processes gone when it exits; PI_SUBAGENTS_ON_EXIT overrides the
 * setting. The person is told in the terminal (stderr) what happened — how many, which ones,
 * what bounds them, and the commands to look, stop or come back. Pure text, plus the one place
 * that writes it once the terminal is pi's no more (at process exit).
 */
import { ENV } from "../../contracts/env.js";
import type { OnExit } from "../../contracts/settings.js";
import type { AgentRecordV1 } from "../../contracts/tree.js";
import { type Painter, plain } from "./paint.js";

export type { OnExit };

/** The value of PI_SUBAGENTS_ON_EXIT or the setting, when it is one of the two. */
function onExitValue(value: unknown): OnExit | undefined {
  const text = typeof value === "string" ? value.trim().toLowerCase() : undefined;
  return text === "detach" || text === "stop" ? text : undefined;
}

/** Whether pi runs its interactive terminal UI (not print, json or rpc mode). */
export function interactiveMode(hasUI: boolean, argv: readonly string[] = process.argv): boolean {
  if (!hasUI) return false;
  const mode = argv.indexOf("--mode");
  return !(mode !== -1 && argv[mode + 1] === "rpc");
}

/** What a deliberate exit does with running turns: the environment, else the setting, else the mode's default. */
export function onExitChoice(interactive: boolean, setting?: OnExit, env: NodeJS.ProcessEnv = process.env): OnExit {
  return onExitValue(env[ENV.onExit]) ?? setting ?? (interactive ? "detach" : "stop");
}

/** How many names the exit line lists before it counts the rest. */
const NAMES_SHOWN = 4;

export interface ActiveAgents {
  running: AgentRecordV1[];
  queued: AgentRecordV1[];
}

export function activeAgents(records: readonly AgentRecordV1[]): ActiveAgents {
  return {
    running: records.filter((r) => r.status === "running"),
    queued: records.filter((r) => r.status === "pending_init"),
  };
}

export function countActive(active: ActiveAgents): number {
  return active.running.length + active.queued.length;
}

/** `2 running and 1 queued` */
export function activeCounts(active: ActiveAgents): string {
  return [
    active.running.length && `${active.running.length} running`,
    active.queued.length && `${active.queued.length} queued`,
  ]
    .filter(Boolean)
    .join(" and ");
}

/** `/root/alpha, /root/beta and 3 more` */
export function someNames(records: readonly AgentRecordV1[], shown = NAMES_SHOWN): string {
  const names = records.slice(0, shown).map((r) => r.path);
  const rest = records.length - names.length;
  return rest > 0 ? `${names.join(", ")} and ${rest} more` : names.join(", ");
}

/** The status line of the last frame while pi exits: nobody is drawn running any more. */
export function stoppingStatus(active: ActiveAgents, p: Painter = plain, how: OnExit = "stop"): string {
  const one = countActive(active) === 1;
  if (how === "detach")
    return p.fg(
      "warning",
      `agents: leaving ${activeCounts(active)} (pi is exiting; ${one ? "it goes" : "they go"} on, pi -c takes ${one ? "it" : "them"} back)`,
    );
  return p.fg(
    "warning",
    `agents: stopping ${activeCounts(active)} (pi is exiting; ${one ? "it ends" : "they end"} interrupted and can be resumed)`,
  );
}

export interface ResumeHint {
  /** The root's session file; undefined when the session is not saved. */
  sessionFile: string | undefined;
  /** The tree directory (run folders, reports). */
  treeDir: string;
  /** The tree is a temporary one (`--no-session`), removed as pi ends. */
  temporary?: boolean;
  /** The turn time limit (ms) that bounds a detached turn. */
  turnLimitMs?: number;
  /** The tree budget, when one is set (`2000000 tokens`, `$5`). */
  budget?: string;
}

/** `30 min`, `90 s` */
function duration(ms: number): string {
  return ms >= 60_000 && ms % 60_000 === 0 ? `${ms / 60_000} min` : `${Math.round(ms / 1000)} s`;
}

/** What the terminal shows after pi has left children running (onExit `detach`). */
export function detachLines(active: ActiveAgents, hint: ResumeHint): string[] {
  const running = active.running.length;
  const bounds = [
    hint.turnLimitMs !== undefined && `its turn time limit (${duration(hint.turnLimitMs)})`,
    "the limits it was given",
    hint.budget && `the tree budget (${hint.budget})`,
  ].filter(Boolean);
  const lines = [
    `pi-subagent-tree: left ${activeCounts(active)} agent${countActive(active) === 1 ? "" : "s"} (${someNames([...active.running, ...active.queued])}).`,
  ];
  if (running > 0)
    lines.push(
      `  ${running === 1 ? "the running one goes" : `the ${running} running go`} on to ${running === 1 ? "its" : "their"} own end, each bounded by ${bounds.join(", ")}; ${running === 1 ? "its result is" : "results are"} kept.`,
    );
  if (active.queued.length > 0) lines.push("  queued turns stay queued until a root takes the tree back.");
  lines.push(`  look:      subagent-wrapper inspect ${hint.treeDir}`);
  lines.push(`  stop:      subagent-wrapper stop ${hint.treeDir}`);
  if (hint.sessionFile)
    lines.push(
      `  re-attach: pi --session ${hint.sessionFile}  (or pi -c in this folder); notices come then, once each`,
    );
  return lines;
}

/** What the terminal shows after pi has left with children working. */
export function exitLines(active: ActiveAgents, hint: ResumeHint): string[] {
  const all = [...active.running, ...active.queued];
  const one = all.length === 1;
  const lines: string[] = [
    `pi-subagent-tree: stopped ${activeCounts(active)} agent${one ? "" : "s"} (${someNames(all)}); ${one ? "it is" : "they are"} interrupted, not lost.`,
  ];
  if (hint.sessionFile) {
    lines.push(
      `  resume: pi --session ${hint.sessionFile}  (or pi -c in this folder), then ask to follow ${one ? "it" : "them"} up`,
    );
  } else {
    lines.push("  this session was not saved, so the tree cannot be resumed");
  }
  if (hint.temporary) lines.push(`  their run folders were in a temporary folder, ${hint.treeDir}, removed as pi ends`);
  else lines.push(`  their run folders: ${hint.treeDir}  (subagent-wrapper inspect ${hint.treeDir})`);
  return lines;
}

/**
 * Writes `lines` to stderr when the process exits: pi has restored the terminal by then, so
 * the text stays below its last frame. An exit handler holds no handle; stderr writes to a
 * terminal or a pipe are synchronous.
 */
export function sayAtExit(lines: string[]): void {
  process.once("exit", () => {
    try {
      process.stderr.write(`${lines.join("\n")}\n`);
    } catch {
      // nowhere to say it
    }
  });
}
