/** The marker an agent writes at the start of a line to stop its run: `[ABORT] <reason>`. */
export const ABORT_MARKER = "[ABORT]";

/** Reason recorded when the marker line carries none. */
export const ABORT_NO_REASON = "no reason given";

/**
 * Find the first `[ABORT] <reason>` line in the given text blocks. A line counts when it
 * starts with the marker after optional white space; a mention mid-line does not. Returns the
 * reason (rest of that line, trimmed) or `undefined` when no block holds a marker line.
 */
export function findAbortMarker(textBlocks: Iterable<string>): string | undefined {
  for (const block of textBlocks) {
    for (const line of block.split(/\r?\n|\r/)) {
      const trimmed = line.trimStart();
      if (trimmed.startsWith(ABORT_MARKER)) {
        const reason = trimmed.slice(ABORT_MARKER.length).trim();
        return reason === "" ? ABORT_NO_REASON : reason;
      }
    }
  }
  return undefined;
}
