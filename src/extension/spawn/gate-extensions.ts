/**
 * Which of the extensions the root was started with a new child loads (roles/launch-extensions.ts
 * decides from the command line and the settings; here the I/O: argv, the cwd, symlinks).
 */
import fs from "node:fs";
import path from "node:path";
import type { ResolvedRunner } from "../../contracts/runners.js";
import { PACKAGE_ROOT } from "../config.js";
import { childGateExtensions, launchExtensions } from "../roles/launch-extensions.js";
import { readSubagentSettings } from "../settings.js";

/** A path through its symlinks (node_modules/pi-subagent-tree is one), else as it is. */
function realPath(entry: string): string {
  if (!path.isAbsolute(entry)) return entry;
  try {
    return fs.realpathSync(entry);
  } catch {
    return entry;
  }
}

/**
 * A child on this machine (local, or in a sandbox, which keeps these files readable) also loads
 * the extensions this pi was started with (`-e`), less `child_extensions.exclude`: a gate that
 * registers no tool guards it too. A child on another machine loads what is installed there.
 */
export function gateExtensions(runner: ResolvedRunner | undefined, cwd: string): string[] {
  if (runner && runner.kind !== "sandbox") return [];
  const exclude = readSubagentSettings({ cwd }).settings.childExtensions?.exclude ?? [];
  const launched = launchExtensions(process.argv.slice(2), process.cwd()).map(realPath);
  return childGateExtensions(launched, exclude, { root: realPath(PACKAGE_ROOT), name: "pi-subagent-tree" });
}
