/**
 * Reading `pi --mode json` output in tests. Shapes follow pi 0.73.1's output; they are
 * loose on purpose so a test asserts on what it cares about.
 */

import type { Usage } from "../../src/contracts/usage.js";

export type PiContent =
  | { type: "text"; text: string }
  | { type: "thinking"; thinking: string; thinkingSignature?: string }
  | { type: "toolCall"; id: string; name: string; arguments: unknown };

export interface PiMessage {
  role: "user" | "assistant" | "toolResult" | string;
  content: PiContent[] | string;
  api?: string;
  provider?: string;
  model?: string;
  usage?: Usage;
  stopReason?: string;
  errorMessage?: string;
  responseId?: string;
  timestamp?: number;
  [key: string]: unknown;
}

export interface PiEvent {
  type: string;
  message?: PiMessage;
  [key: string]: unknown;
}

/** Parses NDJSON strictly: stdout of json mode must hold nothing else. */
export function parseNdjson(stdout: string): PiEvent[] {
  return stdout
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line, i) => {
      try {
        return JSON.parse(line) as PiEvent;
      } catch {
        throw new Error(`stdout line ${i + 1} is not JSON: ${line.slice(0, 200)}`);
      }
    });
}

/** Event types in order, without the noisy `message_update` / `tool_execution_update`. */
export function eventTypes(events: PiEvent[]): string[] {
  return events.map((e) => e.type).filter((t) => t !== "message_update" && t !== "tool_execution_update");
}

export function ofType(events: PiEvent[], type: string): PiEvent[] {
  return events.filter((e) => e.type === type);
}

/** Assistant messages from `message_end` events, in order. */
export function assistantMessages(events: PiEvent[]): PiMessage[] {
  return ofType(events, "message_end")
    .map((e) => e.message)
    .filter((m): m is PiMessage => m?.role === "assistant");
}

export function lastAssistant(events: PiEvent[]): PiMessage | undefined {
  return assistantMessages(events).at(-1);
}

/** Text blocks of a message joined by "\n" (the wrapper's `assistant_text` rule, untrimmed). */
export function messageText(message: PiMessage | undefined): string {
  if (!message) return "";
  if (typeof message.content === "string") return message.content;
  return message.content
    .filter((c): c is { type: "text"; text: string } => c.type === "text")
    .map((c) => c.text)
    .join("\n");
}
