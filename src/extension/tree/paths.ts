/**
 * Canonical agent paths (`/root`, `/root/mid/leaf`) and nicknames (a short human name per
 * agent, unique in the tree, for people reading lists and notices).
 *
 * A path is a coordination identifier, not a file path; but agent folders in the tree
 * directory are named after it, so every function that builds or accepts a path checks each
 * segment against TASK_NAME_PATTERN and nothing like `..` can slip through.
 */
import { randomBytes } from "node:crypto";
import { isCanonicalPath, ROOT_PATH, TASK_NAME_PATTERN } from "../../contracts/agent-paths.js";
import { errorValue } from "../../lib/text.js";

export { isCanonicalPath, TASK_NAME_PATTERN };

const ROOT_PREFIX = `${ROOT_PATH}/`;

function assertCanonical(path: string): void {
  if (!isCanonicalPath(path)) throw new Error(`not a canonical agent path: ${errorValue(JSON.stringify(path))}`);
}

/** `/root` + `scout_one` → `/root/scout_one`. Throws on a bad name so no malformed path is ever built. */
export function childPath(parent: string, taskName: string): string {
  assertCanonical(parent);
  if (!TASK_NAME_PATTERN.test(taskName)) throw new Error(`invalid task name: ${errorValue(JSON.stringify(taskName))}`);
  return `${parent}/${taskName}`;
}

/** The parent's path; undefined for the root, which has none. */
export function parentOf(path: string): string | undefined {
  assertCanonical(path);
  if (path === ROOT_PATH) return undefined;
  return path.slice(0, path.lastIndexOf("/"));
}

/** Levels below the root: `/root` = 0, `/root/a/b/c` = 3. */
export function depthOf(path: string): number {
  return agentFolderSegments(path).length;
}

/**
 * A target as a model writes it: a canonical path, or a path relative to the caller
 * (`mid`, `mid/leaf`). Whitespace and one trailing `/` are forgiven because models add them;
 * anything else malformed is undefined so the caller can answer `agent not found`.
 */
export function resolveTarget(caller: string, target: string): string | undefined {
  if (!isCanonicalPath(caller)) return undefined;
  let text = target.trim();
  if (text.endsWith("/")) text = text.slice(0, -1);
  if (text === "") return undefined;
  if (text.startsWith("/")) return isCanonicalPath(text) ? text : undefined;
  const segments = text.split("/");
  if (!segments.every((segment) => TASK_NAME_PATTERN.test(segment))) return undefined;
  return `${caller}/${segments.join("/")}`;
}

/** True when `path` lies below `ancestor` (not equal to it). */
export function isStrictDescendant(ancestor: string, path: string): boolean {
  return path.startsWith(`${ancestor}/`);
}

/**
 * The folder names of an agent under the tree's `agents/` directory (`/root/mid/leaf` →
 * `["mid", "leaf"]`). Throws for anything not canonical: this is the guard that keeps every
 * agent folder inside the tree directory.
 */
export function agentFolderSegments(path: string): string[] {
  assertCanonical(path);
  return path === ROOT_PATH ? [] : path.slice(ROOT_PREFIX.length).split("/");
}

/** Scientists and scholars, in the order they are handed out (fixed, so a tree's first names are the same in every run and in docs/tools.md). */
export const NICKNAMES: readonly string[] = [
  "Euclid",
  "Archimedes",
  "Ptolemy",
  "Hypatia",
  "Avicenna",
  "Averroes",
  "Al-Khwarizmi",
  "Fibonacci",
  "Copernicus",
  "Kepler",
  "Galileo",
  "Newton",
  "Leibniz",
  "Euler",
  "Gauss",
  "Noether",
  "Lovelace",
  "Babbage",
  "Turing",
  "Curie",
  "Pythagoras",
  "Thales",
  "Eratosthenes",
  "Hipparchus",
  "Aryabhata",
  "Brahmagupta",
  "Alhazen",
  "Al-Biruni",
  "Khayyam",
  "Cardano",
  "Vesalius",
  "Brahe",
  "Descartes",
  "Fermat",
  "Pascal",
  "Huygens",
  "Hooke",
  "Boyle",
  "Halley",
  "Lavoisier",
  "Lagrange",
  "Laplace",
  "Fourier",
  "Cauchy",
  "Galois",
  "Abel",
  "Riemann",
  "Faraday",
  "Maxwell",
  "Darwin",
  "Mendel",
  "Pasteur",
  "Mendeleev",
  "Kovalevskaya",
  "Hilbert",
  "Poincare",
  "Cantor",
  "Ramanujan",
  "Planck",
  "Einstein",
  "Bohr",
  "Meitner",
  "Heisenberg",
  "Dirac",
  "Fermi",
  "Hopper",
  "Shannon",
  "Godel",
  "Von Neumann",
  "Franklin",
];

const ROMAN: ReadonlyArray<[number, string]> = [
  [1000, "M"],
  [900, "CM"],
  [500, "D"],
  [400, "CD"],
  [100, "C"],
  [90, "XC"],
  [50, "L"],
  [40, "XL"],
  [10, "X"],
  [9, "IX"],
  [5, "V"],
  [4, "IV"],
  [1, "I"],
];

function roman(n: number): string {
  let rest = n;
  let out = "";
  for (const [value, numeral] of ROMAN) {
    while (rest >= value) {
      out += numeral;
      rest -= value;
    }
  }
  return out;
}

/**
 * The first nickname not yet in the tree. When the list runs out, names come back with a
 * regnal number (`Euclid II`, …, then `Euclid III`) so a spawn never fails for want of a name.
 */
export function pickNickname(taken: ReadonlySet<string>): string {
  for (const name of NICKNAMES) if (!taken.has(name)) return name;
  // Each round adds NICKNAMES.length candidates, so taken.size + 2 rounds always find one.
  for (let generation = 2; generation <= taken.size + 2; generation++) {
    for (const name of NICKNAMES) {
      const candidate = `${name} ${roman(generation)}`;
      if (!taken.has(candidate)) return candidate;
    }
  }
  throw new Error("unreachable: no free nickname");
}

const TREE_TAG = /^[0-9a-f]{8}$/;

/**
 * A tree's tag: 8 random lowercase hex characters, drawn once per tree (its marker file
 * keeps it). It keeps the branches of different trees in one repository apart; it is random,
 * not the first characters of the tree id (a UUIDv7 starts with a timestamp that trees
 * started in the same minute share).
 */
export function treeTag(): string {
  return randomBytes(4).toString("hex");
}

export function isTreeTag(tag: string): boolean {
  return TREE_TAG.test(tag);
}
