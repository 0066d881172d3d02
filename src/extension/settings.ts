/**
 * The extension's settings (`subagents` in pi's settings), read once per call site
 * from the files; each problem line is said once per process, so a bad key does not repeat on
 * every spawn.
 */
import type { SubagentSettings } from "../contracts/settings.js";
import { readSubagentSettings as readFiles, type SettingsLocation } from "../contracts/settings-file.js";

export type { SubagentSettings };

const said = new Set<string>();

/**
 * The settings in effect for `cwd`, and the problems not yet said by this process (`report`
 * says each once: pass the UI's notify, or leave it out to only collect them).
 */
export function readSubagentSettings(
  location: SettingsLocation = {},
  report?: (line: string) => void,
): { settings: SubagentSettings; problems: string[] } {
  const read = readFiles(location);
  const fresh = read.problems.filter((line) => !said.has(line));
  if (report) {
    for (const line of fresh) {
      said.add(line);
      report(line);
    }
  }
  return { settings: read.settings, problems: fresh };
}
