/** Pure: the checks `subagent-wrapper doctor` reports and how they read. */
import { FAIL_MARK, indentContinuation, OK_MARK } from "./text.js";

export interface DoctorCheck {
  /** What was checked, e.g. "pi --version". */
  name: string;
  ok: boolean;
  /** What was found (or what went wrong). */
  detail: string;
  /** What to do about a failure. */
  hint?: string;
  /** Lines of extra information (shown under the check). */
  notes?: string[];
}

/** How the last line counts: checks (the default), or stale worktrees for `doctor --tree`. */
export interface ReportWords {
  passed: string;
  failed(count: number): string;
}

const CHECK_WORDS: ReportWords = {
  passed: "all checks passed",
  failed: (n) => `${n} check${n === 1 ? "" : "s"} failed`,
};

export function formatDoctorReport(checks: readonly DoctorCheck[], words: ReportWords = CHECK_WORDS): string {
  const width = Math.max(...checks.map((check) => check.name.length));
  const lines: string[] = [];
  for (const check of checks) {
    lines.push(
      `${check.ok ? OK_MARK : FAIL_MARK} ${check.name.padEnd(width)}  ${indentContinuation(check.detail, " ".repeat(width + 4))}`,
    );
    for (const note of check.notes ?? []) lines.push(`${" ".repeat(width + 4)}${note}`);
    if (!check.ok && check.hint) lines.push(`${" ".repeat(width + 4)}→ ${check.hint}`);
  }
  const failed = checks.filter((check) => !check.ok).length;
  lines.push("", failed === 0 ? words.passed : words.failed(failed));
  return `${lines.join("\n")}\n`;
}

/** "20.20.2" ≥ 20? */
export function nodeVersionOk(version: string, floor = 20): boolean {
  const major = Number(version.replace(/^v/, "").split(".")[0]);
  return Number.isInteger(major) && major >= floor;
}

/** The version in `pi --version` output (its first line, trimmed). */
export function parsePiVersion(stdout: string): string | undefined {
  const line = stdout
    .split("\n")
    .find((text) => text.trim() !== "")
    ?.trim();
  return line === undefined ? undefined : line.replace(/^pi\s+/i, "").replace(/^v(?=\d)/, "");
}
