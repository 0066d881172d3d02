/**
 * The root's own turns as spans, from pi's events in the root process (the root has no
 * wrapper to build them from events.jsonl): one `invoke_agent` span from `agent_start` to
 * `agent_end`, one trace per root prompt, with its model requests and tool calls inside.
 * Pure: times come from the caller, spans go out at the turn's end.
 */
import type { Usage } from "../contracts/usage.js";
import type { SpanData } from "./span-data.js";
import { derivedSpanId, randomSpanId, randomTraceId, type SpanContextIds } from "./trace-context.js";
import { ATTR, toolSpanId, usageAttributes } from "./turn-spans.js";

interface OpenTurn {
  ids: SpanContextIds;
  parentSpanId: string | undefined;
  startMs: number;
  spans: SpanData[];
  tools: Map<string, SpanData>;
  requestStartMs: number | undefined;
  requests: number;
  usage: { input: number; output: number; cost: number };
}

export class RootTurnSpans {
  private turn: OpenTurn | undefined;
  /** The last turn's span: a child turn that starts after it ended (let through from a queue) still joins its trace. */
  private last: SpanContextIds | undefined;

  /**
   * @param agentName the root's path (`/root`)
   * @param parent a span the root runs under (its own `TRACEPARENT`, say a CI job's), else each turn starts a trace
   */
  constructor(
    private readonly agentName: string,
    private readonly parent: SpanContextIds | undefined,
  ) {}

  /** The running turn's span, else the last one's. */
  get current(): SpanContextIds | undefined {
    return this.turn?.ids ?? this.last;
  }

  agentStart(nowMs: number): void {
    const ids = {
      traceId: this.parent?.traceId ?? randomTraceId(),
      spanId: randomSpanId(),
      sampled: this.parent?.sampled ?? true,
    };
    this.turn = {
      ids,
      parentSpanId: this.parent?.spanId,
      startMs: nowMs,
      spans: [],
      tools: new Map(),
      requestStartMs: undefined,
      requests: 0,
      usage: { input: 0, output: 0, cost: 0 },
    };
  }

  requestStart(nowMs: number): void {
    if (this.turn) this.turn.requestStartMs = nowMs;
  }

  requestEnd(
    nowMs: number,
    model: string | undefined,
    usage: Usage | undefined,
    stopReason: string | undefined,
    error?: string,
  ): void {
    const turn = this.turn;
    if (!turn) return;
    turn.requests += 1;
    if (usage) {
      turn.usage.input += usage.input;
      turn.usage.output += usage.output;
      turn.usage.cost += usage.cost.total;
    }
    turn.spans.push({
      name: model ? `chat ${model}` : "chat",
      ...this.inside(turn, derivedSpanId(turn.ids.spanId, `request:${turn.requests}`)),
      kind: "client",
      startMs: turn.requestStartMs ?? nowMs,
      endMs: nowMs,
      attributes: {
        "gen_ai.operation.name": "chat",
        ...(model && { "gen_ai.request.model": model }),
        ...usageAttributes(usage),
        ...(stopReason && { "gen_ai.response.finish_reasons": [stopReason] }),
      },
      ...(error !== undefined && { error }),
    });
    turn.requestStartMs = undefined;
  }

  toolStart(nowMs: number, toolCallId: string, toolName: string): void {
    const turn = this.turn;
    if (!turn) return;
    const span: SpanData = {
      name: `execute_tool ${toolName}`,
      ...this.inside(turn, toolSpanId(turn.ids.spanId, toolCallId)),
      kind: "internal",
      startMs: nowMs,
      endMs: nowMs,
      attributes: {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": toolName,
        "gen_ai.tool.call.id": toolCallId,
      },
    };
    turn.tools.set(toolCallId, span);
    turn.spans.push(span);
  }

  toolEnd(nowMs: number, toolCallId: string, isError: boolean): void {
    const span = this.turn?.tools.get(toolCallId);
    if (!span) return;
    this.turn?.tools.delete(toolCallId);
    span.endMs = Math.max(nowMs, span.startMs);
    if (isError) span.error = "the tool returned an error";
  }

  /** The finished turn's spans, the turn first; none when no turn ran. */
  agentEnd(nowMs: number, model: string | undefined): SpanData[] {
    const turn = this.turn;
    if (!turn) return [];
    this.turn = undefined;
    this.last = turn.ids;
    for (const span of turn.tools.values()) {
      span.endMs = nowMs;
      span.error = "the tool call did not finish";
    }
    const last = turn.spans.filter((span) => span.kind === "client").at(-1);
    return [
      {
        name: `invoke_agent ${this.agentName}`,
        traceId: turn.ids.traceId,
        spanId: turn.ids.spanId,
        ...(turn.parentSpanId && { parentSpanId: turn.parentSpanId }),
        sampled: turn.ids.sampled,
        kind: "internal",
        startMs: turn.startMs,
        endMs: Math.max(nowMs, turn.startMs),
        attributes: {
          "gen_ai.operation.name": "invoke_agent",
          "gen_ai.agent.name": this.agentName,
          ...(model && { "gen_ai.request.model": model }),
          "gen_ai.usage.input_tokens": turn.usage.input,
          "gen_ai.usage.output_tokens": turn.usage.output,
          [ATTR.cost]: turn.usage.cost,
          [ATTR.status]: last?.error === undefined ? "completed" : "failed",
        },
        ...(last?.error !== undefined && { error: last.error }),
      },
      ...turn.spans,
    ];
  }

  private inside(turn: OpenTurn, spanId: string) {
    return { traceId: turn.ids.traceId, spanId, parentSpanId: turn.ids.spanId, sampled: turn.ids.sampled };
  }
}
