/**
 * Fallback models at a turn's start and end. At the start: the models the turn may
 * use, its own first, skipping those the tree is cooling down (tree/cooldowns.ts) while one is
 * free. At the end: the model that finished and the ones that failed, for the notice. Pure.
 */
import type { ThinkingLevel } from "../../contracts/meta.js";
import type { NoticeAttempt } from "../../contracts/notice.js";
import type { ResultV1 } from "../../contracts/result.js";
import type { AgentRecordV1 } from "../../contracts/tree.js";
import type { Cooldowns } from "../tree/cooldowns.js";

export interface TurnModels {
  model: string;
  thinking: ThinkingLevel;
  /** meta.json `fallbackModels`: the rest, in order. */
  fallbackModels: string[];
}

/** The agent's models for one turn: those not cooling down (all of them if every one is). */
export function turnModels(record: AgentRecordV1, cooling: Cooldowns): TurnModels {
  const all = [{ model: record.model, reasoning: record.reasoning }, ...(record.fallbacks ?? [])];
  const free = all.filter((entry) => cooling[entry.model] === undefined);
  const [first, ...rest] = free.length > 0 ? free : all;
  return {
    model: first?.model ?? record.model,
    thinking: first?.reasoning ?? record.reasoning,
    fallbackModels: rest.map((entry) => entry.model),
  };
}

/** The latest failed attempts a notice names, and how much of each message. */
export const NOTICE_ATTEMPTS = 8;
export const NOTICE_ATTEMPT_CHARS = 160;

/** What a turn's notice says of its models: the one that finished (at its level) and those that failed. */
export interface TurnModelReport {
  model: string;
  reasoning: string;
  attempts: NoticeAttempt[];
}

/** Undefined when the turn ran on the agent's own model and no model failed it. */
export function turnModelReport(record: AgentRecordV1, result: ResultV1 | undefined): TurnModelReport | undefined {
  const attempts = result?.attempts ?? [];
  const finished = result?.resolvedModel ?? record.model;
  if (attempts.length === 0 && finished === record.model) return undefined;
  const level = record.fallbacks?.find((entry) => entry.model === finished)?.reasoning ?? record.reasoning;
  return {
    model: finished,
    reasoning: level,
    // Bounded so a long list cannot crowd the report out of the notice (result.json keeps them whole).
    attempts: attempts.slice(-NOTICE_ATTEMPTS).map(({ model, error_class, message }) => ({
      model,
      error_class,
      message: message.length > NOTICE_ATTEMPT_CHARS ? `${message.slice(0, NOTICE_ATTEMPT_CHARS - 1)}…` : message,
    })),
  };
}

/** The model an agent is on now (its latest run's, when that is a fallback), at the level it runs. */
export function modelInUse(
  record: Pick<AgentRecordV1, "model" | "reasoning" | "fallbacks">,
  runModel: string | undefined,
): { model: string; reasoning: ThinkingLevel } {
  const fallback =
    runModel && runModel !== record.model ? record.fallbacks?.find((f) => f.model === runModel) : undefined;
  return fallback ?? { model: record.model, reasoning: record.reasoning };
}
