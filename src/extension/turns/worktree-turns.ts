/**
 * The turns of an isolated agent (`isolation: "worktree"`): each runs in the agent's own
 * worktree, and what a turn changed is committed on the agent's branch when it ends, one
 * commit per turn, whatever the outcome. close_agent removes the worktree (the branch stays
 * when it holds commits); a missing worktree is recreated from its branch before a turn.
 *
 * `WorktreeOperations` is the runtime's seam for this (the real one runs git; unit tests of
 * the runtime may pass their own). Nothing here merges into the parent's tree: the notice's
 * `worktree` says how the parent can bring the work in.
 */
import fs from "node:fs";
import path from "node:path";
import { bringCommandLine } from "../../contracts/bring.js";
import { RUN_FILES, TREE_FILES } from "../../contracts/layout.js";
import { cwdStartedPath } from "../../contracts/meta.js";
import type { NoticeWorktree } from "../../contracts/notice.js";
import type { AgentRecordV1, AgentWorktreeV1 } from "../../contracts/tree.js";
import { writeFileAtomic } from "../../lib/atomic-file.js";
import { type Clock, systemClock } from "../../lib/clock.js";
import { serialized } from "../../lib/serialized.js";
import { errorText } from "../../lib/values.js";
import { WRAPPER_BIN } from "../config.js";
import {
  branchCommit,
  commitTurn,
  ensureWorktree,
  isCheckedOut,
  removeWorktree,
  worktreeCwd,
  worktreeSummary,
} from "../isolation/index.js";

/**
 * The real operations run one at a time per worktree (a promise chain keyed by its folder),
 * so a follow-up's turn never starts while the previous turn's commit is still being made.
 */
export interface WorktreeOperations {
  /**
   * Where the child's next turn runs; its worktree is recreated from the branch when it went
   * missing. While the worktree's checkout is still being written (see `adopt`), at once,
   * with `readyPath`: the turn starts, and its child's tool calls wait for that file
   * (meta.json `cwdReadyPath`).
   */
  turnCwd(worktree: AgentWorktreeV1): Promise<TurnPlace>;
  /**
   * A new worktree whose files are not all written yet: `finishCheckout` writes the rest.
   * It runs once the first turn's child says its start-up is over (so the two do not compete
   * for the machine), or CHECKOUT_START_WAIT_MS after adopt, or at once on startCheckout or
   * when a commit or a removal needs it. The first turn need not wait; commit and remove
   * wait for it. Resolves (never rejects) once the ready file says how the checkout ended.
   */
  adopt(worktree: AgentWorktreeV1, finishCheckout: () => Promise<void>): Promise<void>;
  /** Starts an adopted checkout now, when no child is starting in the worktree (its first turn waits in the queue). */
  startCheckout(worktree: AgentWorktreeV1): void;
  /**
   * Commits what is uncommitted in the worktree (no commit when nothing changed) and tells
   * the branch against its base. Never rejects: a failure is the result's `error`.
   */
  commit(worktree: AgentWorktreeV1, message: string): Promise<NoticeWorktree>;
  /** Removes the worktree (what is left uncommitted is committed first); the branch goes when it holds no commit. */
  remove(worktree: AgentWorktreeV1): Promise<void>;
}

export interface TurnPlace {
  cwd: string;
  /** The file that says when `cwd` is ready, while a checkout is still writing it. */
  readyPath?: string;
}

/**
 * The file that says when a worktree's checkout is done: `<tree>/checkouts/<name>.ready`
 * (worktrees live at `<tree>/worktrees/<name>`), so `worktrees/` holds worktrees only.
 */
export function checkoutReadyPath(worktree: AgentWorktreeV1): string {
  const treeDir = path.dirname(path.dirname(worktree.path));
  return path.join(treeDir, TREE_FILES.checkouts, `${path.basename(worktree.path)}.ready`);
}

/**
 * The command that takes just the child's changes into the parent's working tree, keeping
 * what the parent has not committed (docs/isolation.md): this package's own CLI by its full
 * path, so it runs from the parent's shell whether or not `subagent-wrapper` is on its PATH.
 */
export function mergeHint(base: string, head: string, program: string = WRAPPER_BIN): string {
  return bringCommandLine(program, base, head);
}

/** The commit message of one turn: the agent, the turn's number and how it ended. */
export function turnCommitMessage(record: AgentRecordV1, how: string): string {
  return `${record.path} turn ${record.runs.length}: ${how}\n\nTask ${record.taskName} of ${record.nickname} (pi-subagent-tree).`;
}

