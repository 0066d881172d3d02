/**
 * Sends finished spans to an OTLP/HTTP collector with the OpenTelemetry JS SDK. Only ever
 * loaded with `import()` once tracing.ts saw an OTLP endpoint: a run with tracing off never
 * loads the SDK.
 *
 * The SDK's tracer makes the spans, so its sampler (`OTEL_TRACES_SAMPLER`), resource
 * (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`) and exporter settings
 * (`OTEL_EXPORTER_OTLP_*` endpoint, headers, protocol, timeout) apply as the standard says.
 * Their ids are not the SDK's to choose: other processes already named them as parents.
 * The SDK's own modules are imported inside the functions too: the wrapper's run path is
 * bundled into one file (scripts/bundle-wrapper.mjs), where a static import would become a
 * require() at its top, loaded with tracing off.
 */
import type { Context, SpanContext, Tracer } from "@opentelemetry/api";
import type { IdGenerator, InMemorySpanExporter, ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-base";
import type { SpanData } from "./span-data.js";
import { exportTimeoutMs, type SpanExportOutcome } from "./tracing.js";

/** Hands the tracer the ids the span data already has. */
class GivenIds implements IdGenerator {
  traceId = "";
  spanId = "";
  generateTraceId(): string {
    return this.traceId;
  }
  generateSpanId(): string {
    return this.spanId;
  }
}

const DEFAULT_SERVICE_NAME = "pi-subagent-tree";

/** `http/protobuf` (the standard's default) or `http/json`; anything else (grpc) is said once and sent as protobuf. */
function protocolOf(
  env: Record<string, string | undefined>,
  warn: (line: string) => void,
): "http/json" | "http/protobuf" {
  const asked = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? "").trim();
  if (asked === "http/json") return "http/json";
  if (asked !== "" && asked !== "http/protobuf")
    warn(`OTLP protocol "${asked}" is not supported here; traces are sent as http/protobuf`);
  return "http/protobuf";
}

type ExporterClass = new (config: { timeoutMillis: number }) => SpanExporter;

/** The exporter's module for the protocol, imported once per process. */
const exporterModules = new Map<string, Promise<ExporterClass>>();

function exporterClass(protocol: "http/json" | "http/protobuf"): Promise<ExporterClass> {
  let loading = exporterModules.get(protocol);
  if (!loading) {
    loading =
      protocol === "http/json"
        ? import("@opentelemetry/exporter-trace-otlp-http").then((m) => m.OTLPTraceExporter)
        : import("@opentelemetry/exporter-trace-otlp-proto").then((m) => m.OTLPTraceExporter);
    exporterModules.set(protocol, loading);
  }
  return loading;
}

async function makeExporter(
  env: Record<string, string | undefined>,
  warn: (line: string) => void,
): Promise<SpanExporter> {
  const Exporter = await exporterClass(protocolOf(env, warn));
  return new Exporter({ timeoutMillis: exportTimeoutMs(env) });
}

/**
 * An exporter made ahead of the export and already through its first request, for the next
 * export to take: the first request of a process is the slow one (the HTTP client's code, the
 * connection: 15–60 ms on a loaded machine, against 1–2 ms for the next one).
 */
let warmExporter: SpanExporter | undefined;
let warming = false;

/**
 * Imports the SDK and the exporter ahead of the export, while the traced work runs, and warms
 * both: the tracer with a span its sampler drops, the exporter with one empty export request
 * (no spans: the collector stores nothing). All of it would otherwise come after the work.
 * The warm-up's own outcome is not waited for nor reported: the export at the end says what
 * the collector did.
 */
