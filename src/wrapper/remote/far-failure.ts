/**
 * How a far side that failed is told: in its own words (the first line of its prefix's stderr
 * and a tail of it), and an error for a far side that ended before its hello.
 */

/** At most this much of a failed prefix's stderr is shown. */
export const STDERR_TAIL_BYTES = 1024;

/** The far side closed before it said hello (the prefix failed to start, or died at once). */
export class FarSideEnded extends Error {
  constructor() {
    super("the far side ended before its hello");
  }
}

/** One line and a tail of at most 1 KB: what a runner that failed said. */
export function failureText(stderr: string): string {
  const text = stderr.trim();
  if (text === "") return "";
  const first = text.split("\n")[0]!;
  const tail = Buffer.from(text).subarray(-STDERR_TAIL_BYTES).toString("utf8");
  return tail.startsWith(first) ? tail : `${first}\n…${tail}`;
}

/** `could not start: <the prefix's first stderr line> (<how it ended>)<the rest of its tail>`. */
export function startFailure(said: string, how: string): string {
  if (said === "") return `could not start: ${how}`;
  const [first, ...rest] = said.split("\n");
  return `could not start: ${first} (${how})${rest.length > 0 ? `\n${rest.join("\n")}` : ""}`;
}
