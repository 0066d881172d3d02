/**
 * Leaving pi while children work: their turns are stopped (they end `interrupted`, and a
 * follow-up resumes them), and the person is told so in the terminal — how many were running
 * and queued, which ones, and how to come back to the tree. Pure text, plus the one place
 * that writes it once the terminal is pi's no more (at process exit).
 */
import type { AgentRecordV1 } from "../../contracts/tree.js";
import { type Painter, plain } from "./paint.js";

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
export function stoppingStatus(active: ActiveAgents, p: Painter = plain): string {
  const one = countActive(active) === 1;
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
}

/** What the terminal shows after pi has left with children working. */
export function exitLines(active: ActiveAgents, hint: ResumeHint): string[] {
  const all = [...active.running, ...active.queued];
  const one = all.length === 1;
  const lines = [
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
