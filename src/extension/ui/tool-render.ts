/**
 * pi's renderCall / renderResult for the nine tools, and the renderer of the message that
 * wakes an idle root: the pure lines of tool-lines.ts and notice-view.ts put in pi-tui
 * components. Compact views are one line cut to the terminal's width (never wrapped
 * mid-word); pi's expand key shows the whole JSON, wrapped.
 */
import type {
  AgentToolResult,
  MessageRenderer,
  Theme,
  ToolDefinition,
  ToolRenderResultOptions,
} from "@mariozechner/pi-coding-agent";
import { type Component, Text, truncateToWidth } from "@mariozechner/pi-tui";
import type { Notice } from "../../contracts/notice.js";
import { noticeLine } from "./notice-view.js";
import { type Painter, paintStatus, statusMark, themePainter } from "./paint.js";
import { callLine, expandedJson, resultLine } from "./tool-lines.js";

/** Lines cut to the width, one terminal row each (`pad` columns in from the left). */
class CutLines implements Component {
  constructor(
    private readonly lines: string[],
    private readonly pad = 0,
  ) {}
  render(width: number): string[] {
    const indent = " ".repeat(this.pad);
    return this.lines.map((line) => truncateToWidth(`${indent}${line}`, Math.max(1, width)));
  }
  invalidate(): void {}
}

function painterOf(theme: Theme | undefined): Painter {
  return themePainter(theme as Parameters<typeof themePainter>[0]);
}

function resultText(result: AgentToolResult<unknown>): string {
  return (result.content ?? []).flatMap((part) => (part.type === "text" ? [part.text] : [])).join("\n");
}

function view(lines: string[], expanded: boolean): Component {
  return expanded ? new Text(lines.join("\n"), 0, 0) : new CutLines(lines.slice(0, 1));
}

type Renderers = Pick<ToolDefinition, "renderCall" | "renderResult">;
/** The part of pi's render context these renderers read (pi passes more). */
interface RenderContext {
  expanded?: boolean;
  isError?: boolean;
}

/** The renderers of one of the nine tools. */
export function toolRenderers(tool: string): Renderers {
  return {
    renderCall: (args: unknown, theme: Theme, context: RenderContext) => {
      const p = painterOf(theme);
      const line = callLine(tool, args, p);
      return view(
        context?.expanded ? [line, ...expandedJson(args).map((l) => p.fg("dim", l))] : [line],
        Boolean(context?.expanded),
      );
    },
    renderResult: (
      result: AgentToolResult<unknown>,
      options: ToolRenderResultOptions,
      theme: Theme,
      context: RenderContext,
    ) => {
      const p = painterOf(theme);
      const text = resultText(result);
      const isError = Boolean(context?.isError);
      const line = resultLine(tool, result.details, text, { isError, isPartial: options.isPartial }, p);
      if (!options.expanded || options.isPartial) return view([line], false);
      const whole = result.details !== undefined && !isError ? result.details : text;
      return view([line, ...(typeof whole === "string" ? whole.split("\n") : expandedJson(whole))], true);
    },
  };
}

/** A tool definition with its compact renderers. */
export function withRenderers<T extends { name: string }>(tool: T): T & Renderers {
  return { ...tool, ...toolRenderers(tool.name) };
}

export interface WakeDetails {
  notices: Notice[];
  pending: number;
}

/**
 * The message that woke the root (it renders itself: pi draws no box around it): one line
 * naming the notices, each in the colour of how it ended; expanded, one line each.
 */
export const wakeMessageRenderer: MessageRenderer<WakeDetails> = (message, options, theme) => {
  const p = painterOf(theme);
  const notices = message.details?.notices ?? [];
  const pending = message.details?.pending ?? 0;
  const head = p.fg(
    "accent",
    `↻ ${notices.length} notice${notices.length === 1 ? "" : "s"} woke the model${pending ? ` (${pending} more pending)` : ""}`,
  );
  if (options.expanded)
    return new Text([head, ...notices.map((notice) => `  ${noticeLine(notice, p)}`)].join("\n"), 1, 0);
  const named = notices
    .map((n) => paintStatus(p, n.type, `${statusMark(n.type)} ${n.agent_name} ${n.type}`))
    .join(", ");
  return new CutLines([`${head}: ${named}`], 1);
};
