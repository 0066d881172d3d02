/**
 * Where this process sits in the tree and the tree's limits. A child's wrapper passes the
 * tree directory and the child's canonical path in its environment; without them this
 * process is the root.
 */
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { LIMITS, ROOT_PATH } from "../contracts/tree.js";
import { isCanonicalPath } from "./paths.js";

export const TREE_DIR_ENV = "PI_SUBAGENTS_TREE_DIR";
export const AGENT_PATH_ENV = "PI_SUBAGENTS_AGENT_PATH";
export const BASE_DIR_ENV = "PI_SUBAGENTS_DIR";

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
    maxActiveChildTurns: positiveInt(env.PI_SUBAGENTS_MAX_ACTIVE_CHILD_TURNS, LIMITS.maxActiveChildTurns),
    maxDepth: positiveInt(env.PI_SUBAGENTS_MAX_DEPTH, LIMITS.maxDepth),
    maxSpawns: positiveInt(env.PI_SUBAGENTS_MAX_SPAWNS, LIMITS.maxSpawns),
    turnTimeoutMs: positiveInt(env.PI_SUBAGENTS_TURN_TIMEOUT_MS, LIMITS.turnTimeoutMs),
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
  const self = env[AGENT_PATH_ENV];
  const treeDir = env[TREE_DIR_ENV];
  // A path that is not canonical (`..`, `/`, upper case) never names a folder in the tree
  // directory: such a process is a root of its own rather than a child that could escape it.
  if (self && treeDir && self !== ROOT_PATH && isCanonicalPath(self)) return { self, isRoot: false, treeDir };
  return { self: ROOT_PATH, isRoot: true, treeDir: undefined };
}

/** Where tree directories go: PI_SUBAGENTS_DIR, else `subagents/` beside the session file, else a temp folder. */
export function treeBaseDir(sessionFile: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return env[BASE_DIR_ENV] || (sessionFile ? path.join(path.dirname(sessionFile), "subagents") : path.join(os.tmpdir(), "pi-subagents"));
}

/** `<base>/<root session id>` (see treeBaseDir). */
export function rootTreeDir(sessionId: string, sessionFile: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(treeBaseDir(sessionFile, env), sessionId.replace(/[^A-Za-z0-9_.-]/g, "_"));
}
