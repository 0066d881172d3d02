/**
 * The SDK's OTLP/HTTP export, end to end against a receiver in the test that decodes what
 * arrives, in both encodings; and a collector that never answers costs the export time-out
 * and one line, never a throw.
 */
import net from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { preloadSdk } from "../../../src/telemetry/otlp-export.js";
import type { SpanData } from "../../../src/telemetry/span-data.js";
import { exportIfTracing } from "../../../src/telemetry/tracing.js";
import { type OtlpReceiver, startOtlpReceiver } from "../../support/otlp-receiver.js";

const TRACE = "0af7651916cd43dd8448eb211c80319c";
const T0 = Date.parse("2026-12-03T10:00:00.000Z");
const SPANS: SpanData[] = [
  {
    name: "invoke_agent /root/a",
    traceId: TRACE,
    spanId: "b7ad6b7169203331",
    parentSpanId: "00f067aa0ba902b7",
    sampled: true,
    kind: "internal",
    startMs: T0,
    endMs: T0 + 500,
    attributes: {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "/root/a",
      "gen_ai.usage.input_tokens": 12,
    },
    error: "failed",
  },
  {
    name: "chat p/m",
    traceId: TRACE,
    spanId: "1111111111111111",
    parentSpanId: "b7ad6b7169203331",
    sampled: true,
    kind: "client",
    startMs: T0 + 10,
    endMs: T0 + 20,
    attributes: { "gen_ai.response.finish_reasons": ["stop"], "pi_subagent.cost_usd": 0.5 },
  },
];

/** The SDK reads the standard variables from process.env, as it would in the wrapper. */
async function exportWith(env: Record<string, string>, lines: string[]) {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    return await exportIfTracing(SPANS, env, (line) => lines.push(line));
  } finally {
    for (const key of Object.keys(env)) if (saved[key] === undefined) delete process.env[key];
  }
}

let receiver: OtlpReceiver | undefined;
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

describe.each(["http/protobuf", "http/json"])("export over %s", (protocol) => {
  it("the receiver decodes the spans with their ids, parents, times, attributes, status and service", async () => {
    receiver = await startOtlpReceiver();
    const lines: string[] = [];
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      OTEL_EXPORTER_OTLP_HEADERS: "x-team=trees",
    };
    expect(await exportWith(env, lines)).toEqual({ sent: 2 });
    expect(lines).toEqual([]);
    const spans = await receiver.waitForSpans(2);
    const byName = new Map(spans.map((span) => [span.name, span]));
    const turn = byName.get("invoke_agent /root/a")!;
    expect(turn).toMatchObject({
      traceId: TRACE,
      spanId: "b7ad6b7169203331",
      parentSpanId: "00f067aa0ba902b7",
      kind: 1,
      startMs: T0,
      endMs: T0 + 500,
      statusCode: 2,
      statusMessage: "failed",
      encoding: protocol === "http/json" ? "json" : "protobuf",
    });
    expect(turn.attributes).toMatchObject({ "gen_ai.agent.name": "/root/a", "gen_ai.usage.input_tokens": 12 });
    expect(turn.resource["service.name"]).toBe("pi-subagent-tree");
    const chat = byName.get("chat p/m")!;
    expect(chat).toMatchObject({ parentSpanId: "b7ad6b7169203331", kind: 3, statusCode: 1 });
    expect(chat.attributes).toMatchObject({ "gen_ai.response.finish_reasons": ["stop"], "pi_subagent.cost_usd": 0.5 });
    expect(receiver.headers[0]!["x-team"]).toBe("trees");
  });
});

describe("preloaded while the work runs", () => {
  it("the exporter's first request (empty: no spans) goes ahead; the export after it sends the spans, and only them", async () => {
    receiver = await startOtlpReceiver();
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url };
    const saved = { ...process.env };
    Object.assign(process.env, env);
    try {
      await preloadSdk(env);
      await vi.waitFor(() => expect(receiver!.headers).toHaveLength(1));
      expect(receiver.spans).toEqual([]);
    } finally {
      if (saved.OTEL_EXPORTER_OTLP_ENDPOINT === undefined) delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    }
    const lines: string[] = [];
    expect(await exportWith(env, lines)).toEqual({ sent: 2 });
    expect(lines).toEqual([]);
    expect((await receiver.waitForSpans(2)).map((span) => span.name).sort()).toEqual([
      "chat p/m",
      "invoke_agent /root/a",
    ]);
    expect(receiver.headers).toHaveLength(2);
  });

  it("a collector that is down: the warm-up says nothing, the export one line", async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_EXPORTER_OTLP_TIMEOUT: "500" };
    const saved = { ...process.env };
    Object.assign(process.env, env);
    try {
      await preloadSdk(env);
    } finally {
      for (const key of Object.keys(env)) if (saved[key] === undefined) delete process.env[key];
    }
    const lines: string[] = [];
    expect((await exportWith(env, lines))?.sent).toBe(0);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^tracing: could not send 2 spans: /);
  });
});

describe("a collector that does not help", () => {
  it("one that never answers: the export ends at its time-out with one line", async () => {
    // The receiver sees the connection: the export did go there, and waited.
    receiver = await startOtlpReceiver("silent");
    const lines: string[] = [];
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_TIMEOUT: "300" };
    const outcome = await exportWith(env, lines);
    expect(outcome?.sent).toBe(0);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^tracing: could not send 2 spans: /);
    expect(receiver.connections).toBeGreaterThan(0);
  });

  it("one that is down: one line", async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    const lines: string[] = [];
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_EXPORTER_OTLP_TIMEOUT: "500" };
    expect((await exportWith(env, lines))?.sent).toBe(0);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^tracing: could not send 2 spans: /);
  });

  it("no endpoint: nothing is exported and nothing said", async () => {
    const lines: string[] = [];
    expect(await exportIfTracing(SPANS, {}, (line) => lines.push(line))).toBeUndefined();
    expect(lines).toEqual([]);
  });
});
