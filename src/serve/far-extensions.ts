/**
 * The extensions installed on the far host, which the far side's pi loads as `-e` (it keeps
 * `-ne`: pi's built-in extensions stay out, and this package, if installed there too, is never
 * loaded twice). What pi there discovers for its user — `<agent dir>/extensions/`, the packages
 * `pi install` recorded, settings `extensions` — asked of the pi package the far pi runs from
 * (its own DefaultPackageManager, by file: the wrapper never depends on pi). A project's own
 * extensions are left out (farDiscoveryPlace).
 * When no pi package is found or it cannot load on this Node, the far pi loads none of them.
 */
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import {
  enabledExtensionPaths,
  farDiscoveryPlace,
  type PiDiscoveryApi,
  resolveExtensions,
} from "../contracts/child-extensions.js";

const PI_PACKAGES = ["@earendil-works/pi-coding-agent", "@mariozechner/pi-coding-agent"];
const OWN_NAME = "pi-subagent-tree";

/** `bin` as the far pi starts it: a path as given, else the first on PATH. */
function binPath(bin: string, env: NodeJS.ProcessEnv): string | undefined {
  if (bin.includes("/")) return path.resolve(bin);
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, bin);
    if (fs.existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** The pi package folder above `file` (as given, then through its symlinks: npm's global `pi` is a link into it). */
function piPackageAbove(file: string): string | undefined {
  let real = file;
  try {
    real = fs.realpathSync(file);
  } catch {
    // as given
  }
  for (const start of new Set([path.dirname(file), path.dirname(real)])) {
    for (let dir = start; dir !== path.dirname(dir); dir = path.dirname(dir)) {
      try {
        const name = (JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { name?: unknown }).name;
        if (typeof name === "string" && PI_PACKAGES.includes(name)) return dir;
      } catch {
        // no package.json here
      }
    }
  }
  return undefined;
}

/** The two classes of pi's package in `dir`, or undefined (not a pi of either line, or not on this Node). */
async function discoveryApi(dir: string): Promise<PiDiscoveryApi | undefined> {
  try {
    const load = (file: string) => import(pathToFileURL(path.join(dir, "dist", "core", file)).href);
    const [packages, settings] = await Promise.all([load("package-manager.js"), load("settings-manager.js")]);
    if (typeof packages.DefaultPackageManager !== "function" || !settings.SettingsManager) return undefined;
    return { DefaultPackageManager: packages.DefaultPackageManager, SettingsManager: settings.SettingsManager };
  } catch {
    return undefined;
  }
}

/**
 * Whether the user has installed anything pi would find: an entry in `<agent dir>/extensions/`,
 * or settings `packages` / `extensions`. Loading pi's package costs a far start 0.1–0.9 s of
 * CPU; a host with nothing installed (the usual far host) pays none of it.
 */
function mayHaveInstalled(agentDir: string): boolean {
  try {
    if (fs.readdirSync(path.join(agentDir, "extensions")).length > 0) return true;
  } catch {
    // no such folder
  }
  let text: string;
  try {
    text = fs.readFileSync(path.join(agentDir, "settings.json"), "utf8");
  } catch {
    return false;
  }
  try {
    const settings = JSON.parse(text) as { packages?: unknown; extensions?: unknown };
    return [settings.packages, settings.extensions].some((list) => Array.isArray(list) && list.length > 0);
  } catch {
    return true; // pi reads it its own way: let it say
  }
}

/**
 * The far host's installed extensions for the pi `bin` (PI_SUBAGENTS_PI_BIN or `pi`) in `env`,
 * enabled ones, in pi's order. `emptyDir`: a private folder with no `.pi` of its own (farDiscoveryPlace).
 */
export async function farInstalledExtensions(bin: string, env: NodeJS.ProcessEnv, emptyDir: string): Promise<string[]> {
  const place = farDiscoveryPlace(env, emptyDir);
  if (!mayHaveInstalled(place.agentDir)) return [];
  const file = binPath(bin, env);
  const dir = file && piPackageAbove(file);
  const api = dir && (await discoveryApi(dir));
  if (!api) return [];
  try {
    const resolved = await resolveExtensions(api, place);
    return enabledExtensionPaths(resolved, OWN_NAME).filter(
      (entry) => !entry.includes(`${path.sep}${OWN_NAME}${path.sep}`),
    );
  } catch {
    return [];
  }
}
