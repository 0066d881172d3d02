import { describe, expect, it } from "vitest";
import type { EventRecord } from "../../../src/contracts/events.js";
import type { ResultV1 } from "../../../src/contracts/result.js";
import { emptyUsage } from "../../../src/contracts/usage.js";
import { RootTurnSpans } from "../../../src/telemetry/root-spans.js";
import {
  derivedSpanId,
  formatTraceparent,
  parseTraceparent,
  tracingEnabled,
} from "../../../src/telemetry/trace-context.js";
import { toolSpanId, turnSpans } from "../../../src/telemetry/turn-spans.js";

const T0 = Date.parse("2026-12-03T10:00:00.000Z");
const TURN = { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", sampled: true };
const PARENT_SPAN = "00f067aa0ba902b7";

function usage(input: number, output: number, cost: number) {
  const u = emptyUsage();
  return { ...u, input, output, totalTokens: input + output, cost: { ...u.cost, total: cost } };
}

function result(over: Partial<ResultV1> = {}): ResultV1 {
  return {
    version: 1,
    runId: "run-1",
    agentPath: "/root/alpha",
    status: "completed",
    exitCode: 0,
    finalText: "done",
    usage: usage(300, 40, 0.012),
    turns: 2,
    toolCalls: 1,
    requestedModel: "scripted/model-a",
    resolvedModel: "scripted/model-a",
    startedAt: new Date(T0).toISOString(),
    endedAt: new Date(T0 + 1000).toISOString(),
    durationMs: 1000,
    childExitCode: 0,
    childSignal: null,
    forcedExit: false,
    ...over,
  } as ResultV1;
}

let seq = 0;
const at = (ms: number, body: object) => ({ ...body, seq: ++seq, ts: T0 + ms }) as EventRecord;

const EVENTS: EventRecord[] = [
  at(10, { type: "run_start", runId: "run-1", pid: 1, argv: [] }),
  at(200, {
    type: "assistant_text",
    text: "",
    model: "scripted/model-a",
    stopReason: "toolUse",
    usage: usage(100, 20, 0.004),
  }),
  at(210, { type: "tool_call", toolCallId: "call_1", toolName: "spawn_agent", args: {} }),
  at(400, { type: "tool_result", toolCallId: "call_1", toolName: "spawn_agent", isError: false }),
  at(900, {
    type: "assistant_text",
    text: "done",
    model: "scripted/model-a",
    stopReason: "stop",
    usage: usage(200, 20, 0.008),
  }),
  at(950, { type: "run_end", status: "completed", exitCode: 0 }),
];

describe("a turn's spans from events.jsonl", () => {
  const spans = turnSpans(EVENTS, result(), { turn: TURN, parentSpanId: PARENT_SPAN });

  it("one invoke_agent span under the parent's tool call, with the GenAI attributes, cost and status", () => {
    const [turn] = spans;
    expect(turn).toMatchObject({
      name: "invoke_agent /root/alpha",
      traceId: TURN.traceId,
      spanId: TURN.spanId,
      parentSpanId: PARENT_SPAN,
      startMs: T0,
      endMs: T0 + 1000,
    });
    expect(turn!.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "/root/alpha",
      "gen_ai.request.model": "scripted/model-a",
      "gen_ai.usage.input_tokens": 300,
      "gen_ai.usage.output_tokens": 40,
      "pi_subagent.cost_usd": 0.012,
      "pi_subagent.status": "completed",
    });
    expect(turn!.error).toBeUndefined();
  });

  it("a chat span per model request, from the previous step to its answer, inside the turn", () => {
    const chats = spans.filter((span) => span.name.startsWith("chat"));
    expect(chats.map((span) => [span.startMs - T0, span.endMs - T0, span.parentSpanId])).toEqual([
      [10, 200, TURN.spanId],
      [400, 900, TURN.spanId],
    ]);
    expect(chats[1]!.attributes).toMatchObject({
      "gen_ai.usage.input_tokens": 200,
      "gen_ai.response.finish_reasons": ["stop"],
    });
  });

  it("a tool span from call to result whose id the extension inside the turn derives too", () => {
    const tool = spans.find((span) => span.name === "execute_tool spawn_agent")!;
    expect(tool).toMatchObject({ startMs: T0 + 210, endMs: T0 + 400, parentSpanId: TURN.spanId });
    expect(tool.spanId).toBe(toolSpanId(TURN.spanId, "call_1"));
    expect(tool.error).toBeUndefined();
  });

  it("a failed turn, a limit, a verification and an unfinished tool call say so", () => {
    const failed = turnSpans(
      EVENTS.slice(0, 3),
      {
        ...result({
          status: "failed",
          errorMessage: "pi exited with code 1",
          limit: { name: "max_turns", value: 1, used: 1 },
        }),
        verification: { status: "passed" },
      } as ResultV1,
      { turn: TURN },
    );
    expect(failed[0]!.error).toBe("pi exited with code 1");
    expect(failed[0]!.parentSpanId).toBeUndefined();
    expect(failed[0]!.attributes).toMatchObject({
      "pi_subagent.limit": "max_turns",
      "pi_subagent.verification": "passed",
    });
    const tool = failed.find((span) => span.name.startsWith("execute_tool"))!;
    expect(tool.error).toBe("the tool call did not finish");
    expect(tool.endMs).toBe(T0 + 1000);
  });
});

