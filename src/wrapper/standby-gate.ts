/**
 * The warm standby's gate (standby.ts): loaded into a standby pi with
 * `NODE_OPTIONS=--import=<this file>`, before pi's own entry point runs. It runs in pi's
 * process, so it uses nothing of the package but Node's built-ins. In order:
 * 1. it takes itself out of `process.env.NODE_OPTIONS`, so that nothing pi starts (a bash
 *    tool's command, a node of its own) loads it again;
 * 2. it loads pi's module graph, when the entry point (the real path of `process.argv[1]`) is
 *    pi's layout, in a package whose name ends with `pi-coding-agent` (piModules); anything
 *    else (a test's fake pi, a wrapper script of one's own) loads nothing here;
 * 3. it says `r` on fd 3 (ready), then waits there: one byte from the wrapper lets pi's entry
 *    point run (it then imports what is loaded already); the end of the pipe (the wrapper does
 *    not need it, or died) ends the process without running anything of pi.
 * fd 3 is closed before pi runs: pi's children do not inherit it.
 */
import fs from "node:fs";
import module from "node:module";
import net from "node:net";
import path from "node:path";
import { pathToFileURL } from "node:url";

/** The gate's file name, by which the wrapper's NODE_OPTIONS entry is recognised. */
const GATE_NAME = "standby-gate.js";
const GO_FD = 3;

function dropSelfFromNodeOptions(): void {
  const options = process.env.NODE_OPTIONS;
  if (options === undefined) return;
  const rest = options
    .split(/\s+/)
    .filter((option) => option !== "" && !(option.startsWith("--import=") && option.endsWith(GATE_NAME)));
  if (rest.length === 0) delete process.env.NODE_OPTIONS;
  else process.env.NODE_OPTIONS = rest.join(" ");
}

/** Whether `dir` is inside pi's package (its package.json one or two folders up names pi-coding-agent). */
function inPiPackage(dir: string): boolean {
  for (const up of ["..", "../.."]) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, up, "package.json"), "utf8")) as { name?: unknown };
      return typeof pkg.name === "string" && pkg.name.endsWith("pi-coding-agent");
    } catch {
      // none there: look further up
    }
  }
  return false;
}

/**
 * The modules to load, in order, for pi's layout: pi 0.73's `dist/cli.js` imports `main.js`
 * beside it (pi's whole graph); pi 1.x's `dist/bundle/cli.js` requires `cli-runtime.js`, whose
 * static imports (its chunks) are pi's graph and whose own body runs pi, so only those
 * imports are loaded. Anything else: none.
 */
function piModules(): string[] {
  const entry = process.argv[1];
  if (!entry) return [];
  try {
    const dir = path.dirname(fs.realpathSync(entry));
    if (!inPiPackage(dir)) return [];
    const main = path.join(dir, "main.js");
    if (fs.existsSync(main)) return [main];
    const runtime = path.join(dir, "cli-runtime.js");
    if (!fs.existsSync(runtime)) return [];
    const text = fs.readFileSync(runtime, "utf8");
    return [...text.matchAll(/(?:\bimport\s*|\bfrom\s*)"(\.\/[^"]+\.js)"/g)].map((m) => path.join(dir, m[1] as string));
  } catch {
    return [];
  }
}

/** Loads pi's module graph. A failure is left for pi's own entry point to meet and report. */
async function warm(): Promise<void> {
  const modules = piModules();
  if (modules.length === 0) return;
  // As pi's entry point does before it loads them (pi 1.x): the compile cache, where Node has one.
  (module as { enableCompileCache?: () => unknown }).enableCompileCache?.();
  // pi's entry point silences Node's warnings before it runs; loading early must not print them.
  const emitWarning = process.emitWarning;
  process.emitWarning = () => undefined;
  try {
    for (const file of modules) await import(pathToFileURL(file).href);
  } catch {
    // pi's entry point meets the same error and reports it
  } finally {
    process.emitWarning = emitWarning;
  }
}

/**
 * Resolves true on the wrapper's go byte, false when the pipe ends first or cannot be read:
 * pi never runs without the wrapper's word (it would take the task file of the turn's pi).
 */
function waitForGo(): Promise<boolean> {
  return new Promise((resolve) => {
    let pipe: net.Socket;
    try {
      pipe = new net.Socket({ fd: GO_FD, readable: true, writable: true });
    } catch {
      resolve(false);
      return;
    }
    const settle = (go: boolean) => {
      pipe.destroy();
      resolve(go);
    };
    pipe.on("error", () => settle(false));
    pipe.once("end", () => settle(false));
    pipe.once("data", () => settle(true));
    pipe.write("r");
  });
}

dropSelfFromNodeOptions();
await warm();
if (!(await waitForGo())) process.exit(0);
