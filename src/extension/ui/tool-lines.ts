/**
 * What the nine tools look like in pi's terminal: one line per call and one per result
 * (pi's expand key shows the whole JSON instead), rather than raw JSON that wraps mid-word.
 * Pure functions from a call's arguments or a result's details to painted strings; the
 * Painter is injected, so tests read them tagged and RPC clients plain.
 */
import type { Notice } from "../../contracts/notice.js";
import { formatCost } from "../../contracts/usage.js";
import { isRecord } from "../../lib/values.js";
import { type Painter, paintStatus, plain, statusMark } from "./paint.js";
import { formatElapsed, formatTokens } from "./widget.js";

/** How much of a message or report a one-line view quotes. */
const QUOTE_CHARS = 80;
/** How many notices a wait_agent result names before it counts the rest. */
const NOTICES_NAMED = 3;

type Json = Record<string, unknown>;

const str = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined);
const num = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isFinite(value) ? value : undefined;
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

function quote(text: string, max = QUOTE_CHARS): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return `"${flat.length > max ? `${flat.slice(0, max - 1)}…` : flat}"`;
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/** `/root/alpha` shown as the caller names it: short names stay short. */
function who(value: unknown): string {
  return str(value) ?? "?";
}

/** A message's text, quoted, or the question an answer is for (none when neither). */
function whatIsSent(a: Json): string[] {
  if (str(a.message)) return [quote(a.message as string)];
  return isRecord(a.answer) ? [`answers ${String(a.answer.question_id)}`] : [];
}

/** The one line of a tool call: its name, then what it acts on. */
export function callLine(tool: string, args: unknown, p: Painter = plain): string {
  const a: Json = isRecord(args) ? args : {};
  const name = p.fg("toolTitle", p.bold(tool));
  const parts: string[] = [];
  const accent = (text: string) => parts.push(p.fg("accent", text));
  const dim = (text: string) => parts.push(p.fg("dim", text));
  switch (tool) {
    case "spawn_agent": {
      accent(who(a.task_name));
      const details = [
        str(a.agent_type),
        a.fork_turns !== undefined && a.fork_turns !== "" ? `fork ${String(a.fork_turns)}` : undefined,
        str(a.model),
        str(a.reasoning_effort),
        a.isolation === "worktree" ? "worktree" : undefined,
      ].filter((part): part is string => part !== undefined);
      if (details.length) dim(details.join(" · "));
      if (str(a.message)) dim(quote(a.message as string));
      break;
    }
    case "wait_agent": {
      const ms = num(a.timeout_ms);
      dim(ms === undefined ? "30s" : formatElapsed(ms));
      if (str(a.target)) accent(`for ${a.target as string}`);
      break;
    }
    case "list_agents":
      if (str(a.path_prefix)) accent(a.path_prefix as string);
      break;
    case "send_message":
    case "followup_task":
      accent(`→ ${who(a.target)}`);
      for (const sent of whatIsSent(a)) dim(sent);
      break;
    case "interrupt_agent":
    case "close_agent":
      accent(who(a.target));
      break;
    case "get_agent_report": {
      accent(who(a.target));
      const extra = [
        num(a.offset) ? `offset ${a.offset}` : undefined,
        num(a.turn) ? `turn -${a.turn}` : undefined,
      ].filter(Boolean);
      if (extra.length) dim(extra.join(" · "));
      break;
    }
    default:
      break;
  }
  return [name, ...parts].join(" ");
}

export interface ResultView {
  /** The tool threw: `text` is its message. */
  isError: boolean;
  /** A progress update while the tool runs. */
  isPartial: boolean;
}

function asNotice(value: unknown): Notice | undefined {
  return isRecord(value) && typeof value.agent_name === "string" && typeof value.type === "string"
    ? (value as unknown as Notice)
    : undefined;
}

/** `2 running, 1 queued` from a count pair ("" when both are 0). */
function activity(running: number, queued: number): string {
  return [running && `${running} running`, queued && `${queued} queued`].filter(Boolean).join(", ");
}

