/**
 * File names inside a run directory and a tree directory: the on-disk layout every process
 * of a tree and the CLI agree on (docs/architecture.md, "On-disk layout").
 */
import os from "node:os";
import path from "node:path";
import { ENV } from "./env.js";

/** The files of one run (one wrapper process). */
export const RUN_FILES = {
  meta: "meta.json",
  result: "result.json",
  events: "events.jsonl",
  stdout: "stdout.log",
  stderr: "stderr.log",
  transcript: "transcript.md",
  /** The wrapper's own stderr (written by the process that started it). */
  wrapperLog: "wrapper.log",
  /** The wrapper's pid, so a restarted parent can wait for a wrapper that outlived it. */
  wrapperPid: "wrapper.pid",
  /** The child's system-prompt addition. */
  instructions: "instructions.md",
  /** The reviewer's system-prompt addition (its definition's text), when the agent's checks name one. */
  reviewPrompt: "review-prompt.md",
  /** Live messages for the running child (meta.json `inboxPath`, see inbox.ts); delivered ones move to `inbox/delivered/`. */
  inbox: "inbox",
} as const;

/** Entries of a tree directory (`<base>/<root session id>/`) and of each agent's folder in it. */
export const TREE_FILES = {
  /** Who the root is (its session). */
  marker: "tree.json",
  /** One claim file per spawn: the per-tree cap, race-free. */
  spawns: "spawns",
  /** One claim file per nickname: unique in the tree. */
  nicknames: "nicknames",
  /** Messages posted to an agent (the root's is at the top) by its children. */
  inbox: "inbox",
  /** The agents' folders, one per path segment. */
  agents: "agents",
  /** Isolated agents' git worktrees, one flat folder each (`lead-checker` for /root/lead/checker). */
  worktrees: "worktrees",
  /**
   * While an isolated agent's first turn runs before its worktree is all written:
   * `<worktree name>.ready` once it is (meta.json `cwdReadyPath`), `<name>.ready.started` once
   * its child has started. Gone when the turn ends.
   */
  checkouts: "checkouts",
  /** The tree tag of a tree whose tree.json predates tags: claimed once, by exclusive creation. */
  treeTag: "tree-tag",
  /** A parent's queued child turns, published by its process. */
  queue: "queue.json",
  /** One agent's record. */
  record: "agent.json",
  /** One agent's pi session. */
  session: "session.jsonl",
  /** Every child dialog of the tree and how it ended, one JSON line each (turns/dialogs/dialogs.ts). */
  dialogs: "dialogs.jsonl",
  /** A user-defined role's text, snapshotted at spawn. */
  rolePrompt: "role-prompt.md",
  /** Each check command's last result and the workspace it ran on (meta.json `verify.statePath`): reused while nothing changed. */
  verifyChecks: "verify-checks.json",
  /** Every turn's final answer. */
  reports: "reports",
  /** One folder per turn. */
  runs: "runs",
  /**
   * A runner agent's workspace kept between turns (meta.json `runnerWorkspacePath`: a
   * sandbox's far side keeps it here); removed when the agent is closed.
   */
  runnerWorkspace: "runner-workspace",
  /**
   * Models the tree's later turns skip for a while (tree/cooldowns.ts): each that failed with
   * a rate-limit or quota error, until when.
   */
  cooldowns: "model-cooldowns.json",
  /**
   * In a parent's folder: which turn-end notices it was given and which its model took, so
   * each reaches its mailbox exactly once across restarts (extension/turns/delivery/deliveries.ts).
   */
  deliveries: "deliveries.json",
  /**
   * At the top of a tree directory: the owner leases, `owner.<generation>` — the process
   * (pid and start time) that drives the tree; the highest generation is the current one
   * (lib/owner-lease.ts).
   */
  ownerPrefix: "owner.",
  /**
   * At the top of a tree directory: `runners/<runner name>/slot.<n>.<generation>`, the leases
   * of each runner's turn slots across the whole tree (its capacity): each names the
   * process that holds it, the turn's wrapper (lib/slot-lease.ts, extension/turns/runner-slots.ts).
   */
  runners: "runners",
  /**
   * At the top of a tree directory, with a tree budget set: `budget-board/<runId>.json`, what
   * each turn has used so far (`{"tokens": <total tokens>, "cost": <cost>}`), written by its
   * wrapper at each model request it sees end (wrapper/budget-board.ts).
   */
  budgetBoard: "budget-board",
  /**
   * At the top of a tree directory, with settings `confirm_every_usd`: what the tree may spend
   * before the person is asked again, and whether they said no (contracts/spend-gate.ts).
   * Written by the root only.
   */
  spendGate: "spend-gate.json",
} as const;

/** Folders inside an agent's folder that are not child agents. */
export const AGENT_SUBFOLDERS: ReadonlySet<string> = new Set([
  TREE_FILES.runs,
  TREE_FILES.reports,
  TREE_FILES.inbox,
  TREE_FILES.runnerWorkspace,
]);

/**
 * The spending ledger of every tree of the user, in pi's agent dir: `subagents/ledger/`, one
 * file per local month (`2026-12.jsonl`), so a check reads one month's lines at most and an
 * old month can be deleted by hand. Each line is one model request's cost (contracts/budget-ledger.ts).
 */
export function ledgerDir(agentDir: string): string {
  return path.join(agentDir, "subagents", "ledger");
}

/** The ledger file of the local month holding `at` (ms since the epoch). */
export function ledgerFile(dir: string, at: number): string {
  const date = new Date(at);
  return path.join(dir, `${date.getFullYear()}-${String(date.getMonth() + 1).padStart(2, "0")}.jsonl`);
}

/** Run directory names sort in run order: `0001-spawn`, `0002-followup`, … */
export function runName(index: number, kind: string): string {
  return `${String(index).padStart(4, "0")}-${kind}`;
}

/** What runName makes: a read-back run name matches it, so it can never name a folder outside its agent's. */
export const RUN_NAME_PATTERN = /^\d{4,}-[a-z][a-z0-9_-]*$/;

/** Where tree directories go: PI_SUBAGENTS_DIR, else `subagents/` beside the session file, else a temp folder. */
export function treeBaseDir(sessionFile: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return (
    env[ENV.baseDir] ||
    (sessionFile ? path.join(path.dirname(sessionFile), "subagents") : path.join(os.tmpdir(), "pi-subagents"))
  );
}

/**
 * Whether treeBaseDir is the temp folder (no PI_SUBAGENTS_DIR, no session file: `pi
 * --no-session`): such a tree cannot be resumed, so the root removes it when it ends.
 */
export function treeIsTemporary(sessionFile: string | undefined, env: NodeJS.ProcessEnv = process.env): boolean {
  return !env[ENV.baseDir] && !sessionFile;
}

/** `<base>/<root session id>` (see treeBaseDir). */
export function rootTreeDir(
  sessionId: string,
  sessionFile: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): string {
  return path.join(treeBaseDir(sessionFile, env), sessionId.replace(/[^A-Za-z0-9_.-]/g, "_"));
}
