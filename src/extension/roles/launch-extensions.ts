/**
 * The extensions the person started this pi with (`-e` / `--extension`) and those it discovered,
 * which a child on this machine loads too: a permission gate, guard or protected-paths extension registers no tool,
 * so nothing else would bring it into a child, and a child's `rm -rf` would run unguarded.
 * Settings `child_extensions.exclude` leaves some out. Pure: argv, cwd and the settings come in.
 */
import path from "node:path";

/** `npm:…`, `git:…`, `builtin:…`: an entry pi resolves itself, not a path. */
const SOURCE_SPEC = /^[a-z][a-z0-9+.-]*:/i;

/** The `-e` entries of a pi command line (argv after the script), paths resolved against the cwd it started in. */
export function launchExtensions(args: readonly string[], cwd: string): string[] {
  const entries: string[] = [];
  for (let i = 0; i < args.length - 1; i++) {
    if (args[i] !== "-e" && args[i] !== "--extension") continue;
    const entry = args[++i]!;
    entries.push(SOURCE_SPEC.test(entry) ? entry : path.resolve(cwd, entry));
  }
  return entries;
}

/**
 * Whether this pi loaded what it discovers (`~/.pi/agent/extensions/`, installed packages, …):
 * not when started with `-ne` / `--no-extensions` — a child then gets only its `-e` ones, as
 * this pi did (a child of the tree is such a pi: what the root discovered comes to it as `-e`).
 */
export function discoversExtensions(args: readonly string[]): boolean {
  return !args.some((arg) => arg === "-ne" || arg === "--no-extensions");
}

/**
 * The names an entry answers to in `exclude`: its path as given, its file name, the file name
 * without its extension, and for an `index.*` file its folder's name (an extension in a folder
 * is known by the folder).
 */
function namesOf(entry: string): string[] {
  if (SOURCE_SPEC.test(entry)) return [entry, entry.replace(SOURCE_SPEC, "")];
  const base = path.basename(entry);
  const stem = base.replace(/\.[cm]?[jt]s$/, "");
  return [entry, base, stem, ...(stem === "index" ? [path.basename(path.dirname(entry))] : [])];
}

/** This package, as a `-e` entry can name it: its folder (or a file in it), or its name on a registry. */
export interface OwnPackage {
  root: string;
  name: string;
}

/**
 * Whether an entry is this package (`-e <its folder>`, a file of it, `npm:pi-subagent-tree@1`).
 * A file in its `node_modules` is another package's (pi's own example gates live there when pi
 * is installed beside it), so a child loads it like any other.
 */
function isOwn(entry: string, own: OwnPackage): boolean {
  if (SOURCE_SPEC.test(entry)) {
    const spec = entry.replace(SOURCE_SPEC, "");
    return spec === own.name || spec.startsWith(`${own.name}@`);
  }
  const root = path.resolve(own.root);
  const dependencies = path.join(root, "node_modules") + path.sep;
  return entry === root || (entry.startsWith(`${root}${path.sep}`) && !entry.startsWith(dependencies));
}

/**
 * The root's extensions a child loads: those not excluded (by path or name), and never this
 * package (the child gets its extension once, from one place — another copy's tools would
 * clash — and its wrapper adds the task extension itself).
 */
export function childGateExtensions(
  launched: readonly string[],
  exclude: readonly string[],
  own: OwnPackage,
): string[] {
  const excluded = new Set(exclude.map((entry) => (path.isAbsolute(entry) ? path.resolve(entry) : entry)));
  return launched.filter(
    (entry, i) =>
      !isOwn(entry, own) && launched.indexOf(entry) === i && !namesOf(entry).some((name) => excluded.has(name)),
  );
}
