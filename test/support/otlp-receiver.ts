/**
 * An OTLP/HTTP trace receiver on 127.0.0.1 for tests: it decodes what the OpenTelemetry SDK
 * sends, JSON (`application/json`) and protobuf (`application/x-protobuf`, with the OTLP
 * trace proto below and protobufjs), into plain spans. `mode: "silent"` accepts connections
 * and never answers: a collector that hangs.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import protobuf from "protobufjs";

/** The part of opentelemetry/proto/collector/trace/v1 and trace/v1 a test reads (field numbers as upstream). */
const OTLP_TRACE_PROTO = `
syntax = "proto3";
package otlp;
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; string schema_url = 3; }
message Resource { repeated KeyValue attributes = 1; }
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; }
message InstrumentationScope { string name = 1; string version = 2; }
message Span {
  bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; bytes parent_span_id = 4; string name = 5;
  int32 kind = 6; fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9; Status status = 15; fixed32 flags = 16;
}
message Status { string message = 2; int32 code = 3; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue {
  oneof value {
    string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4;
    ArrayValue array_value = 5; KeyValueList kvlist_value = 6; bytes bytes_value = 7;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
`;

const requestType = protobuf
  .parse(OTLP_TRACE_PROTO, { keepCase: false })
  .root.lookupType("otlp.ExportTraceServiceRequest");

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** OTLP span kind: 1 internal, 3 client. */
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  statusMessage: string;
  resource: Record<string, unknown>;
  /** `json` or `protobuf`: how it arrived. */
  encoding: string;
}

type Any = Record<string, unknown>;

function anyValue(value: Any | undefined): unknown {
  if (!value) return undefined;
  if ("stringValue" in value) return value.stringValue;
  if ("boolValue" in value) return value.boolValue;
  if ("intValue" in value) return Number(value.intValue);
  if ("doubleValue" in value) return Number(value.doubleValue);
  if ("arrayValue" in value) return ((value.arrayValue as Any).values as Any[] | undefined)?.map(anyValue) ?? [];
  return undefined;
}

function attributes(list: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of (list as Any[] | undefined) ?? []) out[kv.key as string] = anyValue(kv.value as Any);
  return out;
}

/** Ids: hex strings in JSON, bytes (Buffer) in protobuf. */
const hex = (id: unknown): string => (typeof id === "string" ? id : Buffer.from(id as Uint8Array).toString("hex"));

function spansOf(body: Any, encoding: string): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of (body.resourceSpans as Any[] | undefined) ?? []) {
    const resource = attributes((rs.resource as Any | undefined)?.attributes);
    for (const ss of (rs.scopeSpans as Any[] | undefined) ?? [])
      for (const span of (ss.spans as Any[] | undefined) ?? []) {
        const parent = span.parentSpanId === undefined ? "" : hex(span.parentSpanId);
        const status = (span.status as Any | undefined) ?? {};
        out.push({
          traceId: hex(span.traceId),
          spanId: hex(span.spanId),
          parentSpanId: parent === "" ? undefined : parent,
          name: span.name as string,
          kind: Number(span.kind ?? 0),
          startMs: Number(BigInt(String(span.startTimeUnixNano)) / 1_000_000n),
          endMs: Number(BigInt(String(span.endTimeUnixNano)) / 1_000_000n),
          attributes: attributes(span.attributes),
          statusCode: Number(status.code ?? 0),
          statusMessage: String(status.message ?? ""),
          resource,
          encoding,
        });
      }
  }
  return out;
}

export interface OtlpReceiver {
  /** The base endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`); traces arrive at `<url>/v1/traces`. */
  url: string;
  spans: ReceivedSpan[];
  /** Request headers of each export, in order. */
  headers: http.IncomingHttpHeaders[];
  /** Requests that reached it, answered or not. */
  readonly connections: number;
  /** Resolves once at least `count` spans arrived (the test's own time-out bounds it). */
  waitForSpans(count: number): Promise<ReceivedSpan[]>;
  /** Resolves once the spans received so far satisfy `done`. */
  waitUntil(done: (spans: ReceivedSpan[]) => boolean): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

export async function startOtlpReceiver(mode: "answer" | "silent" = "answer"): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const headers: http.IncomingHttpHeaders[] = [];
  const waiters = new Set<() => void>();
  let connections = 0;
  const server = http.createServer((req, res) => {
    connections += 1;
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      if (mode === "silent") return;
      headers.push(req.headers);
      const raw = Buffer.concat(chunks);
      const json = String(req.headers["content-type"] ?? "").includes("json");
      const body = json
        ? (JSON.parse(raw.toString("utf8")) as Any)
        : (requestType.toObject(requestType.decode(raw), { longs: String, bytes: Buffer, defaults: false }) as Any);
      spans.push(...spansOf(body, json ? "json" : "protobuf"));
      for (const wake of waiters) wake();
      res.writeHead(200, { "content-type": json ? "application/json" : "application/x-protobuf" });
      res.end(json ? "{}" : "");
    });
  });
  const waitUntil = (done: (received: ReceivedSpan[]) => boolean) =>
    new Promise<ReceivedSpan[]>((resolve) => {
      const check = () => {
        if (!done(spans)) return;
        waiters.delete(check);
        resolve(spans);
      };
      waiters.add(check);
      check();
    });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    headers,
    get connections() {
      return connections;
    },
    waitForSpans: (count) => waitUntil(() => spans.length >= count),
    waitUntil: (done) => waitUntil(done),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
