/**
 * `subagent-wrapper doctor`: can runs start here? Node's version, the pi binary (as the
 * wrapper finds it), its `pi --version` (with a time limit; both output streams, since pi
 * 0.73.1 prints it on stderr when stdin is not a terminal) and whether the wrapper will wait
 * for its agent_settled, pi's agent dir, the base of the extension's run directories, and
 * the wrapper's own compiled task extension.
 * Exit codes: 0 every check passed, 1 a check failed.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { ENV } from "../contracts/env.js";
import { treeBaseDir } from "../contracts/layout.js";
import { testedPiVersions } from "../lib/package-info.js";
import { PI_AGENT_DIR_ENV, piAgentDir } from "../lib/pi-agent-dir.js";
import { errorText } from "../lib/values.js";
import { findOnPath, PiNotFoundError, resolvePiBinary, signalGroup, TASK_EXTENSION_PATH } from "../wrapper/child.js";
import {
  AGENT_SETTLED_SINCE,
  compareVersions,
  identifyPi,
  oldNodeHint,
  type PiIdentity,
  piNodeFloor,
  versionEmitsSettled,
} from "../wrapper/pi-version.js";
import { type DoctorCheck, formatDoctorReport, nodeVersionOk, parsePiVersion } from "./doctor-format.js";
import { PACKAGE_ROOT, type PiCommandRun, piSetupChecks, type RunPi } from "./doctor-pi-setup.js";
import { packagePi, packagePiEnv } from "./package-pi.js";

export interface DoctorFlags {
  json?: boolean;
  timeoutMs: number;
  /** A tree directory: list its isolated agents' worktrees instead (which are stale). */
  tree?: string;
}

/** Runs `<bin> --version` in its own process group, which is ended if it overruns. */
export function runVersion(
  bin: string,
  timeoutMs: number,
  env: NodeJS.ProcessEnv = process.env,
): Promise<PiCommandRun> {
  return runBounded(bin, ["--version"], timeoutMs, env);
}

/** Runs `<bin> <args>` (stdin empty) in its own process group, which is ended if it overruns. */
function runBounded(bin: string, args: string[], timeoutMs: number, env: NodeJS.ProcessEnv): Promise<PiCommandRun> {
  return new Promise((resolve) => {
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    const child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"], detached: true, shell: false, env });
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const timer = setTimeout(() => {
      timedOut = true;
      signalGroup(child.pid, "SIGKILL");
    }, timeoutMs);
    child.once("error", (err) => {
      clearTimeout(timer);
      resolve({ stdout, stderr, code: null, timedOut, error: errorText(err) });
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      // Whatever the version command left behind in its group goes with it.
      signalGroup(child.pid, "SIGKILL");
      resolve({ stdout, stderr, code, timedOut });
    });
  });
}

function checkNode(): DoctorCheck {
  const version = process.versions.node;
  return nodeVersionOk(version)
    ? { name: "node", ok: true, detail: `${version} (needs ≥ 20)` }
    : { name: "node", ok: false, detail: `${version} is too old`, hint: "install Node 20 or newer" };
}

/** The pi binary, its version, and when it starts: its default model and this package's extension (doctor-pi-setup.ts). */
async function checkPi(given: NodeJS.ProcessEnv, timeoutMs: number): Promise<DoctorCheck[]> {
  const { env, from } = piToCheck(given);
  const checks = await checkPiBinary(env, timeoutMs, from);
  if (!checks.every((check) => check.ok)) return [...checks, checkAgentDir(env)];
  const bin = resolvePiBinary(env, process.cwd());
  // Loading models and extensions takes pi longer than printing its version.
  const loadMs = PI_LOAD_FACTOR * timeoutMs;
  const runPi: RunPi = (args, piEnv) => runBounded(bin, args, loadMs, piEnv);
  return [...checks, checkAgentDir(env), ...(await piSetupChecks(runPi, env, piAgentDir(env), loadMs))];
}

/** How many times `--timeout-ms` a start of pi that loads its models or extensions may take. */
const PI_LOAD_FACTOR = 3;

/**
 * Which pi to check: PI_SUBAGENTS_PI_BIN or `pi` on PATH, as the wrapper finds it; with
 * neither, the pi that `pi-subagent-tree` runs (this package's pi 1.x, on its Node 22 first
 * on PATH, as that launcher hands it to every child), when it is installed.
 */
function piToCheck(env: NodeJS.ProcessEnv): { env: NodeJS.ProcessEnv; from?: string } {
  if (env[ENV.piBin] || findOnPath("pi", env)) return { env };
  const pi = packagePi();
  if (pi === undefined) return { env };
  return { env: packagePiEnv(pi, env, ENV.piBin), from: `the pi that pi-subagent-tree runs, on ${pi.nodeDir}/node` };
}