export async function preloadSdk(env: Record<string, string | undefined>): Promise<void> {
  await Promise.all([
    import("@opentelemetry/api"),
    import("@opentelemetry/core"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/sdk-trace-base"),
    exporterClass(protocolOf(env, () => undefined)),
  ]);
  // A span its sampler drops (its parent is not sampled): the tracer's first use is paid now too.
  await recordSpans([WARM_UP_SPAN]);
  // One warm exporter at a time: a second preload before the export finds it ready.
  if (warmExporter || warming) return;
  warming = true;
  try {
    const exporter = await makeExporter(env, () => undefined);
    exporter.export([], () => undefined);
    warmExporter = exporter;
  } finally {
    warming = false;
  }
}

const WARM_UP_SPAN: SpanData = {
  name: "warm-up",
  traceId: "00000000000000000000000000000001",
  spanId: "0000000000000001",
  parentSpanId: "0000000000000002",
  sampled: false,
  kind: "internal",
  startMs: 0,
  endMs: 0,
  attributes: {},
};

interface SpanRecorder {
  ids: GivenIds;
  memory: InMemorySpanExporter;
  tracer: Tracer;
}

/** The tracer the spans go through, made once per process (the preload makes it, off the export's path). */
let recorder: Promise<SpanRecorder> | undefined;

async function makeRecorder(): Promise<SpanRecorder> {
  const [{ detectResources, envDetector, resourceFromAttributes }, sdk] = await Promise.all([
    import("@opentelemetry/resources"),
    import("@opentelemetry/sdk-trace-base"),
  ]);
  const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = sdk;
  const ids = new GivenIds();
  const memory = new InMemorySpanExporter();
  // envDetector reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; without them the service is this package.
  const serviceName = process.env.OTEL_SERVICE_NAME?.trim() ? {} : { "service.name": DEFAULT_SERVICE_NAME };
  const provider = new BasicTracerProvider({
    idGenerator: ids,
    resource: resourceFromAttributes(serviceName).merge(detectResources({ detectors: [envDetector] })),
    spanProcessors: [new SimpleSpanProcessor(memory)],
  });
  return { ids, memory, tracer: provider.getTracer("pi-subagent-tree") };
}

/** The spans through the SDK's tracer (sampler, resource, limits), collected in memory. */
async function recordSpans(spans: readonly SpanData[]): Promise<ReadableSpan[]> {
  recorder ??= makeRecorder();
  const [{ context, SpanKind, SpanStatusCode, trace }, { ids, memory, tracer }] = await Promise.all([
    import("@opentelemetry/api"),
    recorder,
  ]);
  // From here to the finished spans nothing waits: another export's spans never mix in.
  memory.reset();
  for (const span of spans) {
    ids.traceId = span.traceId;
    ids.spanId = span.spanId;
    const parent: Context = span.parentSpanId
      ? trace.setSpanContext(context.active(), {
          traceId: span.traceId,
          spanId: span.parentSpanId,
          traceFlags: span.sampled ? 1 : 0,
          isRemote: true,
        } satisfies SpanContext)
      : trace.deleteSpan(context.active());
    const made = tracer.startSpan(
      span.name,
      {
        kind: span.kind === "client" ? SpanKind.CLIENT : SpanKind.INTERNAL,
        startTime: span.startMs,
        attributes: span.attributes,
      },
      parent,
    );
    made.setStatus(
      span.error === undefined ? { code: SpanStatusCode.OK } : { code: SpanStatusCode.ERROR, message: span.error },
    );
    made.end(span.endMs);
  }
  return memory.getFinishedSpans();
}

/** Sends the spans; resolves (never rejects) once the collector answered or the export timed out. */
export async function exportSpans(
  spans: readonly SpanData[],
  env: Record<string, string | undefined>,
  warn: (line: string) => void,
): Promise<SpanExportOutcome> {
  const recorded = await recordSpans(spans);
  if (recorded.length === 0) return { sent: 0 };
  // The warm exporter once: each export shuts its exporter down after it.
  const exporter = warmExporter ?? (await makeExporter(env, warn));
  warmExporter = undefined;
  const { ExportResultCode } = await import("@opentelemetry/core");
  try {
    const outcome = await new Promise<SpanExportOutcome>((resolve) => {
      // The exporter keeps its own time-out; this one is the last word, a little later.
      const timer = setTimeout(
        () => resolve({ sent: 0, error: "the collector did not answer in time" }),
        exportTimeoutMs(env) + 500,
      );
      exporter.export(recorded, (result) => {
        clearTimeout(timer);
        resolve(
          result.code === ExportResultCode.SUCCESS
            ? { sent: recorded.length }
            : { sent: 0, error: result.error?.message ?? "the collector refused the spans" },
        );
      });
    });
    return outcome;
  } finally {
    // No socket or timer of the exporter may keep the process alive after it.
    void exporter.shutdown().catch(() => undefined);
  }
}
