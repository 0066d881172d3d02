/**
 * A throwaway, hermetic pi configuration for running the real pi against a scripted LLM.
 *
 * Layout under one temp root (removed by `cleanup()`):
 *   agent/  PI_CODING_AGENT_DIR: models.json, settings.json, sessions pi writes
 *   home/   HOME, so ~/.agents/skills and friends of the developer machine stay out
 *   work/   a clean cwd for the child
 */
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  ensureLineBin,
  type LineName,
  lineName,
  linePath,
  type PiLine,
  resolveLine,
  SCOPE_ENV,
} from "../../scripts/pi-lines.mjs";
import { versionEmitsSettled } from "../../src/wrapper/pi-version.js";
import { type ProcessResult, type SpawnedProcess, type SpawnOptions, spawnProcess } from "./processes.js";

/**
 * The checkout: the nearest folder above this module that holds package.json. A walk rather
 * than "../..", because scripts/stress-test runs these helpers compiled into build/stress/.
 */
export const REPO_ROOT = findRepoRoot(path.dirname(fileURLToPath(import.meta.url)));

/**
 * The pi line these tests run on (PI_SUBAGENTS_TEST_PI_LINE: `current`, the default, is pi 1.x
 * on the Node 22 from node_modules; `0.73` is pi 0.73.1 on the machine's Node), see
 * scripts/pi-lines.mjs.
 */
export const PI_LINE: PiLine = resolveLine(REPO_ROOT, lineName());
export const PI_LINE_NAME: LineName = PI_LINE.name;
/**
 * True in npm test's pass of the line tests on pi 0.73.1. Some end-to-end tests start the real
 * pi only as the payload a runner carries (ssh, Slurm, a command prefix, fallbacks and limits
 * across a runner, the stress script, the README's demo, which runs pi 1.x for users), and
 * some check only this package's bookkeeping around pi (worktrees; the root killed before pi
 * holds a notice; validation messages; budgets and limits across turns; capacity and fan-out
 * waits; a full or damaged tree directory; roles from definition files; a long report's
 * bounds; the stress scenarios that tree-interrupts and tree-durable play deeper; the sandbox's
 * stop path; doctor with a fake pi or the launcher's pi): what they check is the same
 * code on either line, and
 * each pi start on 0.73.1 costs twice 1.x's CPU on Node 20, which has no compile cache. npm test
 * runs those once, on pi 1.x (`describe.skipIf(ONE_LINE_IS_ENOUGH)`); what pi itself does on
 * a runner keeps one case per runner on both lines; `npm run test:0.73` runs them all on 0.73.1.
 */
export const ONE_LINE_IS_ENOUGH = process.env[SCOPE_ENV] === "line" && PI_LINE_NAME === "0.73";
/** This line's pi emits agent_settled (pi 1.x). */
export const PI_LINE_SETTLES = versionEmitsSettled(PI_LINE.piVersion);
/** The real pi CLI of this line: its package's bin script (never node_modules/.bin/pi, which both pi packages claim). */
export const REAL_PI = PI_LINE.piCli;
/**
 * pi's own examples/extensions/permission-gate.ts of this line (its examples ship in its
 * package, beside dist/): asks "Allow?" before a bash `rm -rf`, and blocks it without a UI.
 */
export const PI_PERMISSION_GATE = path.join(
  piPackageDir(PI_LINE.piCli),
  "examples",
  "extensions",
  "permission-gate.ts",
);
/** The caches every test's pi processes share. */
const TEST_CACHES = path.join(REPO_ROOT, "node_modules", ".cache", "pi-subagent-tree");
/** Node's compile cache, shared by the pi processes of every test (pi 1.x enables it). */
const COMPILE_CACHE = path.join(TEST_CACHES, "compile-cache");
/**
 * jiti's cache (pi's extension loader keeps the extensions' transformed code in $TMPDIR/jiti),
 * shared by the pi processes of every test as a user's one /tmp shares it. Each home's own
 * tmp/jiti is a link to it: with a cache of its own, every test's first pi start transformed
 * the whole extension again (measured: pi 1.x with the extension starts in 0.97 s cold, 0.39 s
 * warm; pi 0.73.1 in 1.09 s and 0.90 s). jiti checks each cached file's source hash on reading,
 * so a file half-written by another test is transformed again, never run.
 */
const JITI_CACHE = path.join(TEST_CACHES, "jiti");

/** PATH for a process of this line: its `node` and `pi` first. */
export const lineEnvPath = (rest: string | undefined = process.env.PATH): string => {
  ensureLineBin(PI_LINE);
  return linePath(PI_LINE, rest);
};

/** The folder of the pi package `piCli` belongs to: the nearest one above it with package.json. */
function piPackageDir(piCli: string): string {
  for (let dir = path.dirname(piCli); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, "package.json"))) return dir;
  }
  throw new Error(`no package.json above ${piCli}`);
}

function findRepoRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, "package.json"))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

export interface RetrySettings {
  enabled?: boolean;
  maxRetries?: number;
  baseDelayMs?: number;
  provider?: { timeoutMs?: number; maxRetries?: number; maxRetryDelayMs?: number };
}

