/**
 * The run's place in the tree's trace, when an OTLP endpoint is set: the turn's span is a
 * child of the span named by `TRACEPARENT` (the parent's spawn_agent / followup_task call,
 * in meta.json `env`), and pi gets the turn's own `TRACEPARENT` so whatever it traces, and
 * the tool calls of this package inside it, nest under the turn. After result.json is
 * written the turn is exported from events.jsonl; a collector that is down costs the bounded
 * export wait and one line on the wrapper's stderr (wrapper.log), never the result.
 */
import fs from "node:fs/promises";
import type { EventRecord } from "../contracts/events.js";
import type { ResultV1 } from "../contracts/result.js";
import {
  formatTraceparent,
  parseTraceparent,
  randomSpanId,
  randomTraceId,
  type SpanContextIds,
  TRACEPARENT,
  tracingEnabled,
} from "../telemetry/trace-context.js";
import { exportIfTracing, preloadExporter } from "../telemetry/tracing.js";
import { turnSpans } from "../telemetry/turn-spans.js";

export class TurnTrace {
  private constructor(
    private readonly turn: SpanContextIds,
    private readonly parentSpanId: string | undefined,
    private readonly env: Record<string, string | undefined>,
  ) {}

  /** The run's trace when the wrapper's environment names an OTLP endpoint, else undefined (nothing is loaded). */
  static open(
    env: Record<string, string | undefined>,
    childEnv: Record<string, string | undefined>,
  ): TurnTrace | undefined {
    if (!tracingEnabled(env)) return undefined;
    const parent = parseTraceparent(childEnv[TRACEPARENT]);
    const turn = {
      traceId: parent?.traceId ?? randomTraceId(),
      spanId: randomSpanId(),
      sampled: parent?.sampled ?? true,
    };
    return new TurnTrace(turn, parent?.spanId, env);
  }

  /** `TRACEPARENT` for pi: the turn's own span. */
  get childTraceparent(): string {
    return formatTraceparent(this.turn);
  }

  private preloaded = false;

  /** At pi's first event (never before: its start comes first): the SDK loads while the turn runs. Once. */
  preload(): void {
    if (this.preloaded) return;
    this.preloaded = true;
    preloadExporter(this.env);
  }

  /** Sends the turn's spans; resolves whatever the collector does. */
  async export(result: ResultV1, eventsPath: string, warn: (line: string) => void): Promise<void> {
    const events = await readEvents(eventsPath);
    const place = { turn: this.turn, ...(this.parentSpanId && { parentSpanId: this.parentSpanId }) };
    await exportIfTracing(turnSpans(events, result, place), this.env, warn);
  }
}

async function readEvents(file: string): Promise<EventRecord[]> {
  const text = await fs.readFile(file, "utf8").catch(() => "");
  const events: EventRecord[] = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    try {
      events.push(JSON.parse(line) as EventRecord);
    } catch {
      // A torn last line (a crash while writing) only loses its own span.
    }
  }
  return events;
}