async function checkPiBinary(env: NodeJS.ProcessEnv, timeoutMs: number, packageFrom?: string): Promise<DoctorCheck[]> {
  const from = packageFrom ?? (env[ENV.piBin] ? `from ${ENV.piBin}` : "from PATH");
  let bin: string;
  try {
    bin = resolvePiBinary(env, process.cwd());
  } catch (err) {
    if (!(err instanceof PiNotFoundError)) throw err;
    // No pi on PATH and none installed with this package: both ways to get one.
    const hint = env[ENV.piBin]
      ? undefined
      : `for pi-subagent-tree: run "npm install" in ${PACKAGE_ROOT} (it installs pi 1.x and Node 22 there); for plain pi: npm install -g @earendil-works/pi-coding-agent (needs Node 22.19 or newer)`;
    return [{ name: "pi", ok: false, detail: err.message, ...(hint && { hint }) }];
  }
  const found: DoctorCheck = {
    name: "pi",
    ok: true,
    detail: `${bin} (${from})`,
    ...(packageFrom && {
      notes: ["no pi on PATH: a plain `pi` session's children need one there (or PI_SUBAGENTS_PI_BIN)"],
    }),
  };
  const identity = identifyPi(bin, env);
  const run = await runVersion(bin, timeoutMs, env);
  if (run.timedOut) {
    return [
      found,
      {
        name: "pi --version",
        ok: false,
        detail: `no answer within ${timeoutMs} ms (stopped)`,
        hint: `check that ${bin} is pi, or raise --timeout-ms`,
      },
    ];
  }
  // pi 0.73.1 prints its version on stderr when stdin is not a terminal; pi 1.x on stdout.
  const fromStderr = parsePiVersion(run.stderr);
  const version = parsePiVersion(run.stdout) ?? (fromStderr && /^\d+\.\d+/.test(fromStderr) ? fromStderr : undefined);
  if (run.error || run.code !== 0 || !version) {
    const why = run.error ?? (run.code !== 0 ? `exit ${run.code}` : "printed nothing");
    const stderr = firstMeaningfulLine(run.stderr);
    return [
      found,
      {
        name: "pi --version",
        ok: false,
        detail: `failed: ${why}${stderr ? ` — ${stderr}` : ""}`,
        hint: await failureHint(bin, identity, env),
      },
    ];
  }
  return [
    found,
    {
      name: "pi --version",
      ok: true,
      detail: `${version}${testedNote(version)}`,
      notes: settledNotes(version, identity),
    },
  ];
}

function testedNote(version: string): string {
  const tested = testedPiVersions();
  if (tested.length === 0 || tested.includes(version)) return "";
  return ` (this package is tested with ${tested.join(" and ")})`;
}

/** Whether the wrapper will wait for agent_settled with this pi, and what to set when it cannot tell. */
function settledNotes(version: string, identity: PiIdentity): string[] {
  const settles = identity.emitsSettled;
  const how = settles
    ? "emits agent_settled: a run is over when pi settles (graceMs counts from it)"
    : `no agent_settled (pi before ${AGENT_SETTLED_SINCE}): a run is over at its first terminal message`;
  const source =
    identity.source === "env"
      ? ` (version from ${ENV.piVersion})`
      : identity.source === "package"
        ? ""
        : " (version unknown to the wrapper)";
  const notes = [`${how}${source}`];
  if (identity.problem) notes.push(identity.problem);
  if (identity.version === undefined && versionEmitsSettled(version)) {
    notes.push(
      `no pi package.json above this binary: set ${ENV.piVersion}=${version} so the wrapper waits for agent_settled`,
    );
  } else if (identity.version !== undefined && identity.version !== version) {
    notes.push(
      `the wrapper takes it for ${identity.version}${identity.source === "env" ? ` (${ENV.piVersion})` : ""}, but it says ${version}`,
    );
  }
  return notes;
}

/** A failed `pi --version`: pi 1.x on too old a Node is the usual cause (pi starts with `#!/usr/bin/env node`). */
async function failureHint(bin: string, identity: PiIdentity, env: NodeJS.ProcessEnv): Promise<string> {
  const floor = piNodeFloor(identity);
  const node = floor ? findOnPath("node", env) : undefined;
  const nodeVersion = node ? parsePiVersion((await runVersion(node, 5000, env)).stdout) : undefined;
  if (!floor || (nodeVersion && (compareVersions(nodeVersion, floor) ?? -1) >= 0)) return `check that ${bin} is pi`;
  return oldNodeHint(identity.version, floor, {
    ...(node && { path: node }),
    ...(nodeVersion && { version: nodeVersion }),
  });
}

function firstMeaningfulLine(text: string): string | undefined {
  const lines = text.split("\n").map((line) => line.trim());
  // Node's own crash report starts with the failing file's URL; the error line says more.
  return lines.find((line) => /Error\b/.test(line)) ?? lines.find((line) => line !== "");
}

