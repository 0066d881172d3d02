/**
 * Cutting strings by UTF-16 length without splitting a surrogate pair: a cut through one
 * would leave a lone half, which JSON.stringify escapes and a model reads as garbage.
 */

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/** `end` clamped to the text, moved back by one when it would fall inside a surrogate pair. */
export function cutBefore(text: string, end: number): number {
  if (end <= 0) return 0;
  if (end >= text.length) return text.length;
  return isHighSurrogate(text.charCodeAt(end - 1)) ? end - 1 : end;
}

/** `start` clamped to the text, moved on by one when it would fall inside a surrogate pair. */
export function cutAfter(text: string, start: number): number {
  if (start <= 0) return 0;
  if (start >= text.length) return text.length;
  return isLowSurrogate(text.charCodeAt(start)) ? start + 1 : start;
}

/** The first `n` chars, one fewer when the cut would split a surrogate pair. */
export function headChars(text: string, n: number): string {
  return text.slice(0, cutBefore(text, n));
}

/** The last `n` chars, one fewer when the cut would split a surrogate pair. */
export function tailChars(text: string, n: number): string {
  return n <= 0 ? "" : text.slice(cutAfter(text, text.length - n));
}

/** How many chars of a value an error message quotes: enough to recognise it, never a flood. */
export const ERROR_VALUE_CHARS = 200;

/**
 * A value as an error message quotes it: a string as it is, anything else as JSON, cut to
 * `max` chars with `…` when longer. Tool errors and report lines quote input through this,
 * so a 5 MB argument comes back as 200 chars, not 5 MB.
 */
export function errorValue(value: unknown, max = ERROR_VALUE_CHARS): string {
  let text: string;
  try {
    text = typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  return text.length > max ? `${headChars(text, max)}…` : text;
}
