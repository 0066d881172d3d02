/**
 * W3C trace context (`TRACEPARENT`), the one thing every process of a tree passes down so its
 * spans join one trace, and the switch that turns tracing on. Pure and free of the
 * OpenTelemetry SDK: a process with tracing off loads nothing more than this file.
 */
import { createHash, randomBytes } from "node:crypto";
import { ENV } from "../contracts/env.js";

/** The environment variable that carries a span's context to a child process (W3C trace context). */
export const TRACEPARENT = ENV.traceparent;

/** The standard variables that switch on the OTLP trace exporter; with neither set nothing is traced. */
export const OTLP_ENDPOINT_VARIABLES = [ENV.otlpTracesEndpoint, ENV.otlpEndpoint] as const;

export interface SpanContextIds {
  /** 32 lower-case hex digits. */
  traceId: string;
  /** 16 lower-case hex digits. */
  spanId: string;
  /** W3C trace flags: bit 0 says the trace is sampled. */
  sampled: boolean;
}

/** True when the environment names an OTLP endpoint for traces. */
export function tracingEnabled(env: Record<string, string | undefined>): boolean {
  return OTLP_ENDPOINT_VARIABLES.some((name) => (env[name] ?? "").trim() !== "");
}

const TRACEPARENT_PATTERN = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A `TRACEPARENT` value's ids, or undefined when it is absent or not a valid version-00 header. */
export function parseTraceparent(value: string | undefined): SpanContextIds | undefined {
  const match = TRACEPARENT_PATTERN.exec((value ?? "").trim().toLowerCase());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags] = match as unknown as [string, string, string, string, string];
  // All-zero ids are invalid, and version ff is forbidden by the W3C format.
  if (version === "ff" || /^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, sampled: (Number.parseInt(flags, 16) & 1) === 1 };
}

export function formatTraceparent(ids: SpanContextIds): string {
  return `00-${ids.traceId}-${ids.spanId}-${ids.sampled ? "01" : "00"}`;
}

export function randomTraceId(): string {
  return randomBytes(16).toString("hex");
}

export function randomSpanId(): string {
  return randomBytes(8).toString("hex");
}

/**
 * A span id both sides can compute without talking to each other: the wrapper builds a
 * turn's tool-call spans from events.jsonl after the turn, while the extension inside that
 * turn already had to name the spawn_agent span as its grandchild's parent. Both derive it
 * from the turn's span id and the tool call's id.
 */
export function derivedSpanId(parentSpanId: string, key: string): string {
  const hex = createHash("sha256").update(`${parentSpanId}\n${key}`).digest("hex").slice(0, 16);
  return /^0+$/.test(hex) ? "0000000000000001" : hex;
}

/** The context a child process gets for a span of this one: same trace, same sampling decision. */
export function childContext(parent: SpanContextIds, spanId: string): SpanContextIds {
  return { traceId: parent.traceId, spanId, sampled: parent.sampled };
}
