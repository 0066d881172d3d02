/**
 * The one entry to span export: a check of the environment, then the SDK loaded on demand
 * (otlp-export.ts). Tracing that fails never fails the work it traces: it costs a bounded
 * wait and one line.
 */
import { errorText } from "../lib/values.js";
import type { SpanData } from "./span-data.js";
import { tracingEnabled } from "./trace-context.js";

export interface SpanExportOutcome {
  sent: number;
  error?: string;
}

/** How long an export may wait for the collector: `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` / `OTEL_EXPORTER_OTLP_TIMEOUT` (ms), else 2 s, so a collector that is down or slow holds a run back little. */
export function exportTimeoutMs(env: Record<string, string | undefined>): number {
  const asked = Number(env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT ?? env.OTEL_EXPORTER_OTLP_TIMEOUT);
  return Number.isFinite(asked) && asked > 0 ? asked : 2000;
}

/**
 * Starts loading the SDK now, in the background, when the environment names an OTLP
 * endpoint: call it once the traced work is under way, so the export at its end finds the
 * modules loaded. A failure here is the export's to report.
 */
export function preloadExporter(env: Record<string, string | undefined>): void {
  if (!tracingEnabled(env)) return;
  void import("./otlp-export.js").then(({ preloadSdk }) => preloadSdk(env)).catch(() => undefined);
}

/**
 * Exports the spans when the environment names an OTLP endpoint; a failure is one line
 * through `warn` (`tracing: …`), never a throw.
 */
export async function exportIfTracing(
  spans: readonly SpanData[],
  env: Record<string, string | undefined>,
  warn: (line: string) => void,
): Promise<SpanExportOutcome | undefined> {
  if (!tracingEnabled(env) || spans.length === 0) return undefined;
  const say = (line: string) => warn(`tracing: ${line}`);
  try {
    const { exportSpans } = await import("./otlp-export.js");
    const outcome = await exportSpans(spans, env, say);
    if (outcome.error !== undefined) say(`could not send ${spans.length} spans: ${outcome.error}`);
    return outcome;
  } catch (err) {
    say(`could not send ${spans.length} spans: ${errorText(err)}`);
    return { sent: 0, error: errorText(err) };
  }
}