async function summarize(worktree: AgentWorktreeV1, head: string, error?: string): Promise<NoticeWorktree> {
  const summary = await worktreeSummary({ worktreePath: worktree.gitDir, base: worktree.baseCommit, head }).catch(
    () => undefined,
  );
  const changed = summary !== undefined && summary.changed_files.length > 0;
  return {
    path: worktree.path,
    branch: worktree.branch,
    base_commit: worktree.baseCommit,
    head_commit: head,
    changed_files: summary?.changed_files ?? [],
    ...(summary?.changed_files_total !== undefined && { changed_files_total: summary.changed_files_total }),
    insertions: summary?.insertions ?? 0,
    deletions: summary?.deletions ?? 0,
    ...(changed && { merge_hint: mergeHint(worktree.baseCommit, head) }),
    ...(error !== undefined && { error }),
  };
}

async function removeReadyFiles(worktree: AgentWorktreeV1): Promise<void> {
  for (const file of [checkoutReadyPath(worktree), cwdStartedPath(checkoutReadyPath(worktree))]) {
    await fs.promises.rm(file, { force: true }).catch(() => undefined);
  }
}

async function commitWorktree(worktree: AgentWorktreeV1, message: string): Promise<NoticeWorktree> {
  // Once a turn has ended its child no longer waits for the checkout.
  await removeReadyFiles(worktree);
  // Without its index (a checkout that failed or was cut short) `add --all` would build a new
  // one from the files that happen to be there and commit the rest as deleted.
  if (!(await isCheckedOut(worktree.path))) {
    const head = (await branchCommit(worktree.gitDir, worktree.branch).catch(() => undefined)) ?? worktree.baseCommit;
    return summarize(
      worktree,
      head,
      "nothing was committed: the worktree has no index (its checkout did not finish, or its link to the repository is broken)",
    );
  }
  try {
    const { head } = await commitTurn({ worktreePath: worktree.path, message, exclude: worktree.setupPaths ?? [] });
    return await summarize(worktree, head);
  } catch (err) {
    // The work stays in the worktree (or on the branch): say so, with the branch as it is.
    const head = (await branchCommit(worktree.gitDir, worktree.branch).catch(() => undefined)) ?? worktree.baseCommit;
    return summarize(worktree, head, `the turn's changes could not be committed: ${errorText(err)}`);
  }
}

/**
 * How long a new worktree's checkout waits for its child to say that it has started: only a
 * child that never says so (none does, short of a pi that does not load the task extension)
 * waits this long; a turn that ends meanwhile, or a queued one, starts it at once.
 */
export const CHECKOUT_START_WAIT_MS = 10_000;
const STARTED_POLL_MS = 20;

/** Resolves when the child of `readyPath` says it has started, after `waitMs`, or on `startNow`. */
function checkoutStart(readyPath: string, waitMs: number, clock: Clock): { started: Promise<void>; startNow(): void } {
  let startNow!: () => void;
  const started = new Promise<void>((resolve) => {
    const startedFile = cwdStartedPath(readyPath);
    // Polled: one stat every 20 ms for the second or two a child takes to start.
    const poll = clock.setInterval(() => {
      if (fs.existsSync(startedFile)) startNow();
    }, STARTED_POLL_MS);
    // Neither timer holds pi open: a worktree left without its index is written again before its next turn.
    const fallback = clock.setTimeout(() => startNow(), waitMs, { unref: true });
    startNow = () => {
      clock.clearInterval(poll);
      clock.clearTimeout(fallback);
      resolve();
    };
  });
  return { started, startNow };
}

/**
 * Isolated turns with git. `startWaitMs`: how long an adopted checkout waits for its child to
 * say that it has started (default CHECKOUT_START_WAIT_MS), on `clock`.
 */