export interface PiHomeOptions {
  /** Base URL of the scripted server, e.g. `llm.url`. */
  llmUrl: string;
  /**
   * `false` (default): no agent-level retry AND no OpenAI-SDK retry (`provider.maxRetries: 0`),
   * so one scripted error is one failed attempt. `true`: pi's retry with tiny delays.
   * An object is written as-is to `settings.retry`.
   */
  retry?: boolean | RetrySettings;
  /** Merged over the generated settings.json. */
  extraSettings?: Record<string, unknown>;
  /** Replaces the generated models.json entirely. */
  models?: unknown;
  /** Extra environment merged last. */
  env?: Record<string, string>;
}

export interface PiHome {
  root: string;
  /** PI_CODING_AGENT_DIR */
  dir: string;
  home: string;
  cwd: string;
  /** Complete environment for a pi child (inherited PATH etc., PI_* and API keys stripped). */
  env: NodeJS.ProcessEnv;
  /** Spawns the real pi (never through a shell) with this home's env and cwd. */
  spawnPi(args: string[], opts?: Partial<SpawnOptions>): SpawnedProcess;
  /** `spawnPi(...).done` */
  runPi(args: string[], opts?: Partial<SpawnOptions>): Promise<ProcessResult>;
  cleanup(): Promise<void>;
}

export function fakeModels(llmUrl: string): unknown {
  return {
    providers: {
      fake: {
        baseUrl: llmUrl,
        api: "openai-completions",
        apiKey: "x",
        compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
        models: [
          { id: "fast", reasoning: true },
          {
            id: "deep",
            reasoning: true,
            thinkingLevelMap: { minimal: null, low: null, medium: null, high: "high", xhigh: "max" },
          },
        ],
      },
    },
  };
}

function retrySettings(retry: PiHomeOptions["retry"]): RetrySettings {
  if (retry === undefined || retry === false) return { enabled: false, provider: { maxRetries: 0 } };
  if (retry === true) return { enabled: true, maxRetries: 2, baseDelayMs: 10, provider: { maxRetries: 0 } };
  return retry;
}

/** Environment variables from the test runner that would change what pi does. */
function inheritedEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith("PI_") || k.endsWith("_API_KEY") || k.startsWith("VITEST") || k === "NODE_OPTIONS") continue;
    env[k] = v;
  }
  return env;
}

export async function makePiHome(opts: PiHomeOptions): Promise<PiHome> {
  const root = await mkdtemp(path.join(os.tmpdir(), "pi-home-"));
  const dir = path.join(root, "agent");
  const home = path.join(root, "home");
  const cwd = path.join(root, "work");
  const tmp = path.join(root, "tmp");
  await Promise.all([mkdir(dir), mkdir(home), mkdir(cwd), mkdir(tmp), mkdir(JITI_CACHE, { recursive: true })]);
  await symlink(JITI_CACHE, path.join(tmp, "jiti"));

  const settings = {
    defaultProvider: "fake",
    defaultModel: "fast",
    quietStartup: true,
    enableInstallTelemetry: false,
    retry: retrySettings(opts.retry),
    ...opts.extraSettings,
  };
  await writeFile(path.join(dir, "models.json"), JSON.stringify(opts.models ?? fakeModels(opts.llmUrl), null, 2));
  await writeFile(path.join(dir, "settings.json"), JSON.stringify(settings, null, 2));

  const env: NodeJS.ProcessEnv = {
    ...inheritedEnv(),
    HOME: home,
    PI_CODING_AGENT_DIR: dir,
    PI_OFFLINE: "1",
    PI_SKIP_VERSION_CHECK: "1",
    PI_TELEMETRY: "0",
    // The wrapper's task files stay inside this home and go with it (jiti's cache is the shared one linked above).
    TMPDIR: tmp,
    // pi 1.x turns on Node's compile cache (in TMPDIR by default): one cache for every test
    // spares each pi start compiling its bundle again.
    NODE_COMPILE_CACHE: COMPILE_CACHE,
    // The spare pi stays off unless a test turns it on (tree-spare.test.ts): a spare started for
    // a next child most tests never spawn would only add a pi start to each. PI_SUBAGENTS_TEST_SPARE=1
    // runs every test with it.
    PI_SUBAGENTS_SPARE: process.env.PI_SUBAGENTS_TEST_SPARE === "1" ? "1" : "0",
    // pi and the fake pi start with `#!/usr/bin/env node`: this line's node, and its pi, come first.
    PATH: lineEnvPath(),
    ...opts.env,
  };

  const spawnPi = (args: string[], o: Partial<SpawnOptions> = {}) =>
    spawnProcess(REAL_PI, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"], timeoutMs: 30_000, ...o });

  return {
    root,
    dir,
    home,
    cwd,
    env,
    spawnPi,
    runPi: (args, o) => spawnPi(args, o).done,
    // Retried: a process SIGKILLed just before may still be finishing the write it was in.
    cleanup: () => rm(root, { recursive: true, force: true, maxRetries: 3, retryDelay: 100 }),
  };
}
