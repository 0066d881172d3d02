/**
 * What a child reads: short envelopes around every message from the tree, and the
 * instructions appended to its system prompt. Pure text.
 */
import type { AgentRecordV1, EnvelopeKind, PendingPart } from "../../../contracts/tree.js";

/**
 * One envelope: what it is, who sent it and the task it belongs to (and a message's id),
 * then the payload verbatim. It never names the sender's model or reasoning: children that
 * were shown them took them for their own.
 */
export function envelope(kind: EnvelopeKind, from: string, taskName: string, payload: string, id?: string): string {
  return `[${kind} from ${from} · task ${taskName}${id === undefined ? "" : ` · id ${id}`}]\n${payload}`;
}

/** A part's envelope: a message live or queued reads the same. */
export function partEnvelope(part: PendingPart, taskName: string): string {
  return envelope(part.kind, part.from, taskName, part.text, part.id);
}

/** The prompt of one turn: each queued piece in its own envelope, in the order sent. */
export function turnPrompt(parts: readonly PendingPart[], taskName: string, forkTranscript?: string): string {
  const pieces = parts.map((part) => partEnvelope(part, taskName));
  if (forkTranscript) pieces.unshift(`[FORKED_HISTORY · the parent's conversation so far]\n${forkTranscript}`);
  return pieces.join("\n\n");
}

/** Appended to a child's system prompt. */
export function childInstructions(record: AgentRecordV1, canDelegate: boolean): string {
  const lines = [
    "# Your place in the agent tree",
    `You are the agent ${record.path} (nickname ${record.nickname}), a child of ${record.parent} in a pi-subagent-tree agent tree.`,
    `${record.path} is your canonical agent path: a coordination identifier in the agent tree, not a filesystem path. Never use it with file tools; your working directory is your filesystem location.`,
    `Role: ${record.role}. Your own model is ${record.model} with reasoning ${record.reasoning}.`,
    "",
    "Messages from the tree arrive in envelopes: `[NEW_TASK from <path> · task <name>]` (your task), `[MESSAGE from <path> · task <name> · id <id>]` (a note to take into account; it can also arrive while you work, after a tool call), `[FOLLOWUP_TASK from <path> · task <name>]` (new work in the same conversation). Handle them in the order they appear.",
    "Your final answer is your report to your parent: make it complete and self-contained.",
    "If you cannot do the task, write a line that starts with `[ABORT] <reason>` and stop.",
  ];
  if (record.worktree) {
    lines.push(
      `You work in your own git worktree, ${record.worktree.path}, on branch ${record.worktree.branch}: your parent's working state when you were spawned, ignored files (node_modules, build output) not included unless a setup command linked them. Whatever you change there is committed on that branch when your turn ends, so leave the branch checked out (no checkout, switch or reset to another commit); your parent brings your work in. Nobody else writes there.`,
    );
  }
  if (canDelegate) {
    lines.push(
      "You may delegate with spawn_agent. If you do, call wait_agent until your children are done before you give your final answer: when your turn ends, children still running are stopped.",
      `send_message to ${record.parent} reaches your parent's mailbox while you work.`,
    );
  }
  return `${lines.join("\n")}\n`;
}

/** The instructions followed by a user-defined role's own text (its definition file's body). */
export function withRolePrompt(instructions: string, role: string, rolePrompt: string | undefined): string {
  if (rolePrompt === undefined || rolePrompt.trim() === "") return instructions;
  return `${instructions}\n# Your role: ${role}\n${rolePrompt.trim()}\n`;
}
