/**
 * Which provider errors switch a turn to its next fallback model, decided from what
 * pi reports: the `errorMessage` of its terminal assistant message (stopReason `error`), or,
 * for a pi that could not start, its stderr. Pure: the wrapper decides with it, the extension
 * reads its cool-downs. The taxonomy follows LiteLLM's router: decide by HTTP status when the
 * text carries one, by wording when it does not, and honour a retry delay the text names.
 *
 * How pi words an error (both lines, OpenAI-compatible provider):
 * - pi 0.73: the OpenAI SDK's message, `"<status> <provider message>"` or
 *   `"<status> status code (no body)"`; `"Connection error."`; `"Request timed out."`.
 * - pi 1.x: `"<status>: <JSON body>"` when the SDK kept the body apart, else the SDK's message;
 *   a connection failure as `"Connection error.: <deepest cause> (<code>)"`; a `Retry-After`
 *   longer than `retry.provider.maxRetryDelayMs` as `"Server requested <n>s retry delay (max: <m>s). …"`.
 * - Both: `"No API key for provider: <p>"` at the request; `"Provider finish_reason: network_error"`.
 */

/** The classes of provider error that move a turn to its next model. */
export const PROVIDER_ERROR_CLASSES = [
  "rate_limit",
  "quota",
  "overloaded",
  "server_error",
  "timeout",
  "connection",
  "model_unavailable",
  "auth",
] as const;
export type ProviderErrorClass = (typeof PROVIDER_ERROR_CLASSES)[number];

/** What an attempt's error was: a fallback class, or one that never switches models. */
export type AttemptErrorClass = ProviderErrorClass | "context_overflow" | "other";

export interface ProviderErrorInfo {
  errorClass: AttemptErrorClass;
  /** The HTTP status the text carries, when it carries one. */
  status?: number;
  /** The retry delay the text names (a provider's Retry-After as pi relays it), in ms. */
  retryAfterMs?: number;
}

/** Cool-downs when the provider names no delay. */
export const RATE_LIMIT_COOLDOWN_MS = 60_000;
export const QUOTA_COOLDOWN_MS = 3_600_000;

/** The longest an attempt's message is kept (result.json `attempts[].message`). */
export const ATTEMPT_MESSAGE_CHARS = 300;

/** pi's own context-overflow wording (pi-ai utils/overflow.ts), so an overflow never switches. */
const CONTEXT_OVERFLOW =
  /prompt (?:is )?too long|request_too_large|input is too long|exceeds the context window|maximum context length|context window exceeded|context[_ ]length[_ ]exceeded|too many tokens|token limit exceeded|context size|greater than the context length|model_context_window_exceeded|longer than the model'?s context length/i;
const QUOTA =
  /insufficient_quota|quota exceeded|exceeded your current quota|out of budget|billing|usage limit|resource_exhausted|resourceexhausted|credit balance|available balance/i;
const RATE_LIMIT = /rate.?limit|too many requests|throttl/i;
const OVERLOADED =
  /overloaded|server_busy|servers are currently busy|high demand|at capacity|service.?(?:is.?)?(?:temporarily.?)?unavailable/i;
const AUTH =
  /no api key|api.?key|unauthori[sz]ed|authentication|invalid credentials|invalid.?x-api-key|permission.?denied|access denied|forbidden/i;
const MODEL_UNAVAILABLE =
  /model_not_found|unknown model|no such model|model .{0,80}(?:does not exist|not found|is not available|unavailable|not supported)|model not found/i;
const TIMEOUT = /timed? out|timeout|etimedout/i;
const CONNECTION =
  /connection.?(?:error|refused|lost|closed|reset)|network.?error|fetch failed|other side closed|socket hang up|econnreset|econnrefused|econnaborted|epipe|enotfound|eai_again|getaddrinfo|terminated|ended without|reset before headers|upstream.?connect|stream disconnected|socket connection was closed/i;
const SERVER_ERROR =
  /internal.?(?:server.?)?error|server.?error|bad gateway|upstream.?request.?failed|provider.?returned.?(?:an.?)?error/i;