function waitLine(d: Json, p: Painter): string {
  const notices = list(d.notices)
    .map(asNotice)
    .filter((n): n is Notice => n !== undefined);
  const running = num(d.running) ?? 0;
  const queued = num(d.queued) ?? 0;
  const working = activity(running, queued);
  const keep = running + queued === 1 ? "keeps working" : "keep working";
  if (d.cancelled === true) {
    const stop = running + queued === 1 ? "/agents stop stops it" : "/agents stop stops them";
    return p.fg("warning", `cancelled${working ? ` · ${working} ${keep} (${stop})` : ""}`);
  }
  if (d.user_message_pending === true && notices.length === 0) {
    return p.fg("accent", `gave way to your message${working ? ` · ${working} ${keep}` : ""}`);
  }
  if (notices.length > 0) {
    const named = notices
      .slice(0, NOTICES_NAMED)
      .map((n) => paintStatus(p, n.type, `${statusMark(n.type)} ${shortNotice(n)}`));
    const more = notices.length - named.length;
    const pending = num(d.pending) ?? 0;
    return [
      `${plural(notices.length, "notice")}:`,
      named.join(", "),
      more > 0 ? `and ${more} more` : "",
      pending > 0 ? p.fg("dim", `· ${pending} pending`) : "",
    ]
      .filter(Boolean)
      .join(" ");
  }
  if (d.idle === true) return p.fg("muted", "idle: no child has a running or queued turn");
  if (d.timed_out === true)
    return p.fg("muted", `timed out after ${formatElapsed(num(d.timeout_ms) ?? 0)}${working ? ` · ${working}` : ""}`);
  return p.fg("muted", "no notices");
}

/** `alpha (Euclid) errored (failed)`: the notice without its report. */
function shortNotice(n: Notice): string {
  if (n.type === "message" || n.type === "question") return `${n.type} from ${n.agent_name}`;
  const outcome = n.outcome && n.outcome !== n.type ? ` (${n.outcome})` : "";
  return `${n.agent_name} (${n.nickname}) ${n.type}${outcome}`;
}

function progressLine(d: Json, p: Painter): string {
  const agents = list(d.agents).filter(isRecord);
  const running = agents.filter((a) => a.agent_status === "running").length;
  const queued = agents.length - running;
  const waited = formatElapsed(num(d.waiting_ms) ?? 0);
  const working = activity(running, queued);
  return p.fg("muted", `waiting ${waited} for notices${working ? ` · ${working}` : ""}`);
}

function spawnLine(d: Json, p: Painter): string {
  const status = str(d.agent_status) ?? "?";
  const queued = num(d.queue_position);
  const branch = isRecord(d.worktree) ? str(d.worktree.branch) : undefined;
  return [
    `${p.fg("accent", who(d.agent_name))} (${who(d.nickname)})`,
    paintStatus(p, status, queued !== undefined ? `queued #${queued}` : status === "pending_init" ? "queued" : status),
    [str(d.role), str(d.model), str(d.reasoning)].filter(Boolean).join(" · "),
    branch ? `branch ${branch}` : "",
  ]
    .filter(Boolean)
    .join(" · ");
}

function listLine(d: Json, p: Painter): string {
  const agents = list(d.agents).filter(isRecord);
  const counts = new Map<string, number>();
  for (const agent of agents) {
    const status = str(agent.agent_status) ?? "?";
    counts.set(status, (counts.get(status) ?? 0) + 1);
  }
  const told = [...counts]
    .map(([status, n]) => paintStatus(p, status, `${n} ${status === "pending_init" ? "queued" : status}`))
    .join(", ");
  const total = isRecord(d.total_usage) ? d.total_usage : {};
  const usage = `${formatTokens(num(total.total_tokens) ?? 0)} tok · ${formatCost(num(total.cost) ?? 0)}`;
  const omitted = num(d.omitted);
  return [
    `${plural(agents.length, "agent")}${told ? `: ${told}` : ""}`,
    usage,
    omitted ? `${omitted} left out` : "",
    isRecord(d.budget) && d.budget.exhausted ? p.fg("error", "budget spent") : "",
  ]
    .filter(Boolean)
    .join(" · ");
}

