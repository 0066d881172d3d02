/**
 * Field-by-field checks of a JSON object read back from a file (an agent record, a notice, a
 * result). Only the fields a checker names are looked at; unknown ones are left as they are,
 * so a newer writer's additions pass through (forward compatible). Problems quote values
 * bounded, so one line reports them whatever the file holds.
 */
import { errorValue } from "../lib/text.js";
import { isUsage } from "./usage.js";

/** What checking a record read from disk found: the record (unknown fields kept), or its first problems. */
export type RecordCheck<T> = { ok: true; record: T } | { ok: false; problem: string };

export function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

export const isString = (value: unknown): value is string => typeof value === "string";

/** How a wrong value is named in a problem: a short quote of a string, the kind of anything else. */
function described(value: unknown): string {
  return isString(value) ? JSON.stringify(errorValue(value, 60)) : kindOf(value);
}

export class FieldChecks {
  readonly problems: string[] = [];

  constructor(private readonly input: Record<string, unknown>) {}

  /** `required` fields must be present; optional ones, when present, must pass `ok` too. */
  check(key: string, required: boolean, ok: (value: unknown) => boolean, expected: string): this {
    const value = this.input[key];
    if (value === undefined) {
      if (required) this.problems.push(`field "${key}" is missing`);
    } else if (!ok(value)) {
      this.problems.push(`field "${key}" must be ${expected}, not ${described(value)}`);
    }
    return this;
  }

  string(key: string, required = true): this {
    return this.check(key, required, isString, "a string");
  }

  oneOf(key: string, allowed: readonly string[], required = true): this {
    return this.check(key, required, (value) => allowed.includes(value as string), `one of ${allowed.join(", ")}`);
  }

  boolean(key: string, required = true): this {
    return this.check(key, required, (value) => typeof value === "boolean", "true or false");
  }

  /** A whole number ≥ 0. */
  count(key: string, required = true): this {
    return this.check(
      key,
      required,
      (value) => Number.isSafeInteger(value) && (value as number) >= 0,
      "a whole number",
    );
  }

  number(key: string, required = true): this {
    return this.check(key, required, (value) => typeof value === "number" && Number.isFinite(value), "a number");
  }

  list(key: string, item: (value: unknown) => boolean, expected: string, required = true): this {
    return this.check(key, required, (value) => Array.isArray(value) && value.every(item), expected);
  }

  usage(key: string, required = true): this {
    return this.check(
      key,
      required,
      isUsage,
      "a usage object (input, output, cacheRead, cacheWrite, totalTokens, cost)",
    );
  }

  /** One line: the first three problems, and how many more there are. */
  summary(): string | undefined {
    if (this.problems.length === 0) return undefined;
    const more = this.problems.length > 3 ? `; and ${this.problems.length - 3} more` : "";
    return this.problems.slice(0, 3).join("; ") + more;
  }
}