/** The status at the start (`429 …`, `429: …`), after a provider prefix (`… (429): …`), or named (`status 429`). */
function statusOf(text: string): number | undefined {
  const match =
    /(?:^\s*|\.\s+)(\d{3})(?=[\s:]|$)/.exec(text) ??
    /\((\d{3})\):/.exec(text) ??
    /\bstatus(?: code)?[\s:=]+(\d{3})\b/i.exec(text);
  const status = match ? Number(match[1]) : undefined;
  return status !== undefined && status >= 100 && status <= 599 ? status : undefined;
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

function unitMs(unit: string | undefined): number {
  const key = (unit ?? "s").toLowerCase();
  if (key.startsWith("ms") || key.startsWith("milli")) return UNIT_MS.ms as number;
  if (key.startsWith("h")) return UNIT_MS.h as number;
  if (key.startsWith("m")) return UNIT_MS.m as number;
  return UNIT_MS.s as number;
}

/**
 * The retry delay a message names: pi 1.x's `Server requested 30s retry delay`, a relayed
 * `Retry-After: 30`, OpenAI's `try again in 6m0s` / `in 1.5s`, Google's `retry in 37s` and
 * `"retryDelay": "37s"`. Undefined when it names none.
 */
export function retryAfterMsOf(text: string): number | undefined {
  const requested = /server requested (\d+(?:\.\d+)?)s retry delay/i.exec(text);
  if (requested) return Number(requested[1]) * 1000;
  const header = /retry[-_ ]after(?:-ms)?["']?\s*[:=]\s*["']?(\d+(?:\.\d+)?)/i.exec(text);
  if (header) return Number(header[1]) * (/retry[-_ ]after-ms/i.test(header[0]) ? 1 : 1000);
  const google = /"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"/i.exec(text);
  if (google) return Number(google[1]) * 1000;
  const minutes = /(?:try again|retry) in (\d+)m(\d+(?:\.\d+)?)s/i.exec(text);
  if (minutes) return Number(minutes[1]) * 60_000 + Number(minutes[2]) * 1000;
  const plain =
    /(?:try again|retry) in (\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|sec(?:onds?)?|m|min(?:utes?)?|h|hours?)\b/i.exec(
      text,
    );
  if (plain) return Math.round(Number(plain[1]) * unitMs(plain[2]));
  return undefined;
}

function classByStatus(status: number, text: string): AttemptErrorClass {
  if (status === 429) return QUOTA.test(text) ? "quota" : "rate_limit";
  if (status === 401 || status === 403) return "auth";
  if (status === 404) return "model_unavailable";
  if (status === 408 || status === 504) return "timeout";
  if (status === 503 || status === 529) return "overloaded";
  if (status >= 500) return "server_error";
  return "other";
}

/** Without a status: the wording, most specific first. */
function classByText(text: string): AttemptErrorClass {
  const order: Array<[RegExp, AttemptErrorClass]> = [
    [QUOTA, "quota"],
    [RATE_LIMIT, "rate_limit"],
    [OVERLOADED, "overloaded"],
    [MODEL_UNAVAILABLE, "model_unavailable"],
    [AUTH, "auth"],
    [TIMEOUT, "timeout"],
    [CONNECTION, "connection"],
    [SERVER_ERROR, "server_error"],
  ];
  return order.find(([pattern]) => pattern.test(text))?.[1] ?? "other";
}

/** The class of a provider error as pi worded it (its `errorMessage`). */
export function classifyProviderError(message: string): ProviderErrorInfo {
  const text = message.trim();
  const status = statusOf(text);
  const retryAfterMs = retryAfterMsOf(text);
  const extra = {
    ...(status !== undefined && { status }),
    ...(retryAfterMs !== undefined && { retryAfterMs }),
  };
  if (text === "" || status === 413 || (CONTEXT_OVERFLOW.test(text) && !RATE_LIMIT.test(text))) {
    return { errorClass: text === "" ? "other" : "context_overflow", ...extra };
  }
  // pi 1.x's capped Retry-After is a rate limit whatever the status it names.
  if (/server requested \d+(?:\.\d+)?s retry delay/i.test(text)) {
    return { errorClass: QUOTA.test(text) ? "quota" : "rate_limit", ...extra };
  }
  return { errorClass: status !== undefined ? classByStatus(status, text) : classByText(text), ...extra };
}

/**
 * A pi that could not start at all (exit 1, no assistant message): only a missing key and an
 * unknown model are the provider's side; anything else is the run's own problem.
 */
export function classifyStartFailure(stderr: string): ProviderErrorInfo | undefined {
  if (/no api key/i.test(stderr)) return { errorClass: "auth" };
  if (/model "[^"]*" not found/i.test(stderr)) return { errorClass: "model_unavailable" };
  return undefined;
}

/** Whether an error of this class moves the turn to the next model. */
export function switchesModel(errorClass: AttemptErrorClass): errorClass is ProviderErrorClass {
  return (PROVIDER_ERROR_CLASSES as readonly string[]).includes(errorClass);
}

/** How long later turns skip a model that failed so: Retry-After when named, else 60 s / 1 h; undefined for no cool-down. */
export function cooldownMs(info: Pick<ProviderErrorInfo, "errorClass" | "retryAfterMs">): number | undefined {
  if (info.errorClass !== "rate_limit" && info.errorClass !== "quota") return undefined;
  if (info.retryAfterMs !== undefined && info.retryAfterMs > 0) return info.retryAfterMs;
  return info.errorClass === "quota" ? QUOTA_COOLDOWN_MS : RATE_LIMIT_COOLDOWN_MS;
}

/** An attempt's message as result.json keeps it: one line, at most 300 characters. */
export function attemptMessage(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length <= ATTEMPT_MESSAGE_CHARS ? line : `${line.slice(0, ATTEMPT_MESSAGE_CHARS - 1)}…`;
}
