import { describe, expect, it } from "vitest";
import { PiLineReader } from "../../../src/wrapper/line-reader.js";
import type { PiEvent } from "../../../src/wrapper/normalize.js";

function collect(maxLineBytes?: number) {
  const events: PiEvent[] = [];
  const garbage: string[] = [];
  const raw: Buffer[] = [];
  const bulky: string[] = [];
  const reader = new PiLineReader(
    {
      event: (event) => events.push(event),
      garbage: (preview) => garbage.push(preview),
      raw: (bytes, isBulky) => {
        raw.push(Buffer.from(bytes));
        if (isBulky) bulky.push(bytes.toString());
      },
    },
    maxLineBytes,
  );
  return { reader, events, garbage, raw: () => Buffer.concat(raw).toString(), bulky };
}

/** Feed text in chunks of every size, so line splitting is tested at every boundary. */
function feedInChunks(reader: PiLineReader, text: string, size: number): void {
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += size) reader.push(bytes.subarray(i, i + size));
  reader.end();
}

const update = JSON.stringify({
  type: "message_update",
  message: { role: "assistant", content: [{ type: "text", text: "x".repeat(100) }] },
});
const toolStart = JSON.stringify({
  type: "tool_execution_start",
  toolCallId: "c",
  toolName: "bash",
  args: { command: "ls" },
});
const agentEnd = (extra: object) =>
  JSON.stringify({ type: "agent_end", messages: [{ role: "assistant", content: "y".repeat(1000) }], ...extra });

describe("PiLineReader", () => {
  it.each([1, 3, 7, 40, 41, 1000])("splits lines the same way for chunks of %i bytes", (size) => {
    const { reader, events, garbage, raw } = collect();
    const stream = `${toolStart}\n${update}\nnot json\n{"type":"session","id":"é"}\n[1,2]\n\n${toolStart}`;
    feedInChunks(reader, stream, size);
    expect(events.map((e) => e.type)).toEqual(["tool_execution_start", "session", "tool_execution_start"]);
    expect(events[1]).toEqual({ type: "session", id: "é" });
    expect(garbage).toEqual(["not json", "[1,2]"]);
    expect(raw()).toBe(stream);
  });

  it("never parses message_update, tool_execution_update, message_start or turn_end lines, but passes their bytes on as bulky", () => {
    const { reader, events, bulky } = collect();
    const lines = [
      update,
      JSON.stringify({ type: "tool_execution_update", partialResult: "zzz" }),
      JSON.stringify({ type: "message_start", message: {} }),
      JSON.stringify({ type: "turn_end", message: {}, toolResults: [] }),
    ];
    feedInChunks(reader, `${lines.join("\n")}\n`, 16);
    expect(events).toEqual([]);
    expect(bulky.join("")).toBe(`${lines.join("\n")}\n`);
  });

  it("pi 1.x's lines: delta message_update and pending message_start skipped; queue_update, entry_appended and agent_settled parsed", () => {
    const { reader, events, bulky } = collect();
    const skipped = [
      JSON.stringify({ type: "message_start", message: { role: "assistant", content: [], stopReason: "pending" } }),
      JSON.stringify({
        type: "message_update",
        usage: { input: 10, output: 5 },
        assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: "Hel" },
      }),
    ];
    const parsed = [
      { type: "queue_update", steering: ["STEER-1"], followUp: [] },
      {
        type: "entry_appended",
        entry: { type: "context_edit", id: "3b5a1147", targetId: "668ca97c", replacement: null },
      },
      { type: "agent_settled", aborted: false },
    ];
    feedInChunks(reader, `${[...skipped, ...parsed.map((event) => JSON.stringify(event))].join("\n")}\n`, 13);
    expect(events).toEqual(parsed);
    expect(bulky.join("")).toBe(`${skipped.join("\n")}\n`);
  });

  it("skims agent_end for willRetry without parsing its messages", () => {
    const { reader, events } = collect();
    feedInChunks(reader, `${agentEnd({})}\n${agentEnd({ willRetry: true })}\n${agentEnd({ willRetry: false })}\n`, 64);
    expect(events).toEqual([
      { type: "agent_end", willRetry: false },
      { type: "agent_end", willRetry: true },
      { type: "agent_end", willRetry: false },
    ]);
  });

  it("drops a line over the size limit as garbage and keeps going", () => {
    const { reader, events, garbage } = collect(100);
    feedInChunks(reader, `{"type":"big","pad":"${"p".repeat(500)}"}\n${toolStart}\n`, 32);
    expect(garbage).toHaveLength(1);
    expect(garbage[0]).toMatch(/over the 100-byte limit/);
    expect(events.map((e) => e.type)).toEqual(["tool_execution_start"]);
  });

  it("keeps a multi-byte character split across chunks intact", () => {
    const { reader, events } = collect();
    feedInChunks(reader, `${JSON.stringify({ type: "tool_execution_start", args: { text: "日本語🙂" } })}\n`, 1);
    expect(events[0]).toMatchObject({ args: { text: "日本語🙂" } });
  });

  it("accepts CRLF line endings", () => {
    const { reader, events } = collect();
    feedInChunks(reader, `${toolStart}\r\n${toolStart}\r\n`, 5);
    expect(events).toHaveLength(2);
  });
});