function checkAgentDir(env: NodeJS.ProcessEnv): DoctorCheck {
  const dir = piAgentDir(env);
  const from = env[PI_AGENT_DIR_ENV] ? `from ${PI_AGENT_DIR_ENV}` : "default";
  const name = "pi agent dir";
  try {
    if (!fs.statSync(dir).isDirectory()) return { name, ok: false, detail: `${dir} (${from}) is not a directory` };
    fs.accessSync(dir, fs.constants.R_OK | fs.constants.X_OK);
    fs.readdirSync(dir);
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === "ENOENT";
    return {
      name,
      ok: false,
      detail: missing ? `${dir} (${from}) does not exist` : `${dir} (${from}) cannot be read: ${errorText(err)}`,
      hint: missing
        ? `run pi (or pi-subagent-tree) once to set it up (models, login), or set ${PI_AGENT_DIR_ENV}`
        : `fix its permissions, or set ${PI_AGENT_DIR_ENV}`,
    };
  }
  const present = ["settings.json", "models.json", "auth.json"].filter((file) => fs.existsSync(path.join(dir, file)));
  return {
    name,
    ok: true,
    detail: `${dir} (${from}) is readable`,
    notes: [
      present.length > 0 ? `holds ${present.join(", ")}` : "holds no settings.json, models.json or auth.json yet",
    ],
  };
}

/** The nearest folder of `dir` that exists (itself, else a parent). */
function nearestExisting(dir: string): string {
  let current = dir;
  while (!fs.existsSync(current)) {
    const parent = path.dirname(current);
    if (parent === current) break;
    current = parent;
  }
  return current;
}

/** Writable for real: a probe file is created and removed (permission bits lie for root). */
function checkRunBase(env: NodeJS.ProcessEnv): DoctorCheck {
  const base = treeBaseDir(undefined, env);
  const configured = Boolean(env.PI_SUBAGENTS_DIR);
  const from = configured ? "from PI_SUBAGENTS_DIR" : "default";
  const notes = configured
    ? []
    : ["(for unsaved sessions; a saved session keeps its runs in subagents/ beside its file)"];
  const name = "run directories";
  const existing = nearestExisting(base);
  const probe = path.join(existing, `.subagent-wrapper-doctor-${process.pid}`);
  try {
    if (!fs.statSync(existing).isDirectory()) throw new Error(`${existing} is not a directory`);
    fs.writeFileSync(probe, "probe", { flag: "wx" });
    fs.rmSync(probe, { force: true });
  } catch (err) {
    return {
      name,
      ok: false,
      detail: `${base} (${from}) cannot be written: ${errorText(err)}`,
      hint: "set PI_SUBAGENTS_DIR to a writable folder",
    };
  }
  return {
    name,
    ok: true,
    detail: `${base} (${from}) is writable${existing === base ? "" : " (it will be created)"}`,
    notes,
  };
}

function checkTaskExtension(): DoctorCheck {
  const name = "wrapper build";
  return fs.existsSync(TASK_EXTENSION_PATH)
    ? { name, ok: true, detail: `${TASK_EXTENSION_PATH} is there` }
    : { name, ok: false, detail: `${TASK_EXTENSION_PATH} is missing`, hint: 'run "npm run build" in the package' };
}

export async function runDoctorChecks(env: NodeJS.ProcessEnv, timeoutMs: number): Promise<DoctorCheck[]> {
  return [checkNode(), ...(await checkPi(env, timeoutMs)), checkRunBase(env), checkTaskExtension()];
}

const STALE_WORDS = { passed: "no stale worktree", failed: (n: number) => `${n} stale worktree${n === 1 ? "" : "s"}` };

/** `doctor --tree <dir>`: 0 no stale worktree, 1 some are stale, 2 no tree there. */
async function treeDoctor(treeDir: string, json: boolean | undefined): Promise<number> {
  const { NoTreeError, treeWorktreeChecks } = await import("./worktree-check.js");
  let checks: DoctorCheck[];
  try {
    checks = await treeWorktreeChecks(treeDir);
  } catch (err) {
    if (!(err instanceof NoTreeError)) throw err;
    process.stderr.write(`subagent-wrapper doctor: ${err.message}\n`);
    return 2;
  }
  const ok = checks.every((check) => check.ok);
  process.stdout.write(
    json
      ? `${JSON.stringify({ ok, tree: treeDir, worktrees: checks }, null, 2)}\n`
      : formatDoctorReport(checks, STALE_WORDS),
  );
  return ok ? 0 : 1;
}

export async function doctorCommand(flags: DoctorFlags): Promise<number> {
  if (flags.tree !== undefined) return treeDoctor(flags.tree, flags.json);
  const checks = await runDoctorChecks(process.env, flags.timeoutMs);
  process.stdout.write(
    flags.json
      ? `${JSON.stringify({ ok: checks.every((check) => check.ok), checks }, null, 2)}\n`
      : formatDoctorReport(checks),
  );
  return checks.every((check) => check.ok) ? 0 : 1;
}
