/**
 * Where this process's short programs (git, the worktree setup command) are started: by
 * runProcess here, or by a small helper process (process-helper.ts) that a process with a
 * large heap uses instead. Starting a process costs its parent in proportion to the parent's
 * memory (Linux copies its page tables): ~2 ms from a 50 MB Node process, ~9 ms from a 200 MB
 * one such as pi, with the parent's event loop blocked meanwhile. The wrapper and the CLI are
 * small and keep the default; the extension, which runs inside pi, switches at load.
 */
import { type RunOptions, type RunResult, runProcess } from "./run-process.js";

/** Runs `file args` to completion: runProcess's contract (rejects only when it cannot start). */
export type LaunchProcess = (file: string, args: readonly string[], options: RunOptions) => Promise<RunResult>;

let current: LaunchProcess = runProcess;

/** Runs `file args` through this process's launcher (runProcess unless useProcessLauncher changed it). */
export function launchProcess(file: string, args: readonly string[], options: RunOptions): Promise<RunResult> {
  return current(file, args, options);
}

/** Makes `launch` this process's launcher; the returned function puts the one before it back. */
export function useProcessLauncher(launch: LaunchProcess): () => void {
  const before = current;
  current = launch;
  return () => {
    current = before;
  };
}
