/** Pure text helpers shared by the inspect, tail and doctor screens. */

export const OK_MARK = "✓";
export const FAIL_MARK = "✗";

/** 850 → "850 ms", 12_345 → "12.3 s", 754_000 → "12 min 34 s". */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return "?";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.round((ms % 60_000) / 1000);
  return `${minutes} min ${seconds} s`;
}

/** 1234567 → "1,234,567" (fixed separator, so output does not depend on the locale). */
export function formatCount(n: number): string {
  if (!Number.isFinite(n)) return "?";
  return Math.round(n)
    .toString()
    .replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** The local wall-clock time of a ms-since-epoch stamp, HH:MM:SS. */
export function clockTime(ts: number): string {
  const date = new Date(ts);
  if (Number.isNaN(date.getTime())) return "--:--:--";
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`;
}

/** Prefix every line after the first with `pad` (for continuation lines under a label). */
export function indentContinuation(text: string, pad: string): string {
  return text.replace(/\n/g, `\n${pad}`);
}

/** The last `count` lines of a text, without a trailing empty line. */
export function lastLines(text: string, count: number): string[] {
  const lines = text.replace(/\n+$/, "").split("\n");
  return lines.length === 1 && lines[0] === "" ? [] : lines.slice(-count);
}

/** A one-line preview of a long text: its first line, cut at `max` characters. */
export function firstLinePreview(text: string, max = 100): string {
  const line = text.split("\n", 1)[0] ?? "";
  const cut = line.length > max ? `${line.slice(0, max)}…` : line;
  const lines = text.split("\n").length;
  return lines > 1 || line.length > max ? `${cut}  (${plural(lines, "line")}, ${plural(text.length, "char")})` : cut;
}

/** A section header: `── title ──`. */
export function sectionHeader(title: string): string {
  return `── ${title} ──`;
}

/** 1 → "1 record", 3 → "3 records". */
export function plural(n: number, noun: string): string {
  return `${formatCount(n)} ${noun}${n === 1 ? "" : "s"}`;
}
