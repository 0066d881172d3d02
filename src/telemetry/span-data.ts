/**
 * A finished span as plain data: what the span builders produce and the exporter turns into
 * OpenTelemetry spans. Ids are fixed before export because other processes already used them
 * as their parent (trace-context.ts).
 */
export type SpanAttributeValue = string | number | boolean | string[];

export interface SpanData {
  name: string;
  traceId: string;
  spanId: string;
  /** Absent for the first span of a trace. */
  parentSpanId?: string;
  /** The parent's sampling decision (a span without a parent is sampled by the exporter's sampler). */
  sampled: boolean;
  kind: "internal" | "client";
  startMs: number;
  endMs: number;
  attributes: Record<string, SpanAttributeValue>;
  /** Set when the work failed: the error's text. */
  error?: string;
}
