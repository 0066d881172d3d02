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
  /** The oldest Node the package says it runs on (its `engines.node`, `>=22.19.0` → `22.19.0`). */
  nodeFloor?: string;
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
export function piPackageOf(bin: string): { name: string; version: string; nodeFloor?: string } | undefined {
  let dir: string;
  try {
    dir = path.dirname(fs.realpathSync(bin));
  } catch {
    return undefined;
  }
  for (;;) {
    const pkg = readJson(path.join(dir, "package.json"));
    if (pkg && typeof pkg.name === "string") {
      if (!isPiPackage(pkg) || typeof pkg.version !== "string") return undefined;
      const floor =
        isRecord(pkg.engines) && typeof pkg.engines.node === "string" ? minimumOf(pkg.engines.node) : undefined;
      return { name: pkg.name, version: pkg.version, ...(floor && { nodeFloor: floor }) };
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
    ...(pkg.nodeFloor && { nodeFloor: pkg.nodeFloor }),
  };
}

/** The lowest version a `>=x.y.z` range allows (the form pi's `engines.node` takes); undefined for any other range. */
function minimumOf(range: string): string | undefined {
  return /^\s*>=\s*v?(\d+\.\d+\.\d+)\s*$/.exec(range)?.[1];
}

/** pi 0.75.0 and later (every 1.x) need Node 22.19, when no package.json says so. */
const NODE_22_SINCE = { pi: "0.75.0", node: "22.19.0" };

/** The oldest Node this pi runs on: its package's `engines.node`, else what its version is known to need. */
export function piNodeFloor(pi: Pick<PiIdentity, "version" | "nodeFloor">): string | undefined {
  if (pi.nodeFloor) return pi.nodeFloor;
  if (pi.version === undefined) return undefined;
  return (compareVersions(pi.version, NODE_22_SINCE.pi) ?? -1) >= 0 ? NODE_22_SINCE.node : undefined;
}

/**
 * The one line `doctor` and the wrapper give when pi is started by a Node older than it
 * needs (pi starts with `#!/usr/bin/env node`: the first `node` on PATH runs it).
 */
export function oldNodeHint(
  piVersion: string | undefined,
  floor: string,
  node: { path?: string; version?: string },
): string {
  const short = floor.replace(/\.0$/, "");
  const which = [node.path, node.version].filter(Boolean).join(", ");
  return `pi${piVersion ? ` ${piVersion}` : ""} needs Node ≥ ${short}; the node on PATH${which ? ` (${which})` : ""} starts it: put Node ${floor.split(".")[0]} first on PATH`;
}

/**
 * pi's stderr says it crashed on a Node older than it needs: Node ends its report of an
 * uncaught error with its own version (`Node.js v20.20.2`). Then the hint, else undefined.
 */
export function oldNodeCrash(
  pi: Pick<PiIdentity, "version" | "nodeFloor">,
  stderrTail: string,
  nodePath?: string,
): string | undefined {
  const floor = piNodeFloor(pi);
  const crashed = /^Node\.js v(\d+\.\d+\.\d+)\s*$/m.exec(stderrTail.trimEnd().split("\n").at(-1) ?? "")?.[1];
  if (!floor || !crashed || (compareVersions(crashed, floor) ?? 0) >= 0) return undefined;
  return oldNodeHint(pi.version, floor, { ...(nodePath && { path: nodePath }), version: crashed });
}
