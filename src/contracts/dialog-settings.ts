/**
 * The settings that decide who answers a child's dialogs and which extensions a child loads:
 * `dialogs`, `dialog_timeout` and `child_extensions` of the `subagents` settings object. Each
 * bad value is one problem line naming its key, and the default holds for it.
 */
import { isRecord } from "../lib/values.js";
import { nearestField } from "./field-suggestion.js";
import { kindOf } from "./fields.js";

/**
 * Who answers a child's dialog: `person` (the person when the root has a UI, else the asking
 * agent's parent model), `parent` (always the parent model), `deny` (cancelled at once, recorded).
 */
export const DIALOG_ROUTES = ["person", "parent", "deny"] as const;
export type DialogRoute = (typeof DIALOG_ROUTES)[number];
export const DEFAULT_DIALOG_ROUTE: DialogRoute = "person";

/** An unanswered dialog is cancelled after this many seconds unless `dialog_timeout` says otherwise. */
export const DEFAULT_DIALOG_TIMEOUT_SECONDS = 300;
/** A day: a dialog that waits longer than that has lost its person, and its child's turn with it. */
export const MAX_DIALOG_TIMEOUT_SECONDS = 86_400;

export interface ChildExtensionSettings {
  /** Extensions a child on this machine does not load: a file path, or a name (the file's or its folder's). */
  exclude: string[];
}

export function parseDialogRoute(value: unknown, at: string, problems: string[]): DialogRoute | undefined {
  if ((DIALOG_ROUTES as readonly unknown[]).includes(value)) return value as DialogRoute;
  const meant = typeof value === "string" ? nearestField(value, DIALOG_ROUTES) : undefined;
  problems.push(
    `${at} must be ${DIALOG_ROUTES.map((route) => `"${route}"`).join(", ")}, not ${typeof value === "string" ? JSON.stringify(value) : kindOf(value)}${meant ? `; did you mean "${meant}"?` : ""}`,
  );
  return undefined;
}

export function parseDialogTimeout(value: unknown, at: string, problems: string[]): number | undefined {
  if (typeof value === "number" && Number.isFinite(value) && value > 0 && value <= MAX_DIALOG_TIMEOUT_SECONDS)
    return value;
  problems.push(
    `${at} must be a number of seconds above 0 and at most ${MAX_DIALOG_TIMEOUT_SECONDS}, not ${typeof value === "number" || typeof value === "string" ? JSON.stringify(value) : kindOf(value)}`,
  );
  return undefined;
}

const CHILD_EXTENSION_KEYS = ["exclude"];

export function parseChildExtensions(
  value: unknown,
  at: string,
  problems: string[],
): ChildExtensionSettings | undefined {
  if (!isRecord(value)) {
    problems.push(`${at} must be an object like {"exclude": ["my-gate"]}, not ${kindOf(value)}`);
    return undefined;
  }
  let settings: ChildExtensionSettings | undefined;
  for (const [key, entry] of Object.entries(value)) {
    if (key !== "exclude") {
      const meant = nearestField(key, CHILD_EXTENSION_KEYS);
      problems.push(`${at}: unknown key "${key}"${meant ? `; did you mean "${meant}"?` : ""} (known: exclude)`);
    } else if (Array.isArray(entry) && entry.every((item) => typeof item === "string" && item.trim() !== "")) {
      settings = { exclude: entry as string[] };
    } else problems.push(`${at}.exclude must be a list of extension paths or names`);
  }
  return settings;
}

/** The dialog timeout in effect, in milliseconds (meta.json `dialogs.timeoutMs`). */
export function dialogTimeoutMs(seconds: number | undefined): number {
  return Math.round((seconds ?? DEFAULT_DIALOG_TIMEOUT_SECONDS) * 1000);
}
