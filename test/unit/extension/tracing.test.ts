/**
 * The extension's part of the trace: each turn it starts names, in its meta.json `env`, the
 * span of the tool call that asked for it (known from the async context of the tool's
 * execute), which is the span id the turn's wrapper gives that tool call.
 */
import { describe, expect, it } from "vitest";
import { TreeTracing } from "../../../src/extension/tracing.js";
import { parseTraceparent } from "../../../src/telemetry/trace-context.js";
import { toolSpanId } from "../../../src/telemetry/turn-spans.js";

const CHILD_TURN = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const child = { self: "/root/alpha", isRoot: false, treeDir: "/tmp/tree" };
const root = { self: "/root", isRoot: true, treeDir: undefined };

describe("TRACEPARENT for the turns an agent starts", () => {
  it("in a child: inside a tool call, that call's span; outside one, the turn's own", async () => {
    const tracing = new TreeTracing(child, { TRACEPARENT: CHILD_TURN });
    const tool = TreeTracing.inToolCall({
      name: "spawn_agent",
      execute: async (_id: string) => {
        await Promise.resolve();
        return tracing.turnEnv();
      },
    });
    const inside = parseTraceparent((await tool.execute("call_7")).TRACEPARENT);
    expect(inside).toEqual({
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: toolSpanId("00f067aa0ba902b7", "call_7"),
      sampled: true,
    });
    expect(tracing.turnEnv()).toEqual({ TRACEPARENT: CHILD_TURN });
  });

  it("a child without a TRACEPARENT (tracing off) and a root without an endpoint pass nothing on", () => {
    expect(new TreeTracing(child, {}).turnEnv()).toEqual({});
    expect(new TreeTracing(root, { TRACEPARENT: CHILD_TURN }).turnEnv()).toEqual({});
  });

  it("a root with an endpoint names its running turn, after agent_start", () => {
    const handlers = new Map<string, (event: unknown) => void>();
    const pi = { on: (name: string, handler: (event: unknown) => void) => handlers.set(name, handler) };
    const tracing = new TreeTracing(root, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9" });
    tracing.watch(pi as never, () => () => undefined);
    expect(tracing.turnEnv()).toEqual({});
    handlers.get("agent_start")!({});
    const turn = parseTraceparent(tracing.turnEnv().TRACEPARENT);
    expect(turn?.spanId).toMatch(/^[0-9a-f]{16}$/);
  });
});
