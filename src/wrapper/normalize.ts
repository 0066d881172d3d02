import type { EventRecordBody, StopReason } from "../contracts/events.js";
import type { Usage } from "../contracts/usage.js";
import { normalizeUsage } from "../contracts/usage.js";
import { isRecord } from "../lib/values.js";
import { normalizeStopReason } from "./stop-reason.js";

/** A parsed pi json-mode event: only `type` is certain; everything else is checked on use. */
export type PiEvent = { type: string } & Record<string, unknown>;

/** What the wrapper needs from one assistant `message_end`. */
export interface AssistantSummary {
  /** Every text block, in order. */
  textBlocks: string[];
  /** All text blocks joined by `\n`, trimmed. */
  text: string;
  hasToolCall: boolean;
  stopReason: StopReason | undefined;
  rawStopReason: string | undefined;
  usage: Usage;
  /** `provider/id` when pi named both. */
  model: string | undefined;
  errorMessage: string | undefined;
}

const asString = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);

const asNumber = (value: unknown): number => (typeof value === "number" && Number.isFinite(value) ? value : 0);

/** The assistant message of a `message_end` event, or `undefined` for any other event. */
export function assistantFromEvent(event: PiEvent): AssistantSummary | undefined {
  if (event.type !== "message_end" || !isRecord(event.message) || event.message.role !== "assistant") {
    return undefined;
  }
  const message = event.message;
  const content = Array.isArray(message.content) ? message.content.filter(isRecord) : [];
  const textBlocks = content
    .filter((block) => block.type === "text" && typeof block.text === "string")
    .map((block) => block.text as string);
  const provider = asString(message.provider);
  const modelId = asString(message.model);
  return {
    textBlocks,
    text: textBlocks.join("\n").trim(),
    hasToolCall: content.some((block) => block.type === "toolCall"),
    ...normalizeStopReason(message.stopReason),
    usage: normalizeUsage(message.usage),
    model: provider && modelId ? `${provider}/${modelId}` : modelId,
    errorMessage: asString(message.errorMessage),
  };
}

/** One pi event → the events.jsonl records it produces (most events produce none). */
export function normalizePiEvent(event: PiEvent): EventRecordBody[] {
  switch (event.type) {
    case "message_end": {
      const assistant = assistantFromEvent(event);
      if (!assistant) return [];
      return [
        {
          type: "assistant_text",
          text: assistant.text,
          ...(assistant.model !== undefined && { model: assistant.model }),
          ...(assistant.stopReason !== undefined && { stopReason: assistant.stopReason }),
          ...(assistant.rawStopReason !== undefined && { rawStopReason: assistant.rawStopReason }),
          usage: assistant.usage,
          ...(assistant.errorMessage !== undefined && { errorMessage: assistant.errorMessage }),
        },
      ];
    }
    case "tool_execution_start":
      return [
        {
          type: "tool_call",
          toolCallId: asString(event.toolCallId) ?? "",
          toolName: asString(event.toolName) ?? "",
          args: event.args ?? {},
        },
      ];
    case "tool_execution_end":
      return [
        {
          type: "tool_result",
          toolCallId: asString(event.toolCallId) ?? "",
          toolName: asString(event.toolName) ?? "",
          isError: event.isError === true,
        },
      ];
    case "auto_retry_start":
      return [
        {
          type: "retry",
          phase: "start",
          attempt: asNumber(event.attempt),
          ...(typeof event.maxAttempts === "number" && { maxAttempts: event.maxAttempts }),
          ...(typeof event.delayMs === "number" && { delayMs: event.delayMs }),
          ...(typeof event.errorMessage === "string" && { errorMessage: event.errorMessage }),
        },
      ];
    case "auto_retry_end":
      return [
        {
          type: "retry",
          phase: "end",
          attempt: asNumber(event.attempt),
          success: event.success === true,
          ...(typeof event.finalError === "string" && { finalError: event.finalError }),
        },
      ];
    case "agent_settled":
      return [{ type: "settled", ...(typeof event.aborted === "boolean" && { aborted: event.aborted }) }];
    default:
      return [];
  }
}
