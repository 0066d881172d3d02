/**
 * A run's warnings: each said to the user as it happens (the caller's warn hook, stderr in the
 * CLI) and gathered for result.json's errorMessage. A warning's line starts
 * `subagent-wrapper: warning:` (docs/cli.md), so a reader tells it from the line that ends a
 * failed run; result.json holds the warning's text without the prefix.
 */
export class RunWarnings {
  private readonly lines: string[] = [];

  constructor(private readonly hook: ((line: string) => void) | undefined) {}

  /** The warnings so far, in order. */
  get all(): readonly string[] {
    return this.lines;
  }

  /** A line for the user only, as it is (an error that goes with the outcome, not a warning). */
  say(line: string): void {
    try {
      this.hook?.(`subagent-wrapper: ${line}`);
    } catch {
      // A hook that throws (stderr on a full disk) never fails the run; result.json still tells the outcome.
    }
  }

  /** A warning for the user only: the run goes on and result.json does not carry it. */
  warn(line: string): void {
    this.say(`warning: ${line}`);
  }

  /** A warning for the user and result.json. */
  add(line: string): void {
    this.lines.push(line);
    this.warn(line);
  }

  /** The same, unless this very warning was given already (a file's error is looked at more than once). */
  addOnce(line: string): void {
    if (!this.lines.includes(line)) this.add(line);
  }
}
