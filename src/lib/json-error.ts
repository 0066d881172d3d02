/**
 * Where a JSON text breaks, in words a person can act on: `… at line 3, column 14`. Node
 * words JSON.parse's errors differently from one version to the next (Node 20 says `at
 * position 41`, Node 22 adds `(line 3 column 14)`, and neither gives a place for `Unexpected
 * token` or the end of the input), so the line and column are computed here from the offset:
 * the one the message names, else the one a small scan of the text finds.
 */

/** JSON.parse's message without the place it names (that is said once, by line and column). */
function reason(message: string): string {
  return message
    .replace(/ at position \d+.*$/s, "")
    .replace(/ in JSON$/, "")
    .replace(/, ".*" is not valid JSON$/s, "")
    .trim();
}

/** 1-based line and column of `offset` in `text` (lines end at `\n`). */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, Math.max(0, Math.min(offset, text.length)));
  const lineStart = before.lastIndexOf("\n") + 1;
  return { line: before.split("\n").length, column: before.length - lineStart + 1 };
}

/** `Expected ',' or '}' after property value at line 3, column 14`, for a text JSON.parse refused with `error`. */
export function describeJsonError(text: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const named = /at position (\d+)/.exec(message);
  const offset = named ? Number(named[1]) : firstBadOffset(text);
  const why = reason(message) || "invalid JSON";
  if (offset === undefined) return why;
  const { line, column } = lineAndColumn(text, offset);
  return `${why} at line ${line}, column ${column}`;
}

const WHITESPACE = new Set([" ", "\t", "\n", "\r"]);
const LITERALS = ["true", "false", "null"];
const NUMBER = /(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const STRING_BODY = /(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*/y;

/**
 * The offset of the first character that makes `text` invalid JSON (the end of the text when
 * it stops too soon). Only called after JSON.parse refused the text, for the messages that
 * do not say where; undefined when the text nests too deep to scan (the stack runs out).
 */
export function firstBadOffset(text: string): number | undefined {
  const scan = new Scan(text);
  try {
    scan.value();
    scan.space();
    return scan.at;
  } catch (err) {
    if (err instanceof BadAt) return err.offset;
    return undefined;
  }
}

class BadAt {
  constructor(readonly offset: number) {}
}

class Scan {
  at = 0;

  constructor(private readonly text: string) {}

  space(): void {
    while (WHITESPACE.has(this.text[this.at] ?? "")) this.at++;
  }

  value(): void {
    this.space();
    const char = this.text[this.at];
    const literal = LITERALS.find((word) => word[0] === char);
    if (char === "{") this.container("}", () => this.member());
    else if (char === "[") this.container("]", () => this.value());
    else if (char === '"') this.string();
    else if (literal) this.literal(literal);
    else {
      // A lone minus breaks after itself, as JSON.parse says.
      if (char === "-") this.at++;
      this.match(NUMBER);
    }
  }

  /** `true`, `false` or `null`, to its first wrong character (`tru}` breaks at the `}`). */
  private literal(word: string): void {
    for (const char of word) {
      if (this.text[this.at] !== char) throw new BadAt(this.at);
      this.at++;
    }
  }

  private member(): void {
    this.space();
    if (this.text[this.at] !== '"') throw new BadAt(this.at);
    this.string();
    this.expect(":");
    this.value();
  }

  /** `{…}` or `[…]`: items separated by commas, no trailing comma. */
  private container(close: string, item: () => void): void {
    this.at++;
    this.space();
    if (this.text[this.at] === close) {
      this.at++;
      return;
    }
    for (;;) {
      item();
      this.space();
      if (this.text[this.at] === close) {
        this.at++;
        return;
      }
      this.expect(",");
    }
  }

  private string(): void {
    this.at++;
    this.match(STRING_BODY, true);
    // A bad escape breaks at the character after the backslash, as JSON.parse says.
    if (this.text[this.at] === "\\") throw new BadAt(this.at + 1);
    if (this.text[this.at] !== '"') throw new BadAt(this.at);
    this.at++;
  }

  private expect(char: string): void {
    this.space();
    if (this.text[this.at] !== char) throw new BadAt(this.at);
    this.at++;
  }

  private match(pattern: RegExp, emptyOk = false): void {
    pattern.lastIndex = this.at;
    const found = pattern.exec(this.text);
    if (!found || (!emptyOk && found[0] === "")) throw new BadAt(this.at);
    this.at += found[0].length;
  }
}