export function gitWorktreeOperations(
  startWaitMs: number = CHECKOUT_START_WAIT_MS,
  clock: Clock = systemClock,
): WorktreeOperations {
  /** Worktrees whose checkout has not finished, by folder: how to start it now. */
  const pendingCheckouts = new Map<string, { startNow(): void }>();
  const startNow = (worktree: AgentWorktreeV1) => pendingCheckouts.get(worktree.path)?.startNow();
  return {
    turnCwd: (worktree) => {
      if (pendingCheckouts.has(worktree.path)) {
        return Promise.resolve({
          cwd: worktreeCwd(worktree.path, worktree.subdir),
          readyPath: checkoutReadyPath(worktree),
        });
      }
      return serialized(`worktree:${worktree.path}`, async () => {
        // The usual case runs no git process: the worktree is there, checked out, with the cwd in it.
        const cwd = worktreeCwd(worktree.path, worktree.subdir);
        if ((await isCheckedOut(worktree.path)) && fs.existsSync(cwd)) return { cwd };
        const ensured = await ensureWorktree({
          topLevel: worktree.gitDir,
          worktreePath: worktree.path,
          branch: worktree.branch,
          subdir: worktree.subdir,
        });
        return { cwd: ensured.cwd };
      });
    },
    adopt: (worktree, finishCheckout) => {
      const readyPath = checkoutReadyPath(worktree);
      // Made now: the child writes its started file there before the ready file exists.
      fs.mkdirSync(path.dirname(readyPath), { recursive: true });
      const start = checkoutStart(readyPath, startWaitMs, clock);
      pendingCheckouts.set(worktree.path, start);
      // In the worktree's chain, so a commit or a removal waits until every file is written.
      return serialized(`worktree:${worktree.path}`, async () => {
        await start.started;
        const outcome = await finishCheckout().then(
          () => "ready",
          (err: unknown) => `the worktree's checkout failed: ${errorText(err)}`,
        );
        pendingCheckouts.delete(worktree.path);
        // A child that cannot be told would wait until its turn's time limit: say it in the
        // file whatever happens, and if even that fails the child's wrapper still ends with its parent.
        await writeFileAtomic(readyPath, `${outcome}\n`, { durable: false }).catch(() => undefined);
      });
    },
    startCheckout: startNow,
    commit: (worktree, message) => {
      startNow(worktree);
      return serialized(`worktree:${worktree.path}`, () => commitWorktree(worktree, message));
    },
    remove: (worktree) => {
      startNow(worktree);
      return serialized(`worktree:${worktree.path}`, async () => {
        if (fs.existsSync(worktree.path))
          await commitWorktree(worktree, "uncommitted work found when the agent was closed");
        else await removeReadyFiles(worktree);
        await removeWorktree({
          topLevel: worktree.gitDir,
          worktreePath: worktree.path,
          branch: worktree.branch,
          base: worktree.baseCommit,
        });
      });
    },
  };
}

/**
 * Re-attach: a turn still at work whose checkout was being written (meta.json
 * `cwdReadyPath` of `runDir`) by a process that died before it said `ready`. The turn's child
 * (on a runner, its wrapper, which lands the turn's commit in this checkout) waits for that
 * file, and nobody else would write it: the checkout is finished here (ensureWorktree writes a
 * checkout that has no index) and the file written, whatever happened. Nothing when the file
 * is there or the run had none.
 */
export async function finishLeftCheckout(worktree: AgentWorktreeV1, runDir: string): Promise<void> {
  let readyPath: unknown;
  try {
    readyPath = JSON.parse(await fs.promises.readFile(path.join(runDir, RUN_FILES.meta), "utf8")).cwdReadyPath;
  } catch {
    return;
  }
  if (typeof readyPath !== "string" || fs.existsSync(readyPath)) return;
  await serialized(`worktree:${worktree.path}`, async () => {
    const outcome = await ensureWorktree({
      topLevel: worktree.gitDir,
      worktreePath: worktree.path,
      branch: worktree.branch,
      subdir: worktree.subdir,
    }).then(
      () => "ready",
      (err: unknown) => `the worktree's checkout failed: ${errorText(err)}`,
    );
    await writeFileAtomic(readyPath, `${outcome}\n`, { durable: false }).catch(() => undefined);
  });
}

/** Isolated turns with git (the runtime's default). */
export const gitWorktrees: WorktreeOperations = gitWorktreeOperations();

/**
 * The end of an isolated agent's turn: whatever the turn left in its worktree becomes one
 * commit on its branch, and the notice gets the branch's summary (the record's
 * `worktree.head` a copy of it, written with the record). Undefined without isolation.
 */
export async function finishWorktreeTurn(
  ops: WorktreeOperations,
  record: AgentRecordV1,
  how: string,
): Promise<NoticeWorktree | undefined> {
  if (!record.worktree) return undefined;
  const worktree = await ops.commit(record.worktree, turnCommitMessage(record, how));
  // The record keeps what the notice says of the branch, for /agents and inspect.
  record.worktree.head = {
    commit: worktree.head_commit,
    changedFiles: worktree.changed_files,
    ...(worktree.changed_files_total !== undefined && { changedFilesTotal: worktree.changed_files_total }),
    insertions: worktree.insertions,
    deletions: worktree.deletions,
  };
  return worktree;
}

/** close_agent: the worktrees of a closed subtree go, deepest first; one that resists stays for `doctor --tree` to report. */
export async function removeWorktrees(ops: WorktreeOperations, records: readonly AgentRecordV1[]): Promise<void> {
  for (const record of [...records].sort((a, b) => b.spawnSeq - a.spawnSeq)) {
    if (record.worktree) await ops.remove(record.worktree).catch(() => undefined);
  }
}