describe("TRACEPARENT", () => {
  it("round-trips, keeps the sampled flag and refuses malformed or all-zero values", () => {
    const value = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    expect(formatTraceparent(parseTraceparent(value)!)).toBe(value);
    expect(parseTraceparent(value.replace(/-01$/, "-00"))!.sampled).toBe(false);
    for (const bad of [
      undefined,
      "",
      "garbage",
      value.replace("0af7", "zzzz"),
      `00-${"0".repeat(32)}-b7ad6b7169203331-01`,
      value.replace(/^00/, "ff"),
    ])
      expect(parseTraceparent(bad)).toBeUndefined();
  });

  it("tracing is on only with an OTLP endpoint variable", () => {
    expect(tracingEnabled({})).toBe(false);
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: " " })).toBe(false);
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" })).toBe(true);
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:4318/v1/traces" })).toBe(true);
  });

  it("derived span ids are stable, distinct per key and well-formed", () => {
    expect(derivedSpanId("b7ad6b7169203331", "a")).toBe(derivedSpanId("b7ad6b7169203331", "a"));
    expect(derivedSpanId("b7ad6b7169203331", "a")).not.toBe(derivedSpanId("b7ad6b7169203331", "b"));
    expect(derivedSpanId("b7ad6b7169203331", "a")).toMatch(/^[0-9a-f]{16}$/);
  });
});

describe("the root's turns from pi's events", () => {
  it("one trace per prompt: the turn, its requests and tools inside it, the tool id derivable", () => {
    const root = new RootTurnSpans("/root", undefined);
    root.agentStart(T0);
    root.requestStart(T0 + 1);
    root.requestEnd(T0 + 50, "p/m", usage(10, 5, 0.001), "toolUse");
    const turn = root.current!;
    root.toolStart(T0 + 60, "call_9", "spawn_agent");
    root.toolEnd(T0 + 70, "call_9", false);
    root.requestStart(T0 + 71);
    root.requestEnd(T0 + 90, "p/m", usage(20, 5, 0.002), "stop");
    const spans = root.agentEnd(T0 + 100, "p/m");
    expect(spans.map((span) => span.name)).toEqual([
      "invoke_agent /root",
      "chat p/m",
      "execute_tool spawn_agent",
      "chat p/m",
    ]);
    expect(new Set(spans.map((span) => span.traceId))).toEqual(new Set([turn.traceId]));
    expect(spans[0]!.parentSpanId).toBeUndefined();
    expect(spans.slice(1).every((span) => span.parentSpanId === turn.spanId)).toBe(true);
    expect(spans[2]!.spanId).toBe(toolSpanId(turn.spanId, "call_9"));
    expect(spans[0]!.attributes).toMatchObject({ "gen_ai.usage.input_tokens": 30, "gen_ai.usage.output_tokens": 10 });
    root.agentStart(T0 + 200);
    expect(root.current!.traceId).not.toBe(turn.traceId);
  });

  it("under a TRACEPARENT of its own the root's turns join that trace", () => {
    const parent = parseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")!;
    const root = new RootTurnSpans("/root", parent);
    root.agentStart(T0);
    const [turn] = root.agentEnd(T0 + 1, undefined);
    expect(turn).toMatchObject({ traceId: parent.traceId, parentSpanId: parent.spanId });
  });
});
