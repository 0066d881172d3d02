/**
 * Pure: what `subagent-wrapper bring <base> <head>` does with each path the agent changed,
 * and how it says what it did. The rule that keeps the parent's uncommitted work: a file is
 * replaced by the agent's version only when it still holds exactly what the agent started
 * from (the base commit keeps that, so nothing of the parent's is lost); a file the parent
 * changed too is merged line by line, or kept as it is with the agent's version beside it.
 */
import { shortCommit } from "../contracts/bring.js";
import { plural } from "./text.js";

/** One side of a path: absent, or a blob with its git mode. */
export type Side = { kind: "absent" } | { kind: "blob"; blob: string; mode: string };

/** One line of `git diff --raw`: a path and what it was at the base and is at the head. */
export interface ChangedPath {
  path: string;
  base: Side;
  head: Side;
}

/** The parent's working tree at a path, hashed as git would hash it (its filters applied). */
export type Present =
  | { kind: "absent" }
  | { kind: "file"; blob: string; executable: boolean }
  | { kind: "symlink"; blob: string }
  /** A folder, a socket, …: nothing git could hold at that path. */
  | { kind: "other" };

export type Step =
  /** The file already holds the agent's version. */
  | { kind: "already" }
  /** The file holds what the agent started from: the agent's version replaces it (or it goes). */
  | { kind: "take" }
  /** Both changed a text file: a line merge, with conflict markers where both changed the same lines. */
  | { kind: "merge" }
  /** Both changed it in a way no line merge can join: yours stays, the agent's goes beside it. */
  | { kind: "conflict"; why: string; besideToo: boolean };

const GITLINK = "160000";
const SYMLINK = "120000";
const ZERO = /^0+$/;

function side(mode: string, blob: string): Side {
  return mode === "000000" || ZERO.test(blob) ? { kind: "absent" } : { kind: "blob", blob, mode };
}

/** `git diff --raw -z --no-renames --no-abbrev` output: `:<mode> <mode> <sha> <sha> <status>\0<path>\0` each. */
export function parseRawDiff(text: string): ChangedPath[] {
  const parts = text.split("\0");
  const changes: ChangedPath[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const header = parts[i]!.replace(/^\n/, "");
    const file = parts[i + 1]!;
    const [oldMode, newMode, oldBlob, newBlob] = header.replace(/^:/, "").split(" ");
    if (!header.startsWith(":") || !oldMode || !newMode || !oldBlob || !newBlob) continue;
    changes.push({ path: file, base: side(oldMode, oldBlob), head: side(newMode, newBlob) });
  }
  return changes;
}

const isExecutable = (mode: string): boolean => mode === "100755";

/** Whether the working tree holds exactly `s` at that path (content and kind; the executable bit apart). */
function holds(present: Present, s: Side): boolean {
  if (s.kind === "absent") return present.kind === "absent";
  if (present.kind === "file") return s.mode !== SYMLINK && s.mode !== GITLINK && present.blob === s.blob;
  if (present.kind === "symlink") return s.mode === SYMLINK && present.blob === s.blob;
  return false;
}

/** What to do with one changed path, given what the parent's working tree holds there now. */
export function stepFor(change: ChangedPath, present: Present): Step {
  const { base, head } = change;
  if ((base.kind === "blob" && base.mode === GITLINK) || (head.kind === "blob" && head.mode === GITLINK))
    return { kind: "conflict", why: "a submodule: bring it in inside the submodule", besideToo: false };
  if (holds(present, head)) return { kind: "already" };
  if (holds(present, base)) return { kind: "take" };
  // From here on, the parent changed the path since the agent started, and so did the agent.
  if (head.kind === "absent")
    return { kind: "conflict", why: "the agent deleted it and you changed it: yours is kept", besideToo: false };
  const where = "yours is kept, the agent's is beside it";
  if (present.kind === "absent")
    return { kind: "conflict", why: `you deleted it, the agent changed it: ${where}`, besideToo: true };
  if (present.kind === "other")
    return {
      kind: "conflict",
      why: `something not a file of yours is there: the agent's is beside it`,
      besideToo: true,
    };
  const links = present.kind === "symlink" || head.mode === SYMLINK || (base.kind === "blob" && base.mode === SYMLINK);
  if (links) return { kind: "conflict", why: `a symbolic link both changed: ${where}`, besideToo: true };
  return { kind: "merge" };
}

/** The mode a written file gets: the agent's executable bit when the agent changed it and you did not, else yours. */
export function executableAfter(change: ChangedPath, present: Present): boolean {
  const yours = present.kind === "file" ? present.executable : undefined;
  const before = change.base.kind === "blob" ? isExecutable(change.base.mode) : undefined;
  const after = change.head.kind === "blob" ? isExecutable(change.head.mode) : false;
  if (yours === undefined || before === undefined || yours === before) return after;
  return yours;
}

/** Where the agent's version of a conflicting file goes beside yours: `<path>~<head>` (git's own naming of such copies). */
export function besidePath(file: string, head: string): string {
  return `${file}~${shortCommit(head)}`;
}

/** What happened to one path. */
export type Outcome =
  | { path: string; kind: "already" | "taken" | "deleted" | "merged" }
  | { path: string; kind: "conflict"; why: string };

/** What a bring did, for its report. */
export interface BringReport {
  base: string;
  head: string;
  outcomes: Outcome[];
}

/** Only the conflicting files, in path order. */
export function conflicts(report: BringReport): Array<Extract<Outcome, { kind: "conflict" }>> {
  return report.outcomes.filter(
    (outcome): outcome is Extract<Outcome, { kind: "conflict" }> => outcome.kind === "conflict",
  );
}

/**
 * The report: one line of what came in, then, when any file conflicts, one line naming them
 * all and one line each saying why. Nothing is staged, so `git diff` shows what came in.
 */
export function formatBring(report: BringReport): string[] {
  const range = `${shortCommit(report.base)}..${shortCommit(report.head)}`;
  const count = (kind: Outcome["kind"]) => report.outcomes.filter((outcome) => outcome.kind === kind).length;
  if (report.outcomes.length === 0) return [`nothing to bring in: ${range} changes no file`];
  const parts = [
    count("taken") + count("deleted") > 0 && `${count("taken") + count("deleted")} taken as the agent left them`,
    count("merged") > 0 && `${count("merged")} merged with your changes`,
    count("already") > 0 && `${count("already")} already as the agent left them`,
  ].filter(Boolean);
  const found = conflicts(report);
  if (found.length > 0) parts.push(`${found.length} in conflict`);
  const lines = [
    `brought in ${range} (${plural(report.outcomes.length, "file")}): ${parts.join(", ")}; your uncommitted work is kept and nothing is staged`,
  ];
  if (found.length === 0) return lines;
  lines.push(`conflicts: ${found.map((outcome) => outcome.path).join(", ")}`);
  for (const outcome of found) lines.push(`  ${outcome.path}: ${outcome.why}`);
  return lines;
}
