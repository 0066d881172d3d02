/**
 * A run's warnings: each said to the user as it happens (the caller's warn hook, stderr in the
 * CLI) and gathered for result.json's errorMessage.
 */
export class RunWarnings {
  private readonly lines: string[] = [];

  constructor(private readonly warn: ((line: string) => void) | undefined) {}

  /** The warnings so far, in order. */
  get all(): readonly string[] {
    return this.lines;
  }

  /** A line for the user only; a hook that throws (stderr on a full disk) never fails the run. */
  say(line: string): void {
    try {
      this.warn?.(`subagent-wrapper: ${line}`);
    } catch {
      // the line is lost; result.json still tells the outcome
    }
  }

  /** A warning for the user and result.json. */
  add(line: string): void {
    this.lines.push(line);
    this.say(line);
  }

  /** The same, unless this very warning was given already (a file's error is looked at more than once). */
  addOnce(line: string): void {
    if (!this.lines.includes(line)) this.add(line);
  }
}
