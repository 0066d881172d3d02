/**
 * A child's turn as spans, built from its events.jsonl and result.json after the turn: one
 * `invoke_agent` span for the turn (GenAI semantic conventions), and inside it one `chat`
 * span per model request and one `execute_tool` span per tool call. Pure: the wrapper has
 * everything with timestamps in the events, so nothing is traced while pi runs.
 */
import type { EventRecord } from "../contracts/events.js";
import type { ResultV1 } from "../contracts/result.js";
import type { Usage } from "../contracts/usage.js";
import { isRecord } from "../lib/values.js";
import type { SpanAttributeValue, SpanData } from "./span-data.js";
import { derivedSpanId, type SpanContextIds } from "./trace-context.js";

/** Where the turn sits in the trace: its own span's ids and its parent's span id (the parent's spawn_agent / followup_task call). */
export interface TurnPlace {
  turn: SpanContextIds;
  parentSpanId?: string;
}

/** Attribute names of this package's own facts, beside the GenAI ones. */
export const ATTR = {
  cost: "pi_subagent.cost_usd",
  status: "pi_subagent.status",
  limit: "pi_subagent.limit",
  verification: "pi_subagent.verification",
  runId: "pi_subagent.run_id",
} as const;

/** The span id of a tool call inside a turn: the extension in that turn derives the same one for a child it starts. */
export function toolSpanId(turnSpanId: string, toolCallId: string): string {
  return derivedSpanId(turnSpanId, `tool:${toolCallId}`);
}

export function usageAttributes(usage: Usage | undefined): Record<string, SpanAttributeValue> {
  if (!usage) return {};
  return {
    "gen_ai.usage.input_tokens": usage.input,
    "gen_ai.usage.output_tokens": usage.output,
    [ATTR.cost]: usage.cost.total,
  };
}

/** What a verification in result.json says in one word (its status or verdict), when it has one. */
function verificationText(result: ResultV1): string | undefined {
  const verification = (result as { verification?: unknown }).verification;
  if (verification === undefined) return undefined;
  if (typeof verification === "string") return verification;
  if (isRecord(verification)) {
    for (const key of ["status", "verdict", "outcome"])
      if (typeof verification[key] === "string") return verification[key] as string;
  }
  return JSON.stringify(verification);
}

function turnSpan(result: ResultV1, place: TurnPlace, startMs: number, endMs: number): SpanData {
  const agentName = result.agentPath ?? result.agent ?? result.runId;
  const verification = verificationText(result);
  return {
    name: `invoke_agent ${agentName}`,
    traceId: place.turn.traceId,
    spanId: place.turn.spanId,
    ...(place.parentSpanId && { parentSpanId: place.parentSpanId }),
    sampled: place.turn.sampled,
    kind: "internal",
    startMs,
    endMs,
    attributes: {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": agentName,
      ...(result.requestedModel && { "gen_ai.request.model": result.requestedModel }),
      ...(result.resolvedModel && { "gen_ai.response.model": result.resolvedModel }),
      ...usageAttributes(result.usage),
      [ATTR.status]: result.status,
      [ATTR.runId]: result.runId,
      ...(result.limit && { [ATTR.limit]: result.limit.name }),
      ...(verification !== undefined && { [ATTR.verification]: verification }),
    },
    ...(result.status !== "completed" && { error: result.errorMessage ?? result.status }),
  };
}

/** The events after which the model is asked again: a model request starts at the latest of them. */
const REQUEST_STARTS = new Set([
  "run_start",
  "assistant_text",
  "tool_result",
  "retry",
  "message_delivered",
  "model_switch",
]);

/** The turn's spans, parents first: the turn, then its model requests and tool calls in the order they began. */
export function turnSpans(events: readonly EventRecord[], result: ResultV1, place: TurnPlace): SpanData[] {
  const startMs = Date.parse(result.startedAt);
  const endMs = Math.max(Date.parse(result.endedAt), startMs);
  const inside = (ms: number) => Math.min(Math.max(ms, startMs), endMs);
  const child = (spanId: string) => ({
    traceId: place.turn.traceId,
    spanId,
    parentSpanId: place.turn.spanId,
    sampled: place.turn.sampled,
  });
  const spans: SpanData[] = [turnSpan(result, place, startMs, endMs)];
  const openTools = new Map<string, SpanData>();
  let requestStart = startMs;
  let requests = 0;
  for (const event of events) {
    const ts = inside(event.ts);
    if (event.type === "assistant_text") {
      requests += 1;
      const model = event.model ?? result.resolvedModel ?? result.requestedModel;
      spans.push({
        name: model ? `chat ${model}` : "chat",
        ...child(derivedSpanId(place.turn.spanId, `request:${requests}`)),
        kind: "client",
        startMs: requestStart,
        endMs: ts,
        attributes: {
          "gen_ai.operation.name": "chat",
          ...(model && { "gen_ai.request.model": model }),
          ...usageAttributes(event.usage),
          ...(event.stopReason && { "gen_ai.response.finish_reasons": [event.stopReason] }),
        },
        ...(event.stopReason === "error" && { error: event.errorMessage ?? "the model request failed" }),
      });
    } else if (event.type === "tool_call") {
      const span: SpanData = {
        name: `execute_tool ${event.toolName}`,
        ...child(toolSpanId(place.turn.spanId, event.toolCallId)),
        kind: "internal",
        startMs: ts,
        endMs,
        attributes: {
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": event.toolName,
          "gen_ai.tool.call.id": event.toolCallId,
        },
        // Until its result shows up: a tool call the turn never finished.
        error: "the tool call did not finish",
      };
      openTools.set(event.toolCallId, span);
      spans.push(span);
    } else if (event.type === "tool_result") {
      const span = openTools.get(event.toolCallId);
      if (span) {
        openTools.delete(event.toolCallId);
        span.endMs = Math.max(ts, span.startMs);
        if (event.isError) span.error = "the tool returned an error";
        else delete span.error;
      }
    }
    if (REQUEST_STARTS.has(event.type)) requestStart = Math.max(requestStart, ts);
  }
  return spans;
}
