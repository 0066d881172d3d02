import type { CheckRecord, EventRecordBody, RepairRecord } from "../contracts/events.js";

const ARG_PREVIEW_CHARS = 2000;

function preview(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > ARG_PREVIEW_CHARS ? `${text.slice(0, ARG_PREVIEW_CHARS)}… (${text.length} chars)` : text;
}

function retryLine(record: Extract<EventRecordBody, { type: "retry" }>): string {
  return record.phase === "start"
    ? `~ retry ${record.attempt}${record.maxAttempts ? `/${record.maxAttempts}` : ""} in ${record.delayMs ?? 0} ms: ${record.errorMessage ?? ""}\n\n`
    : `~ retry ${record.attempt} ${record.success ? "succeeded" : `failed: ${record.finalError ?? ""}`}\n\n`;
}

/** A check that ended, or a repair round the checks sent the child to. */
function verificationLine(record: CheckRecord | RepairRecord): string {
  if (record.type === "repair") {
    return `# repair ${record.round}: the child is sent back (${record.checks.join(", ")} failed)\n\n`;
  }
  const how = record.verdict ? `verdict ${record.verdict}` : `exit ${record.exitCode ?? "none"}`;
  return `# check ${record.name}: ${record.passed ? "passed" : "failed"} (${how}${record.reused ? ", reused" : ""})\n`;
}

/** The readable transcript lines for one events.jsonl record ("" when it has none). */
export function formatTranscriptEntry(record: EventRecordBody): string {
  switch (record.type) {
    case "run_start":
      return `# run ${record.runId} (pid ${record.pid ?? "none"})\n$ pi ${record.argv.join(" ")}\n\n`;
    case "assistant_text": {
      const stop = record.rawStopReason ?? "none";
      const error = record.errorMessage ? ` — ${record.errorMessage}` : "";
      const body = record.text ? `${record.text}\n` : "";
      return `## assistant (${record.model ?? "unknown model"}, stop: ${stop}${error})\n${body}\n`;
    }
    case "tool_call":
      return `→ ${record.toolName} ${preview(record.args)}\n`;
    case "tool_result":
      return `← ${record.toolName} ${record.isError ? "error" : "ok"}\n\n`;
    case "retry":
      return retryLine(record);
    case "abort":
      return `! aborted (${record.source}): ${record.reason}\n\n`;
    case "message_delivered":
      return `## message ${record.id} (read by the child)\n${record.text}\n\n`;
    case "model_switch":
      return `# ${record.from ?? "the model"} failed (${record.errorClass}): ${record.message}\n# going on with ${record.to}\n\n`;
    case "check":
    case "repair":
      return verificationLine(record);
    case "settled":
      return `# pi settled${record.aborted ? " (aborted)" : ""}\n\n`;
    case "limit":
      return record.phase === "reached"
        ? `! limit ${record.name} reached (${record.used} of ${record.value}): the child is told to wrap up\n\n`
        : `! limit ${record.name}: no answer within the grace, the run is stopped\n\n`;
    case "dialog":
      return record.phase === "asked"
        ? `? dialog ${record.dialogSeq} (${record.method}): ${record.title}\n`
        : `? dialog ${record.dialogSeq} answered by ${record.answeredBy ?? "unknown"}${record.cancelled ? " (cancelled)" : ""}\n\n`;
    case "notify":
      return `! notice${record.level ? ` (${record.level})` : ""}: ${record.message}\n\n`;
    case "run_end":
      return `# end: ${record.status} (exit ${record.exitCode})\n`;
  }
}
