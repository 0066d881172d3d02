import { describe, expect, it } from "vitest";
import {
  attemptMessage,
  classifyProviderError,
  classifyStartFailure,
  cooldownMs,
  QUOTA_COOLDOWN_MS,
  RATE_LIMIT_COOLDOWN_MS,
  retryAfterMsOf,
  switchesModel,
} from "../../../src/contracts/provider-errors.js";

/** pi's errorMessage texts as each line words them (0.73: the OpenAI SDK's message; 1.x: "<status>: <body>"). */
const TABLE: Array<[line: string, text: string, errorClass: string, status?: number]> = [
  ["0.73", "429 Rate limit reached for requests", "rate_limit", 429],
  ["0.73", "429 status code (no body)", "rate_limit", 429],
  ["1.x", '429: {"message":"Rate limit reached","type":"rate_limit_error"}', "rate_limit", 429],
  ["0.73", "429 You exceeded your current quota, please check your plan and billing details.", "quota", 429],
  ["1.x", '429: {"message":"quota","code":"insufficient_quota"}', "quota", 429],
  ["0.73", "503 Service Unavailable", "overloaded", 503],
  ["1.x", '503: {"message":"The server is overloaded"}', "overloaded", 503],
  ["both", "529 Overloaded", "overloaded", 529],
  ["0.73", "500 Internal Server Error", "server_error", 500],
  ["0.73", "500 status code (no body)", "server_error", 500],
  ["1.x", '500: {"message":"boom"}', "server_error", 500],
  ["both", "502 Bad Gateway", "server_error", 502],
  ["both", "504 Gateway Timeout", "timeout", 504],
  ["both", "408 Request Timeout", "timeout", 408],
  ["0.73", "Request timed out.", "timeout"],
  ["0.73", "Connection error.", "connection"],
  ["1.x", "Connection error.: other side closed (UND_ERR_SOCKET)", "connection"],
  ["1.x", "Connection error.: connect ECONNREFUSED 127.0.0.1:9 (ECONNREFUSED)", "connection"],
  ["both", "terminated", "connection"],
  ["both", "Provider finish_reason: network_error", "connection"],
  ["0.73", "401 Incorrect API key provided", "auth", 401],
  ["1.x", '401: {"message":"invalid key"}', "auth", 401],
  ["both", "403 Forbidden", "auth", 403],
  ["both", "No API key for provider: fake", "auth"],
  ["0.73", "404 The model `gpt-9` does not exist", "model_unavailable", 404],
  ["1.x", '404: {"message":"model not found"}', "model_unavailable", 404],
  ["both", "model_not_found: no such model", "model_unavailable"],
  ["1.x", "Server requested 30s retry delay (max: 1s). 429 status code (no body)", "rate_limit", 429],
  // Never a switch: another 4xx, context overflow, an unknown text.
  ["0.73", "400 Invalid request: messages[1].content is required", "other", 400],
  ["1.x", '400: {"message":"bad tool schema"}', "other", 400],
  ["both", "422 Unprocessable Entity", "other", 422],
  ["both", "400 This model's maximum context length is 8192 tokens", "context_overflow", 400],
  ["both", "prompt is too long: 210000 tokens > 200000 maximum", "context_overflow"],
  ["both", "413 Request Entity Too Large", "context_overflow", 413],
  ["both", "something odd happened", "other"],
  ["both", "", "other"],
];

describe("provider error classes", () => {
  for (const [line, text, errorClass, status] of TABLE) {
    it(`${line}: ${JSON.stringify(text)} → ${errorClass}`, () => {
      const info = classifyProviderError(text);
      expect(info.errorClass).toBe(errorClass);
      expect(info.status).toBe(status);
    });
  }

  it("only the provider's classes switch models: never another 4xx, context overflow or an unknown error", () => {
    for (const cls of [
      "rate_limit",
      "quota",
      "overloaded",
      "server_error",
      "timeout",
      "connection",
      "model_unavailable",
      "auth",
    ] as const)
      expect(switchesModel(cls)).toBe(true);
    expect(switchesModel("other")).toBe(false);
    expect(switchesModel("context_overflow")).toBe(false);
  });

  it("reads the retry delays providers and pi name", () => {
    expect(retryAfterMsOf("Server requested 30s retry delay (max: 1s). 429")).toBe(30_000);
    expect(retryAfterMsOf("429 Rate limit reached. Please try again in 20s.")).toBe(20_000);
    expect(retryAfterMsOf("429 Rate limit reached. Please try again in 1.5s.")).toBe(1500);
    expect(retryAfterMsOf("429 Please try again in 6m0s.")).toBe(360_000);
    expect(retryAfterMsOf("429 Please try again in 250ms.")).toBe(250);
    expect(retryAfterMsOf('429: {"error":{"details":[{"retryDelay":"37s"}]}}')).toBe(37_000);
    expect(retryAfterMsOf("429 Retry-After: 12")).toBe(12_000);
    expect(retryAfterMsOf("429 Rate limit reached")).toBeUndefined();
  });

  it("cools a rate limit down for its Retry-After, else 60 s, a quota for 1 h, nothing else at all", () => {
    expect(cooldownMs(classifyProviderError("429 Rate limit. Please try again in 20s."))).toBe(20_000);
    expect(cooldownMs(classifyProviderError("429 status code (no body)"))).toBe(RATE_LIMIT_COOLDOWN_MS);
    expect(cooldownMs(classifyProviderError("429 insufficient_quota"))).toBe(QUOTA_COOLDOWN_MS);
    expect(cooldownMs(classifyProviderError("503 Service Unavailable"))).toBeUndefined();
    expect(cooldownMs(classifyProviderError("401 Unauthorized"))).toBeUndefined();
  });

  it("a pi that could not start: a missing key or an unknown model are the provider's; anything else is not", () => {
    expect(classifyStartFailure('No API key found for "fake".')?.errorClass).toBe("auth");
    expect(classifyStartFailure('Model "fake/nope" not found. Use --list-models')?.errorClass).toBe(
      "model_unavailable",
    );
    expect(classifyStartFailure("Error: Unknown option: --bogus")).toBeUndefined();
  });

  it("keeps an attempt's message on one line of at most 300 characters", () => {
    expect(attemptMessage("429\n  rate   limit")).toBe("429 rate limit");
    const long = attemptMessage("x".repeat(1000));
    expect(long).toHaveLength(300);
    expect(long.endsWith("…")).toBe(true);
  });
});
