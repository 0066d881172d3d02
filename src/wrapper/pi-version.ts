/**
 * Which pi the wrapper runs, known before it starts rather than guessed from what it does
 * not print: the version in the package.json of the package that holds the resolved binary
 * (symlinks followed, as npm's bin links and global installs are), or the version named in
 * PI_SUBAGENTS_PI_VERSION for a pi build that has no such package.json.
 */
import fs from "node:fs";
import path from "node:path";
import { ENV } from "../contracts/env.js";
import { PI_PACKAGES } from "../lib/package-info.js";
import { isRecord } from "../lib/values.js";

/** The first pi release that emits `agent_settled` at the end of its automatic work. */
export const AGENT_SETTLED_SINCE = "0.80.4";

export interface PiIdentity {
  /** pi's version, when known. */
  version: string | undefined;
  /** Where the version came from: PI_SUBAGENTS_PI_VERSION, or the package.json above the binary. */
  source: "env" | "package" | undefined;
  /** The package name, when read from a package.json. */
  packageName?: string;
  /** pi emits `agent_settled` (0.80.4 and later). Unknown versions count as not: the rules for the older pi hold there. */
  emitsSettled: boolean;
  /** A PI_SUBAGENTS_PI_VERSION that is not a version, in words. */
  problem?: string;
}

const VERSION = /^v?(\d+)\.(\d+)\.(\d+)/;

/** `a` vs `b` by major.minor.patch (pre-release tags ignored); undefined when either is not a version. */
export function compareVersions(a: string, b: string): number | undefined {
  const left = VERSION.exec(a.trim());
  const right = VERSION.exec(b.trim());
  if (!left || !right) return undefined;
  for (let i = 1; i <= 3; i++) {
    const diff = Number(left[i]) - Number(right[i]);
    if (diff !== 0) return Math.sign(diff);
  }
  return 0;
}

/** Whether a pi of this version emits `agent_settled`. */
export function versionEmitsSettled(version: string | undefined): boolean {
  if (version === undefined) return false;
  return (compareVersions(version, AGENT_SETTLED_SINCE) ?? -1) >= 0;
}

/** Declares a `pi` bin, or is one of pi's own packages. */
function isPiPackage(pkg: Record<string, unknown>): boolean {
  if (typeof pkg.name === "string" && (PI_PACKAGES as readonly string[]).includes(pkg.name)) return true;
  return isRecord(pkg.bin) && typeof pkg.bin.pi === "string";
}

/**
 * The package that holds `bin` (its real path): the nearest package.json above it that has
 * a name (folders with a bare `{"type": "module"}` are passed over), if that package is pi.
 */
export function piPackageOf(bin: string): { name: string; version: string } | undefined {
  let dir: string;
  try {
    dir = path.dirname(fs.realpathSync(bin));
  } catch {
    return undefined;
  }
  for (;;) {
    const pkg = readJson(path.join(dir, "package.json"));
    if (pkg && typeof pkg.name === "string") {
      return isPiPackage(pkg) && typeof pkg.version === "string" ? { name: pkg.name, version: pkg.version } : undefined;
    }
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

function readJson(file: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(fs.readFileSync(file, "utf8"));
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** What is known of the pi at `bin`: PI_SUBAGENTS_PI_VERSION wins over the package.json above it. */
export function identifyPi(bin: string, env: NodeJS.ProcessEnv): PiIdentity {
  const named = env[ENV.piVersion]?.trim();
  if (named) {
    if (VERSION.test(named)) return { version: named, source: "env", emitsSettled: versionEmitsSettled(named) };
    const problem = `${ENV.piVersion}="${named}" is not a version (like 1.6.0); pi is identified by its package.json instead`;
    return { ...identifyByPackage(bin), problem };
  }
  return identifyByPackage(bin);
}

function identifyByPackage(bin: string): PiIdentity {
  const pkg = piPackageOf(bin);
  if (!pkg) return { version: undefined, source: undefined, emitsSettled: false };
  return {
    version: pkg.version,
    source: "package",
    packageName: pkg.name,
    emitsSettled: versionEmitsSettled(pkg.version),
  };
}
