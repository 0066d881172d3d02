/**
 * Which of the extensions the root loaded a new child loads (roles/launch-extensions.ts decides
 * from the command line and the settings, contracts/child-extensions.ts asks pi what it
 * discovered; here the I/O: argv, the cwd, symlinks, and the cache of pi's answer).
 */
import fs from "node:fs";
import path from "node:path";
import { DefaultPackageManager, getAgentDir, SettingsManager } from "@mariozechner/pi-coding-agent";
import { enabledExtensionPaths, type PiDiscoveryApi, resolveExtensions } from "../../contracts/child-extensions.js";
import type { ResolvedRunner } from "../../contracts/runners.js";
import { PACKAGE_ROOT } from "../config.js";
import { childGateExtensions, discoversExtensions, launchExtensions } from "../roles/launch-extensions.js";
import { readSubagentSettings } from "../settings.js";

const OWN_NAME = "pi-subagent-tree";

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
 * Whether the session's project is trusted: pi 1.x's context says (`isProjectTrusted`); pi
 * 0.73.1 has no such step and reads a project's extensions always.
 */
function projectTrusted(ctx: object): boolean {
  const ask = (ctx as { isProjectTrusted?: unknown }).isProjectTrusted;
  return typeof ask === "function" ? Boolean(ask.call(ctx)) : true;
}

/**
 * pi's answer per place, asked once a process (at the first spawn that needs it, never at the
 * start: a session that spawns nothing pays nothing). A failure is an empty list: a child
 * still gets the root's `-e` ones.
 */
const discovered = new Map<string, Promise<string[]>>();

function discoveredExtensions(cwd: string, trusted: boolean): Promise<string[]> {
  const agentDir = getAgentDir();
  const key = JSON.stringify([cwd, agentDir, trusted]);
  let answer = discovered.get(key);
  if (!answer) {
    const api = { DefaultPackageManager, SettingsManager } as unknown as PiDiscoveryApi;
    answer = resolveExtensions(api, { cwd, agentDir, projectTrusted: trusted })
      .then((resolved) => enabledExtensionPaths(resolved, OWN_NAME))
      .catch(() => []);
    discovered.set(key, answer);
  }
  return answer;
}

/**
 * A child on this machine (local, or in a sandbox, which keeps these files readable) also loads
 * the extensions this pi loaded — those it was started with (`-e`) and those it discovered —
 * less `child_extensions.exclude`: a gate that registers no tool guards it too. A child on
 * another machine loads what is installed there (its `serve` asks the pi there).
 */
export async function gateExtensions(
  runner: ResolvedRunner | undefined,
  cwd: string,
  /** The session's context (ExtensionContext): whether its project is trusted. */
  ctx: object,
): Promise<string[]> {
  if (runner && runner.kind !== "sandbox") return [];
  const exclude = readSubagentSettings({ cwd }).settings.childExtensions?.exclude ?? [];
  const args = process.argv.slice(2);
  const launched = launchExtensions(args, process.cwd());
  // The session's cwd is the one pi discovered for: a project's extensions are that project's.
  const found = discoversExtensions(args) ? await discoveredExtensions(cwd, projectTrusted(ctx)) : [];
  return childGateExtensions([...launched, ...found].map(realPath), exclude, {
    root: realPath(PACKAGE_ROOT),
    name: OWN_NAME,
  });
}
