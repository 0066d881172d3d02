/**
 * A scripted OpenAI-compatible chat-completions server on 127.0.0.1 for driving the real pi
 * (provider api `openai-completions`) in tests.
 *
 *   const llm = await startScriptedLlm();
 *   llm.script([reply.toolCall("bash", { command: "echo hi" }), reply.text("done")]);
 *   // ... run pi with makePiHome({ llmUrl: llm.url }) ...
 *   expect(userTexts(llm.requests[0]!)).toContain("say hi");
 *   await llm.close();
 *
 * Each POST /v1/chat/completions takes the reply chosen by `onRequest` (if set and it returns
 * one), else the next scripted reply, else `defaultReply`. pi always streams (`stream: true`),
 * so only SSE answers are implemented; a non-streaming request gets a 400 so a change in pi
 * shows up as a failing test rather than a silent mismatch.
 */
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface ToolCallSpec {
  name: string;
  args: unknown;
  /** Defaults to `call_<n>` unique within the reply. */
  id?: string;
}

export interface StreamOptions {
  /** Raw OpenAI finish_reason; pi maps stop→stop, length→length, tool_calls→toolUse, other→error. */
  finishReason?: string;
  usage?: Partial<Usage>;
  /** Sent as `delta.reasoning_content` before any text (pi turns it into a thinking block). */
  thinking?: string;
  /** Pause between SSE chunks, to make streaming observable. */
  chunkDelayMs?: number;
  /** The answer starts only once this settles (e.g. once another agent's request has arrived). */
  waitFor?: Promise<unknown>;
}

export type Reply =
  | ({ kind: "stream"; text: string; toolCalls: ToolCallSpec[] } & StreamOptions)
  | { kind: "error"; status: number; message: string; headers?: Record<string, string>; type?: string }
  | { kind: "close" }
  | { kind: "hang"; partialText?: string }
  | { kind: "disconnect"; partialText?: string };

export const DEFAULT_USAGE: Usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

export const reply = {
  /** A plain assistant text answer, finish_reason `stop` unless overridden. */
  text(text: string, opts: StreamOptions = {}): Reply {
    return { kind: "stream", text, toolCalls: [], ...opts };
  },
  /** One tool call (optionally preceded by text), finish_reason `tool_calls`. */
  toolCall(name: string, args: unknown, opts: StreamOptions & { id?: string; text?: string } = {}): Reply {
    const { id, text = "", ...rest } = opts;
    return {
      kind: "stream",
      text,
      toolCalls: [{ name, args, ...(id ? { id } : {}) }],
      finishReason: "tool_calls",
      ...rest,
    };
  },
  /** Several tool calls in one assistant message. */
  toolCalls(calls: ToolCallSpec[], opts: StreamOptions & { text?: string } = {}): Reply {
    const { text = "", ...rest } = opts;
    return { kind: "stream", text, toolCalls: calls, finishReason: "tool_calls", ...rest };
  },
  /**
   * An HTTP error with an OpenAI-style JSON body (pi sees a provider error); `headers` go with
   * it (e.g. `{"retry-after": "30"}` on a 429), `type` is the body's error type.
   */
  error(
    status: number,
    message = "scripted error",
    opts: { headers?: Record<string, string>; type?: string } = {},
  ): Reply {
    return { kind: "error", status, message, ...opts };
  },
  /** Closes the connection without answering (a lost connection before any byte). */
  close(): Reply {
    return { kind: "close" };
  },
  /** Never finishes. With `partialText`, headers and some text are sent first, then silence. */
  hang(partialText?: string): Reply {
    return { kind: "hang", ...(partialText !== undefined ? { partialText } : {}) };
  },
  /** Starts streaming, then destroys the socket (a network failure mid-answer). */
  disconnect(partialText?: string): Reply {
    return { kind: "disconnect", ...(partialText !== undefined ? { partialText } : {}) };
  },
};

/** A chat-completions request body as pi sends it (loosely typed: tests poke at it). */
export interface ChatRequest {
  model: string;
  stream?: boolean;
  messages: Array<{ role: string; content?: unknown; tool_calls?: unknown; tool_call_id?: string }>;
  tools?: Array<{ type: string; function: { name: string; description?: string; parameters?: unknown } }>;
  [key: string]: unknown;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** Parsed JSON body; `undefined` for GETs or unparsable bodies. */
  body: ChatRequest | undefined;
}

export type RequestHandler = (req: ChatRequest, index: number) => Reply | undefined;

export interface ScriptedLlm {
  /** Base URL for models.json, e.g. `http://127.0.0.1:PORT/v1`. */
  url: string;
  port: number;
  /** Every chat-completions request body, in arrival order. */
  requests: ChatRequest[];
  /** Every HTTP request (GETs and unknown paths included). */
  allRequests: RecordedRequest[];
  /** Append replies to the FIFO. */
  script(replies: Reply[]): void;
  /** Dynamic replies; returning `undefined` falls back to the script. */
  onRequest(handler: RequestHandler | undefined): void;
  /** Scripted replies not consumed yet. */
  pending(): number;
  /** Resolves once `count` chat requests arrived (rejects after `timeoutMs`). */
  waitForRequests(count: number, timeoutMs?: number): Promise<void>;
  /** Destroys open sockets (hanging replies included) and stops listening. */
  close(): Promise<void>;
}

export interface ScriptedLlmOptions {
  defaultReply?: Reply;
  /**
   * The address to listen on (default 127.0.0.1), e.g. the host's side of a veth pair, so that
   * a pi on a test's "far" host in a network namespace (test/support/ssh-host.ts) reaches it.
   */
  host?: string;
}

