import { describe, expect, it } from "vitest";
import { describeJsonError, firstBadOffset, lineAndColumn } from "../../../src/lib/json-error.js";

function parseError(text: string): Error {
  try {
    JSON.parse(text);
  } catch (err) {
    return err as Error;
  }
  throw new Error(`${JSON.stringify(text)} is valid JSON`);
}

/** Texts JSON.parse refuses, each with where it breaks (line, column). */
const BROKEN: Array<[string, number, number]> = [
  ['{\n  "runId": "r1",\n  "task": "x",\n}', 4, 1],
  ['{\n  "runId": "r1"\n  "task": "x"\n}', 3, 3],
  ['{"a": 1', 1, 8],
  ['{"a" 1}', 1, 6],
  ["[1,2,]", 1, 6],
  ['{"a":tru}', 1, 9],
  ['{"a":\n  nul}', 2, 6],
  ['{"a":"x\ny"}', 1, 8],
  ['{"a":1}x', 1, 8],
  ['{"a": 01}', 1, 8],
  ['{"a": -}', 1, 8],
  ["{'a': 1}", 1, 2],
  ['{"a": [1, 2}', 1, 12],
  ['{"a": "\\q"}', 1, 9],
  ["", 1, 1],
  ["  \n", 2, 1],
  ["{", 1, 2],
];

describe("describeJsonError: where a JSON text breaks, on every Node", () => {
  it.each(BROKEN)("%j breaks at line %i, column %i", (text, line, column) => {
    const error = parseError(text);
    const described = describeJsonError(text, error);
    expect(described).toMatch(new RegExp(` at line ${line}, column ${column}$`));
    // Said once, in this wording: not Node's own place (`position 12`, `(line 1 column 13)`, the text).
    expect(described).not.toMatch(/position|\(line|is not valid JSON/);
  });

  it("the scan agrees with the place JSON.parse names, when it names one", () => {
    for (const [text] of BROKEN) {
      const named = /at position (\d+)/.exec(parseError(text).message);
      if (named) expect([text, firstBadOffset(text)]).toEqual([text, Number(named[1])]);
    }
  });

  it("keeps Node's reason", () => {
    expect(describeJsonError('{"a" 1}', parseError('{"a" 1}'))).toBe(
      "Expected ':' after property name at line 1, column 6",
    );
    expect(describeJsonError("", parseError(""))).toBe("Unexpected end of JSON input at line 1, column 1");
  });

  it("a text nested too deep to scan is still described, without a place", () => {
    const text = "[".repeat(100_000);
    expect(describeJsonError(text, parseError(text))).not.toMatch(/ at line /);
  });

  it("line and column count characters, lines end at \\n", () => {
    expect(lineAndColumn("ab\ncd", 0)).toEqual({ line: 1, column: 1 });
    expect(lineAndColumn("ab\ncd", 3)).toEqual({ line: 2, column: 1 });
    expect(lineAndColumn("ab\ncd", 5)).toEqual({ line: 2, column: 3 });
    expect(lineAndColumn("ab", 99)).toEqual({ line: 1, column: 3 });
  });
});