function modelsLine(d: Json): string {
  const models = list(d.models).flatMap((m) => (isRecord(m) && str(m.model) ? [m.model as string] : []));
  const named = models.slice(0, 4).join(", ");
  return `${plural(models.length, "model")}${d.scoped === true ? " (scoped)" : ""}${named ? `: ${named}${models.length > 4 ? ", …" : ""}` : ""}`;
}

function reportLine(d: Json, p: Painter): string {
  if (d.available !== true) return p.fg("muted", `${who(d.agent_name)} has no report yet`);
  const text = str(d.text) ?? "";
  const offset = num(d.offset) ?? 0;
  const total = num(d.total_chars) ?? text.length;
  const next = num(d.next_offset);
  const range =
    total > text.length
      ? `chars ${offset}–${offset + text.length} of ${total}${next !== undefined ? `, next offset ${next}` : ""}`
      : `${total} chars`;
  return `${p.fg("accent", who(d.agent_name))} report · ${range}${d.complete === false ? " (stored cut)" : ""}${text ? ` ${p.fg("dim", quote(text))}` : ""}`;
}

/** send_message's result: where the message went, or the question it answered. */
function sentLine(d: Json, p: Painter): string {
  if (str(d.answered)) return `answered ${d.answered as string}`;
  return d.delivered === "parent_mailbox"
    ? `sent to ${p.fg("accent", who(d.target))} (your parent's mailbox)`
    : `${str(d.delivered) ?? "sent"} → ${p.fg("accent", who(d.target))}${num(d.queued_messages) ? ` · ${plural(d.queued_messages as number, "message")} waiting for its next turn` : ""}`;
}

/** The one line of a tool result (or of its progress while it runs). */
export function resultLine(tool: string, details: unknown, text: string, view: ResultView, p: Painter = plain): string {
  if (view.isError) return p.fg("error", `✗ ${text.replace(/\s+/g, " ").trim() || "failed"}`);
  const d: Json = isRecord(details) ? details : {};
  if (view.isPartial)
    return tool === "wait_agent" ? progressLine(d, p) : p.fg("muted", text.replace(/\s+/g, " ").trim() || "working…");
  switch (tool) {
    case "wait_agent":
      return waitLine(d, p);
    case "spawn_agent":
      return spawnLine(d, p);
    case "list_agents":
      return listLine(d, p);
    case "list_models":
      return modelsLine(d);
    case "send_message":
      return sentLine(d, p);
    case "followup_task": {
      const status = str(d.agent_status) ?? "?";
      const behind = d.queued_behind_running_turn === true ? " · starts when its running turn ends" : "";
      const queued = num(d.queue_position) !== undefined ? ` · queued #${d.queue_position}` : "";
      return `${p.fg("accent", who(d.agent_name))} ${paintStatus(p, status, status === "pending_init" ? "queued" : status)}${behind}${queued}`;
    }
    case "interrupt_agent":
    case "close_agent": {
      const before = str(d.previous_status) ?? "?";
      const after = str(d.agent_status) ?? "?";
      const change =
        before === after ? `${paintStatus(p, after)} (nothing to stop)` : `${before} → ${paintStatus(p, after)}`;
      return `${p.fg("accent", who(d.agent_name))} ${change}`;
    }
    case "get_agent_report":
      return reportLine(d, p);
    default:
      return text.replace(/\s+/g, " ").trim();
  }
}

/** The expanded view: the whole JSON, as the model read it. */
export function expandedJson(value: unknown): string[] {
  let text: string;
  try {
    text = JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.split("\n");
}
