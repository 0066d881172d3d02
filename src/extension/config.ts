/**
 * Where this process sits in the tree and the tree's limits. A child's wrapper passes the
 * tree directory and the child's canonical path in its environment; without them this
 * process is the root.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ROOT_PATH } from "../contracts/agent-paths.js";
import { ENV } from "../contracts/env.js";
import { LIMITS } from "../contracts/tree.js";
import { isCanonicalPath } from "./tree/paths.js";

/** This package's root (two levels above dist/extension or src/extension). */
export const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
export const WRAPPER_BIN = path.join(PACKAGE_ROOT, "bin", "subagent-wrapper");
/** The entry children load with -e so they can delegate too. */
export const EXTENSION_ENTRY = path.join(PACKAGE_ROOT, "dist", "extension", "index.js");

export interface TreeLimits {
  maxActiveChildTurns: number;
  maxDepth: number;
  maxSpawns: number;
  turnTimeoutMs: number;
}

function positiveInt(value: string | undefined, fallback: number): number {
  const parsed = Number(value);
  return Number.isInteger(parsed) && parsed > 0 ? parsed : fallback;
}

/** Limits, each overridable by an environment variable (documented in the README). */
export function treeLimits(env: NodeJS.ProcessEnv = process.env): TreeLimits {
  return {
    maxActiveChildTurns: positiveInt(env[ENV.maxActiveChildTurns], LIMITS.maxActiveChildTurns),
    maxDepth: positiveInt(env[ENV.maxDepth], LIMITS.maxDepth),
    maxSpawns: positiveInt(env[ENV.maxSpawns], LIMITS.maxSpawns),
    turnTimeoutMs: positiveInt(env[ENV.turnTimeoutMs], LIMITS.turnTimeoutMs),
  };
}

export interface Identity {
  /** Canonical path of the agent this process runs. */
  self: string;
  /** True for the tree's root process. */
  isRoot: boolean;
  /** Set for a child (from its wrapper); the root finds its own at session_start. */
  treeDir: string | undefined;
}

export function identityFromEnv(env: NodeJS.ProcessEnv = process.env): Identity {
  const self = env[ENV.agentPath];
  const treeDir = env[ENV.treeDir];
  // A path that is not canonical (`..`, `/`, upper case) never names a folder in the tree
  // directory: such a process is a root of its own rather than a child that could escape it.
  if (self && treeDir && self !== ROOT_PATH && isCanonicalPath(self)) return { self, isRoot: false, treeDir };
  return { self: ROOT_PATH, isRoot: true, treeDir: undefined };
}
