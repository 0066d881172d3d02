/**
 * Model cool-downs of a tree: a model that failed a turn with a rate-limit or quota
 * error is skipped by the tree's later turns until its cool-down ends — the provider's retry
 * delay when pi relayed one (result.json `attempts[].retry_after_ms`), else 60 s for a rate
 * limit and 1 h for a quota. One JSON file in the tree directory (TREE_FILES.cooldowns),
 * shared by every process of the tree; each write merges what is there (the later end wins)
 * and replaces the file atomically, so a reader never sees half of it.
 */
import path from "node:path";
import { TREE_FILES } from "../../contracts/layout.js";
import { type AttemptErrorClass, cooldownMs } from "../../contracts/provider-errors.js";
import type { ModelAttempt } from "../../contracts/result.js";
import { writeJsonAtomic } from "../../lib/atomic-file.js";
import { readRegularFileSync } from "../../lib/regular-file.js";
import { isRecord } from "../../lib/values.js";

/** One cooling model: until when (ISO time), and why. */
export interface ModelCooldown {
  until: string;
  error_class: string;
  message: string;
}

export type Cooldowns = Record<string, ModelCooldown>;

/** The cool-downs a turn's failed attempts start (pure). */
export function cooldownsFrom(attempts: readonly ModelAttempt[]): Cooldowns {
  const found: Cooldowns = {};
  for (const attempt of attempts) {
    const ms = cooldownMs({
      errorClass: attempt.error_class as AttemptErrorClass,
      ...(attempt.retry_after_ms !== undefined && { retryAfterMs: attempt.retry_after_ms }),
    });
    const at = Date.parse(attempt.at);
    if (ms === undefined || !Number.isFinite(at)) continue;
    const until = new Date(at + ms).toISOString();
    const known = found[attempt.model];
    if (!known || known.until < until)
      found[attempt.model] = { until, error_class: attempt.error_class, message: attempt.message };
  }
  return found;
}

/** Those of `all` still cooling at `now` (ms since epoch). */
export function activeCooldowns(all: Cooldowns, now: number): Cooldowns {
  return Object.fromEntries(Object.entries(all).filter(([, cooldown]) => Date.parse(cooldown.until) > now));
}

const isCooldown = (value: unknown): value is ModelCooldown =>
  isRecord(value) &&
  typeof value.until === "string" &&
  typeof value.error_class === "string" &&
  typeof value.message === "string";

function cooldownsFile(treeDir: string): string {
  return path.join(treeDir, TREE_FILES.cooldowns);
}

/** The tree's cool-downs still running at `now`; none when the file is missing or unreadable (they are advice). */
export function readCooldowns(treeDir: string, now: number): Cooldowns {
  let raw: unknown;
  try {
    // Inside the try: a tree directory not made yet (or not known) holds none.
    // Never a blocking read: a FIFO where the file belongs must not hold the extension.
    const read = readRegularFileSync(cooldownsFile(treeDir));
    if (!("text" in read)) return {};
    raw = JSON.parse(read.text);
  } catch {
    return {};
  }
  if (!isRecord(raw) || !isRecord(raw.models)) return {};
  const valid = Object.entries(raw.models).filter((entry): entry is [string, ModelCooldown] => isCooldown(entry[1]));
  return activeCooldowns(Object.fromEntries(valid), now);
}

/** Adds the cool-downs of a turn's attempts to the tree's (expired ones dropped); nothing to write, no write. */
export async function recordCooldowns(treeDir: string, attempts: readonly ModelAttempt[], now: number): Promise<void> {
  const fresh = cooldownsFrom(attempts);
  if (Object.keys(fresh).length === 0) return;
  const merged = readCooldowns(treeDir, now);
  for (const [model, cooldown] of Object.entries(fresh)) {
    const known = merged[model];
    if (!known || known.until < cooldown.until) merged[model] = cooldown;
  }
  await writeJsonAtomic(cooldownsFile(treeDir), { version: 1, models: activeCooldowns(merged, now) });
}

/** `until 12:01:30Z (rate_limit)`: how list_models and spawn errors name a cooling model. */
export function describeCooldown(cooldown: ModelCooldown): string {
  return `cooling down until ${cooldown.until} (${cooldown.error_class})`;
}
