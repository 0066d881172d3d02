import type { PiEvent } from "../../src/wrapper/normalize.js";

export interface AssistantSpec {
  text?: string | string[];
  thinking?: string;
  toolCalls?: Array<{ id: string; name: string; arguments?: Record<string, unknown> }>;
  stopReason?: string;
  errorMessage?: string;
  usage?: Record<string, unknown>;
  provider?: string;
  model?: string;
}

export const USAGE = {
  input: 10,
  output: 5,
  cacheRead: 2,
  cacheWrite: 1,
  totalTokens: 18,
  cost: { input: 0.001, output: 0.002, cacheRead: 0.0001, cacheWrite: 0.0002, total: 0.0033 },
};

/** An assistant `message_end` event shaped like pi's. */
export function assistantEnd(spec: AssistantSpec = {}): PiEvent {
  const texts = spec.text === undefined ? [] : Array.isArray(spec.text) ? spec.text : [spec.text];
  return {
    type: "message_end",
    message: {
      role: "assistant",
      content: [
        ...(spec.thinking ? [{ type: "thinking", thinking: spec.thinking }] : []),
        ...texts.map((text) => ({ type: "text", text })),
        ...(spec.toolCalls ?? []).map((call) => ({ type: "toolCall", arguments: {}, ...call })),
      ],
      api: "openai-completions",
      provider: spec.provider ?? "fake",
      model: spec.model ?? "fast",
      usage: spec.usage ?? USAGE,
      stopReason: spec.stopReason ?? "stop",
      ...(spec.errorMessage !== undefined && { errorMessage: spec.errorMessage }),
      timestamp: 1,
    },
  };
}

export const toolStart = (id: string, name: string, args: unknown = {}): PiEvent => ({
  type: "tool_execution_start",
  toolCallId: id,
  toolName: name,
  args,
});

export const toolEnd = (id: string, name: string, isError = false): PiEvent => ({
  type: "tool_execution_end",
  toolCallId: id,
  toolName: name,
  result: { content: [{ type: "text", text: "out" }] },
  isError,
});

export const retryStart = (attempt = 1): PiEvent => ({
  type: "auto_retry_start",
  attempt,
  maxAttempts: 3,
  delayMs: 2000,
  errorMessage: "429 rate limited",
});

export const agentStart = (): PiEvent => ({ type: "agent_start" });
export const turnStart = (): PiEvent => ({ type: "turn_start" });
export const turnEnd = (): PiEvent => ({ type: "turn_end" });
export const agentEnd = (willRetry?: boolean): PiEvent => ({
  type: "agent_end",
  messages: [],
  ...(willRetry !== undefined && { willRetry }),
});

/** pi 1.x's end of all automatic work of a run. */
export const agentSettled = (aborted = false): PiEvent => ({ type: "agent_settled", aborted });

/** pi's queue of accepted, undelivered messages (both lines print it on every change). */
export const queueUpdate = (steering: string[] = [], followUp: string[] = []): PiEvent => ({
  type: "queue_update",
  steering,
  followUp,
});

/** pi 1.x's system message (its prompt sections), before the first user message. */
export const systemMessage = (): PiEvent => ({
  type: "message_end",
  message: { role: "system", content: "", sections: { preamble: "You are a coding assistant" }, timestamp: 1 },
});
