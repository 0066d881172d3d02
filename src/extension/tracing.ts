/**
 * The tree in OpenTelemetry, extension side (docs/tracing.md). In the root, with an OTLP
 * endpoint set, each prompt's turn is a trace of its own: its spans come from pi's events
 * here and go out when the turn ends. In a child the wrapper exports the turn; the extension
 * there only passes the trace on. Either way each turn this process starts gets a
 * `TRACEPARENT` naming the spawn_agent / followup_task call that asked for it (the call is
 * known through the async context of the tool's execute), so its wrapper's turn span nests
 * under that call, across processes and runners.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { normalizeUsage } from "../contracts/usage.js";
import { isRecord } from "../lib/values.js";
import { RootTurnSpans } from "../telemetry/root-spans.js";
import {
  childContext,
  formatTraceparent,
  parseTraceparent,
  type SpanContextIds,
  TRACEPARENT,
  tracingEnabled,
} from "../telemetry/trace-context.js";
import { exportIfTracing, preloadExporter } from "../telemetry/tracing.js";
import { toolSpanId } from "../telemetry/turn-spans.js";
import type { Identity } from "./config.js";

/** The tool call whose execute is running, in its async context. */
const toolCall = new AsyncLocalStorage<string>();

export class TreeTracing {
  private readonly root: RootTurnSpans | undefined;
  /** A child's turn span (set by its wrapper); the root's is its running turn's. */
  private readonly childTurn: SpanContextIds | undefined;
  private readonly exports = new Set<Promise<unknown>>();
  private model: string | undefined;

  constructor(
    identity: Identity,
    private readonly env: Record<string, string | undefined> = process.env,
    private readonly now: () => number = Date.now,
  ) {
    if (!identity.isRoot) this.childTurn = parseTraceparent(env[TRACEPARENT]);
    else if (tracingEnabled(env)) this.root = new RootTurnSpans(identity.self, parseTraceparent(env[TRACEPARENT]));
  }

  /** A tool whose execute runs in its call's async context, so a turn it starts knows its parent span. */
  static inToolCall<T extends object>(tool: T): T {
    if (!("execute" in tool) || typeof tool.execute !== "function") return tool;
    const execute = tool.execute as (id: string, ...rest: unknown[]) => unknown;
    return { ...tool, execute: (id: string, ...rest: unknown[]) => toolCall.run(id, () => execute(id, ...rest)) };
  }

  /** meta.json `env` of a turn about to start: its parent span, when this process is traced. */
  turnEnv(): Record<string, string> {
    const turn = this.root?.current ?? this.childTurn;
    if (!turn) return {};
    const callId = toolCall.getStore();
    // A turn started outside a tool call (a queued one let through later) hangs off the turn itself.
    const spanId = callId === undefined ? turn.spanId : toolSpanId(turn.spanId, callId);
    return { [TRACEPARENT]: formatTraceparent(childContext(turn, spanId)) };
  }

  /** Records the root's turns from pi's events (nothing in a child, or with tracing off). */
  watch(pi: ExtensionAPI, problem: () => (line: string) => void): void {
    const root = this.root;
    if (!root) return;
    pi.on("agent_start", () => {
      root.agentStart(this.now());
      // The SDK loads while the turn runs, not after it (once per process).
      preloadExporter(this.env);
    });
    pi.on("turn_start", () => root.requestStart(this.now()));
    pi.on("message_end", (event) => {
      const message: unknown = event.message;
      if (!isRecord(message) || message.role !== "assistant") return;
      const model = typeof message.model === "string" ? `${message.provider}/${message.model}` : undefined;
      this.model = model ?? this.model;
      const stopReason = typeof message.stopReason === "string" ? message.stopReason : undefined;
      const error = stopReason === "error" ? String(message.errorMessage ?? "the model request failed") : undefined;
      root.requestEnd(this.now(), model, normalizeUsage(message.usage), stopReason, error);
    });
    pi.on("tool_execution_start", (event) => root.toolStart(this.now(), event.toolCallId, event.toolName));
    pi.on("tool_execution_end", (event) => root.toolEnd(this.now(), event.toolCallId, event.isError));
    pi.on("agent_end", () => {
      const spans = root.agentEnd(this.now(), this.model);
      const sent = exportIfTracing(spans, this.env, (line) => problem()(`pi-subagent-tree: ${line}`));
      this.exports.add(sent);
      void sent.finally(() => this.exports.delete(sent));
    });
  }

  /** Waits for the exports under way (each bounded by the export time-out): at session end, so none is lost. */
  async flush(): Promise<void> {
    await Promise.all([...this.exports]);
  }
}