export async function startScriptedLlm(opts: ScriptedLlmOptions = {}): Promise<ScriptedLlm> {
  const host = opts.host ?? "127.0.0.1";
  const defaultReply = opts.defaultReply ?? reply.text("(no scripted reply)");
  const queue: Reply[] = [];
  const requests: ChatRequest[] = [];
  const allRequests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const waiters = new Set<() => void>();
  let handler: RequestHandler | undefined;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      let body: ChatRequest | undefined;
      try {
        body = raw ? (JSON.parse(raw) as ChatRequest) : undefined;
      } catch {
        body = undefined;
      }
      const path = (req.url ?? "/").split("?")[0] ?? "/";
      allRequests.push({ method: req.method ?? "GET", path, headers: req.headers, body });

      if (req.method === "GET" && path.endsWith("/models")) {
        return sendJson(res, 200, {
          object: "list",
          data: ["fast", "deep"].map((id) => ({ id, object: "model", owned_by: "fake" })),
        });
      }
      if (req.method !== "POST" || !path.endsWith("/chat/completions")) {
        return sendJson(res, 404, { error: { message: `no route ${req.method} ${path}`, type: "not_found" } });
      }
      if (body?.stream !== true) {
        return sendJson(res, 400, {
          error: { message: "scripted-llm only implements stream:true", type: "invalid_request_error" },
        });
      }
      const index = requests.length;
      requests.push(body);
      for (const w of [...waiters]) w();
      const chosen = handler?.(body, index) ?? queue.shift() ?? defaultReply;
      void respond(res, chosen, body.model, index);
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });

  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://${host}:${port}/v1`,
    port,
    requests,
    allRequests,
    script: (replies) => void queue.push(...replies),
    onRequest: (h) => {
      handler = h;
    },
    pending: () => queue.length,
    waitForRequests(count, timeoutMs = 10_000) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (requests.length < count) return;
          cleanup();
          resolve();
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`expected ${count} chat requests within ${timeoutMs} ms, got ${requests.length}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Text of every user message in a request (string content or text parts joined). */
export function userTexts(req: ChatRequest): string[] {
  return req.messages.filter((m) => m.role === "user").map((m) => contentText(m.content));
}

/** The system prompt pi sent (role `system`; `developer` when the compat allows it). */
export function systemText(req: ChatRequest): string {
  const m = req.messages.find((x) => x.role === "system" || x.role === "developer");
  return m ? contentText(m.content) : "";
}

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((p: { type?: string; text?: string }) => (p?.type === "text" && typeof p.text === "string" ? p.text : ""))
      .join("");
  }
  return "";
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Splits text into up to 3 pieces so pi sees several deltas, as from a real provider. */
function pieces(text: string): string[] {
  if (text.length < 3) return text ? [text] : [];
  const a = Math.floor(text.length / 3);
  const b = Math.floor((2 * text.length) / 3);
  return [text.slice(0, a), text.slice(a, b), text.slice(b)];
}

async function respond(res: http.ServerResponse, r: Reply, model: string, index: number): Promise<void> {
  if (r.kind === "error") {
    res.writeHead(r.status, { "content-type": "application/json", ...r.headers });
    res.end(JSON.stringify({ error: { message: r.message, type: r.type ?? "server_error", code: null } }));
    return;
  }
  if (r.kind === "close") {
    res.socket?.destroy();
    return;
  }
  if (r.kind === "hang" && r.partialText === undefined) return; // no headers at all; close() frees it
  if (r.kind === "stream" && r.waitFor) await r.waitFor.catch(() => undefined);

  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  const id = `chatcmpl-scripted-${index}`;
  const created = Math.floor(Date.now() / 1000);
  const send = (delta: object, finish: string | null = null, usage?: Usage) => {
    if (res.destroyed) return;
    const chunk = {
      id,
      object: "chat.completion.chunk",
      created,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...(usage ? { usage } : {}),
    };
    res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  };

  send({ role: "assistant", content: "" });
  if (r.kind === "hang" || r.kind === "disconnect") {
    for (const p of pieces(r.partialText ?? "")) send({ content: p });
    if (r.kind === "disconnect") setTimeout(() => res.socket?.destroy(), 20); // let the bytes flush first
    return;
  }

  const pause = async () => {
    if (r.chunkDelayMs) await sleep(r.chunkDelayMs);
  };
  for (const p of pieces(r.thinking ?? "")) {
    await pause();
    send({ reasoning_content: p });
  }
  for (const p of pieces(r.text)) {
    await pause();
    send({ content: p });
  }
  for (const [i, call] of r.toolCalls.entries()) {
    await pause();
    const callId = call.id ?? `call_${index}_${i}`;
    const args = JSON.stringify(call.args ?? {});
    // Name first, then arguments in two fragments: pi must reassemble them by index.
    send({ tool_calls: [{ index: i, id: callId, type: "function", function: { name: call.name, arguments: "" } }] });
    const half = Math.floor(args.length / 2);
    send({ tool_calls: [{ index: i, function: { arguments: args.slice(0, half) } }] });
    send({ tool_calls: [{ index: i, function: { arguments: args.slice(half) } }] });
  }
  await pause();
  const usage = { ...DEFAULT_USAGE, ...r.usage };
  if (!r.usage?.total_tokens) usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
  send({}, r.finishReason ?? "stop", usage);
  if (!res.destroyed) res.end("data: [DONE]\n\n");
}
