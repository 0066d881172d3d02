/**
 * Reads the `subagents` settings from pi's global settings file and the project's
 * `.pi/settings.json`. A missing file is no settings; a file that cannot be read or
 * parsed is one problem line, and the defaults hold. Both the extension and the CLI (`doctor
 * --runner`) read settings through here.
 */
import fs from "node:fs";
import path from "node:path";
import { describeJsonError } from "../lib/json-error.js";
import { piAgentDir } from "../lib/pi-agent-dir.js";
import { isRecord } from "../lib/values.js";
import { combineSettings, parseSubagentSettings, SETTINGS_KEY, type SettingsParse } from "./settings.js";

export interface SettingsLocation {
  /** pi's agent dir (default: PI_CODING_AGENT_DIR, else ~/.pi/agent). */
  agentDir?: string;
  /** The project's folder, whose `.pi/settings.json` is read (default: none). */
  cwd?: string;
}

function readSettingsFile(file: string, scope: "global" | "project"): SettingsParse {
  let text: string;
  try {
    const stat = fs.statSync(file, { throwIfNoEntry: false });
    if (!stat) return { settings: {}, problems: [] };
    if (!stat.isFile()) return { settings: {}, problems: [`${file}: not a regular file; its settings are ignored`] };
    text = fs.readFileSync(file, "utf8");
  } catch (error) {
    return { settings: {}, problems: [`${file}: cannot be read (${(error as NodeJS.ErrnoException).code ?? error})`] };
  }
  if (text.trim() === "") return { settings: {}, problems: [] };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { settings: {}, problems: [`${file}: ${describeJsonError(text, error)}; its settings are ignored`] };
  }
  return parseSubagentSettings(isRecord(json) ? json[SETTINGS_KEY] : undefined, scope, file);
}

/** The settings in effect, with one line per problem found (the caller says them once). */
export function readSubagentSettings(
  location: SettingsLocation = {},
  env: NodeJS.ProcessEnv = process.env,
): SettingsParse {
  const agentDir = location.agentDir ?? piAgentDir(env);
  const global = readSettingsFile(path.join(agentDir, "settings.json"), "global");
  const project = location.cwd
    ? readSettingsFile(path.join(location.cwd, ".pi", "settings.json"), "project")
    : { settings: {}, problems: [] };
  return combineSettings(global, project);
}
