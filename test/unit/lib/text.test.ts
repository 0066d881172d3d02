import { describe, expect, it } from "vitest";
import { cutAfter, cutBefore, headChars, tailChars } from "../../../src/lib/text.js";

// "a😀b😀": a(0) 😀(1,2) b(3) 😀(4,5); a cut at 2 or 5 would split a pair.
const text = "a😀b😀";
/** No lone surrogate: every high surrogate is followed by a low one, every low one preceded by a high one. */
const wellFormed = (s: string) => !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);

describe("surrogate-safe cuts", () => {
  it.each([
    [0, 0],
    [1, 1],
    [2, 1],
    [3, 3],
    [4, 4],
    [5, 4],
    [6, 6],
    [99, 6],
    [-3, 0],
  ])("cutBefore at %i is %i", (end, cut) => {
    expect(cutBefore(text, end)).toBe(cut);
  });

  it.each([
    [0, 0],
    [1, 1],
    [2, 3],
    [3, 3],
    [5, 6],
    [6, 6],
    [99, 6],
    [-1, 0],
  ])("cutAfter at %i is %i", (start, cut) => {
    expect(cutAfter(text, start)).toBe(cut);
  });

  it("headChars keeps at most n chars and never half a pair", () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7].map((n) => headChars(text, n))).toEqual([
      "",
      "a",
      "a",
      "a😀",
      "a😀b",
      "a😀b",
      text,
      text,
    ]);
    for (let n = 0; n <= text.length; n++) expect(wellFormed(headChars(text, n))).toBe(true);
  });

  it("tailChars keeps at most n chars from the end and never half a pair", () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7].map((n) => tailChars(text, n))).toEqual([
      "",
      "",
      "😀",
      "b😀",
      "b😀",
      "😀b😀",
      text,
      text,
    ]);
    for (let n = 0; n <= text.length; n++) expect(wellFormed(tailChars(text, n))).toBe(true);
  });

  it("plain text is cut exactly", () => {
    expect(headChars("abcdef", 4)).toBe("abcd");
    expect(tailChars("abcdef", 4)).toBe("cdef");
  });
});
