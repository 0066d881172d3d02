/**
 * Agent scripts that can loop, and readers for what an agent received — no test runner here,
 * so scripts/stress-test (compiled into build/stress/) uses them as the e2e tests do.
 *
 * - `Program`: an agent script that can loop. routeByAgent consumes one step per request, so a
 *   "wait until every child has reported" or "page a report until next_offset is null" cannot
 *   be written as a fixed list. A Program hands routeByAgent a long run of identical steps,
 *   each asking the program for its next reply; a `loop` step keeps answering until it
 *   returns undefined. `extend()` adds steps later (a second pi process on the same session).
 * - readers for what a model received: every notice, the raw text of every tool result
 *   (tool errors are plain text), and the session files pi wrote.
 */
import fs from "node:fs";
import { type ChatRequest, type Reply, reply } from "./scripted-llm.js";
import { type AgentStep, lastToolResult, toolResults } from "./tree-llm.js";

// biome-ignore lint/suspicious/noExplicitAny: scripted programs read untyped JSON tool results
export type Json = Record<string, any>;

/** Answers while it returns a reply; the program moves on once it returns undefined. */
export interface LoopStep {
  loop: (req: ChatRequest) => Reply | undefined;
}

export type ProgramStep = AgentStep | LoopStep;

function isLoop(step: ProgramStep): step is LoopStep {
  return typeof step === "object" && step !== null && "loop" in step;
}

export class Program {
  private readonly queue: ProgramStep[];

  constructor(
    steps: ProgramStep[],
    private readonly after: Reply = reply.text("(program over)"),
  ) {
    this.queue = [...steps];
  }

  /** Steps for routeByAgent: each request asks the program for its next reply. */
  steps(max = 200): AgentStep[] {
    return Array.from({ length: max }, () => (req: ChatRequest) => this.next(req));
  }

  extend(...steps: ProgramStep[]): void {
    this.queue.push(...steps);
  }

  /** Steps not used yet (a finished scenario has none). */
  get remaining(): number {
    return this.queue.length;
  }

  private next(req: ChatRequest): Reply {
    while (this.queue.length > 0) {
      const step = this.queue[0]!;
      if (isLoop(step)) {
        const r = step.loop(req);
        if (r) return r;
        this.queue.shift();
        continue;
      }
      this.queue.shift();
      return typeof step === "function" ? step(req) : step;
    }
    return this.after;
  }
}

/** Every notice the agent got from wait_agent so far in this conversation, in order. */
export function noticesIn(req: ChatRequest): Json[] {
  return toolResults(req).flatMap((r) => (isObj(r) && Array.isArray(r.notices) ? (r.notices as Json[]) : []));
}

/** wait_agent until `done(notices)` holds for the notices received so far. */
export function waitUntil(done: (notices: Json[]) => boolean, timeoutMs = 20_000): LoopStep {
  return {
    loop: (req) => (done(noticesIn(req)) ? undefined : reply.toolCall("wait_agent", { timeout_ms: timeoutMs })),
  };
}

/** wait_agent until each of `agents` has sent a notice of a turn's end (any type but `message` and `question`). */
export function waitForAll(agents: string[], timeoutMs = 20_000): LoopStep {
  return waitUntil(
    (notices) =>
      agents.every((a) => notices.some((n) => n.agent_name === a && n.type !== "message" && n.type !== "question")),
    timeoutMs,
  );
}

/** wait_agent (short timeouts) until `condition()` holds, e.g. until a child's request arrived. */
export function waitWhile(condition: () => boolean, pollMs = 200): LoopStep {
  return { loop: () => (condition() ? reply.toolCall("wait_agent", { timeout_ms: pollMs }) : undefined) };
}

/** Pages a report with get_agent_report until next_offset is null (the first call included). */
export function readWholeReport(target: string): LoopStep {
  let started = false;
  return {
    loop: (req) => {
      if (!started) {
        started = true;
        return reply.toolCall("get_agent_report", { target });
      }
      const last = lastToolResult(req) as Json;
      return isObj(last) && typeof last.next_offset === "number"
        ? reply.toolCall("get_agent_report", { target, offset: last.next_offset })
        : undefined;
    },
  };
}

/** The raw text of every tool result in a request (errors are plain text, results JSON). */
export function toolTexts(req: ChatRequest): string[] {
  return (req.messages ?? [])
    .filter((m) => m.role === "tool")
    .map((m) =>
      typeof m.content === "string"
        ? m.content
        : (m.content as Array<{ text?: string }>).map((p) => p.text ?? "").join(""),
    );
}

/** The raw text of the tool result answering the call with `name` and arguments matching `args`. */
export function toolResultFor(req: ChatRequest, name: string, args: Json = {}): string[] {
  const calls = new Map<string, { name: string; args: Json }>();
  for (const m of req.messages ?? []) {
    for (const c of (m.tool_calls as
      | Array<{ id: string; function: { name: string; arguments: string } }>
      | undefined) ?? []) {
      calls.set(c.id, { name: c.function.name, args: JSON.parse(c.function.arguments || "{}") as Json });
    }
  }
  const out: string[] = [];
  for (const m of req.messages ?? []) {
    if (m.role !== "tool" || !m.tool_call_id) continue;
    const call = calls.get(m.tool_call_id);
    if (!call || call.name !== name) continue;
    if (!Object.entries(args).every(([k, v]) => JSON.stringify(call.args[k]) === JSON.stringify(v))) continue;
    out.push(
      typeof m.content === "string"
        ? m.content
        : (m.content as Array<{ text?: string }>).map((p) => p.text ?? "").join(""),
    );
  }
  return out;
}

/** The tools a request offered, sorted. */
export function toolNames(req: ChatRequest): string[] {
  return (req.tools ?? []).map((t) => t.function.name).sort();
}

/** A pi session file's entries (JSONL). */
export function readJsonl(file: string): Json[] {
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Json);
}

/** The `pi-subagents` custom entries of a root session, in order. */
export function agentEntries(sessionFile: string): Json[] {
  return readJsonl(sessionFile)
    .filter((e) => e.type === "custom" && e.customType === "pi-subagents")
    .map((e) => e.data as Json);
}

function isObj(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * `fake` (fast; deep: only high and xhigh) and a second provider `other` (alt, no reasoning)
 * on its own URL path and key, both sending reasoning_effort so a test sees the level.
 */
export function twoProviders(url: string): unknown {
  const compat = { supportsDeveloperRole: false, supportsReasoningEffort: true };
  return {
    providers: {
      fake: {
        baseUrl: url,
        api: "openai-completions",
        apiKey: "fake-key",
        compat,
        models: [
          { id: "fast", reasoning: true },
          {
            id: "deep",
            reasoning: true,
            thinkingLevelMap: { minimal: null, low: null, medium: null, high: "high", xhigh: "max" },
          },
        ],
      },
      other: {
        baseUrl: `${url}/other`,
        api: "openai-completions",
        apiKey: "other-key",
        compat,
        models: [{ id: "alt", reasoning: false }],
      },
    },
  };
}

export const spawn = (args: Json): Reply => reply.toolCall("spawn_agent", args);
