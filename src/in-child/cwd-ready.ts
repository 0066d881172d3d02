/**
 * The child's side of meta.json `cwdReadyPath`: a caller that is still writing the cwd (the
 * agent tree writes an isolated child's checkout) starts the run at once, and the task
 * extension holds every tool call of the child at this wait until the file says the cwd is
 * ready. pi starts and makes its first model request meanwhile: what it reads of the project
 * before its first tool call (context files, `.pi`, `.agents`) the caller writes first.
 *
 * pi awaits `tool_call` handlers one after another, in the order the extensions were loaded,
 * on both lines; the task extension is loaded first, so no tool of any extension runs before
 * the wait ends. The writer puts the file in place whole (temp file + rename), so a read
 * sees all of it or nothing.
 *
 * Polled, not watched: a watch needs the folder to exist and misses nothing a 10 ms poll
 * would, and one failed open every 10 ms for the second or so of a wait costs nothing.
 * Unbounded here: the run's `timeoutMs`, and the wrapper's own watch on its parent, end a
 * child whose writer never writes.
 */
import fs from "node:fs";

/** What the file holds once the cwd is ready (a trailing newline allowed). */
export const CWD_READY = "ready";
/** The child's exit code when the file says the cwd could not be prepared. */
export const CWD_NOT_READY_EXIT = 3;

export interface CwdReadyOptions {
  /** How often the file is looked for (default 10 ms). */
  pollMs?: number;
  /** Reads the file: its text, or undefined while it does not exist (default: fs, sync). */
  read?: (file: string) => string | undefined;
}

function readIfThere(file: string): string | undefined {
  try {
    return fs.readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/**
 * Resolves once `file` holds `ready`; rejects with an Error carrying the file's text when it
 * holds anything else (why the cwd could not be prepared), or when it cannot be read.
 */
export function waitForCwdReady(file: string, options: CwdReadyOptions = {}): Promise<void> {
  const read = options.read ?? readIfThere;
  const pollMs = options.pollMs ?? 10;
  return new Promise((resolve, reject) => {
    const look = (): void => {
      let text: string | undefined;
      try {
        text = read(file);
      } catch (err) {
        reject(new Error(`cannot read ${file}: ${(err as Error).message}`));
        return;
      }
      if (text === undefined) {
        // Node's own timer, not the package's Clock: code inside the child imports only the
        // contracts (docs/architecture.md), and a test makes the wait short with pollMs.
        setTimeout(look, pollMs);
        return;
      }
      const said = text.trim();
      if (said === CWD_READY) resolve();
      else reject(new Error(said === "" ? `${file} is empty` : said));
    };
    look();
  });
}
