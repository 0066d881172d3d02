/**
 * Runs stress scenarios and judges them: one folder per scenario under `out`, holding the
 * log, the root's stdout events and stderr, its session and the tree directory; then
 * `summary.json`. Scripted mode runs the real pi against the loopback LLM of
 * tree-harness.ts; live mode runs the user's pi with their providers.
 */
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { AgentRecordV1 } from "../../../src/contracts/tree.js";
import { processesWithEnvSync } from "../../../src/lib/process.js";
import { errorText } from "../../../src/lib/values.js";
import { REPO_ROOT } from "../pi-home.js";
import { type ProcessResult, pidAlive, runProcess } from "../processes.js";
import { describePid, readRecords, readRunPids, startTree, type TreeHarness } from "../tree-harness.js";
import { readMarker } from "./markers.js";
import { type PhaseRun, parseRootStdout, README_LINE, type ScenarioState, type StressScenario } from "./scenario.js";

/** Every process of one scenario's tree carries this variable (inherited), so leftovers are found by it. */
export const RUN_ENV = "PI_SUBAGENTS_STRESS_RUN";

export interface StressOptions {
  mode: "scripted" | "live";
  out: string;
  /** Limit of each root pi process. */
  timeoutMs: number;
  /** Live: the pi executable, `--model` and `--thinking` for the root. */
  piBin?: string;
  model?: string;
  thinking?: string;
  /** Progress lines (default: none). */
  say?: (line: string) => void;
}

export interface ScenarioSummary {
  id: string;
  name: string;
  title: string;
  /** Folder of this scenario's artifacts, relative to `out`. */
  dir: string;
  verdict: "pass" | "fail";
  durationMs: number;
  /** Why it failed; empty when it passed. */
  reasons: string[];
  /** The marker line of each root process's final answer (null where none was found). */
  markers: Array<string | null>;
  agents: Array<Pick<AgentRecordV1, "path" | "status" | "health" | "role" | "model" | "reasoning">>;
}

export interface StressSummary {
  version: 1;
  mode: "scripted" | "live";
  model?: string;
  startedAt: string;
  endedAt: string;
  durationMs: number;
  scenarios: ScenarioSummary[];
  totals: { scenarios: number; passed: number; failed: number };
}

export async function runStress(scenarios: readonly StressScenario[], opts: StressOptions): Promise<StressSummary> {
  const started = new Date();
  fs.mkdirSync(opts.out, { recursive: true });
  const results: ScenarioSummary[] = [];
  for (const scenario of scenarios) {
    opts.say?.(`… ${scenario.id}-${scenario.name}: ${scenario.title}`);
    const summary = await runScenario(scenario, opts);
    results.push(summary);
    const head = `${summary.verdict === "pass" ? "PASS" : "FAIL"} ${summary.dir} (${(summary.durationMs / 1000).toFixed(1)} s)`;
    opts.say?.(
      summary.reasons.length === 0 ? head : `${head}\n${summary.reasons.map((r) => `       - ${r}`).join("\n")}`,
    );
  }
  const ended = new Date();
  const passed = results.filter((r) => r.verdict === "pass").length;
  const summary: StressSummary = {
    version: 1,
    mode: opts.mode,
    ...(opts.mode === "live" && { model: opts.model ?? "(pi's default)" }),
    startedAt: started.toISOString(),
    endedAt: ended.toISOString(),
    durationMs: ended.getTime() - started.getTime(),
    scenarios: results,
    totals: { scenarios: results.length, passed, failed: results.length - passed },
  };
  fs.writeFileSync(path.join(opts.out, "summary.json"), `${JSON.stringify(summary, null, 2)}\n`);
  return summary;
}

interface Execution {
  phases: PhaseRun[];
  survivors: string[];
}

export async function runScenario(scenario: StressScenario, opts: StressOptions): Promise<ScenarioSummary> {
  const folder = `${scenario.id}-${scenario.name}`;
  const dir = path.join(opts.out, folder);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const started = Date.now();
  const state: ScenarioState = {
    mode: opts.mode,
    dir,
    sessionFile: path.join(dir, "session.jsonl"),
    phases: [],
    treeDir: undefined,
    records: [],
  };
  const reasons: string[] = [];
  let survivors: string[] = [];
  try {
    const extraArgs = scenario.prepare?.(dir) ?? [];
    const run = opts.mode === "scripted" ? runScripted : runLive;
    ({ phases: state.phases, survivors } = await run(scenario, opts, state, extraArgs));
  } catch (err) {
    reasons.push(`the harness failed: ${errorText(err)}`);
  }
  state.treeDir = treeDirIn(path.join(dir, "trees"));
  state.records = state.treeDir ? await readRecords(state.treeDir) : [];
  const verdict = judgeRun(scenario, state, opts.timeoutMs);
  reasons.push(...verdict.reasons);
  const markers = verdict.markers;
  if (survivors.length > 0)
    reasons.push(`processes left running after the root exited (killed now): ${survivors.join("; ")}`);

  const summary: ScenarioSummary = {
    id: scenario.id,
    name: scenario.name,
    title: scenario.title,
    dir: folder,
    verdict: reasons.length === 0 ? "pass" : "fail",
    durationMs: Date.now() - started,
    reasons,
    markers,
    agents: state.records.map(({ path: p, status, health, role, model, reasoning }) => ({
      path: p,
      status,
      health,
      role,
      model,
      reasoning,
    })),
  };
  fs.writeFileSync(path.join(dir, "log.txt"), renderLog(scenario, state, summary, opts));
  return summary;
}

/**
 * Why a finished run is wrong (`[]` when it is right): each root process must have exited 0
 * within its limit with its strict marker, and the scenario's check must hold on what the run
 * left. Processes left running are judged by the caller (it knows how long to wait).
 */
export function judgeRun(
  scenario: StressScenario,
  state: ScenarioState,
  timeoutMs: number,
): { reasons: string[]; markers: Array<string | null> } {
  const reasons: string[] = [];
  const markers: Array<string | null> = [];
  state.phases.forEach((phase, i) => {
    const where = state.phases.length > 1 ? `root process ${i + 1}: ` : "";
    if (phase.timedOut) reasons.push(`${where}pi did not finish within ${timeoutMs / 1000} s`);
    else if (phase.code !== 0)
      reasons.push(
        `${where}pi exited with code ${phase.code}${phase.signal ? ` (${phase.signal})` : ""}: ${lastLine(phase.stderr)}`,
      );
    const marker = readMarker(phase.finalText, phase.prompt.marker);
    markers.push(marker.line ?? null);
    if (!marker.pass) reasons.push(`${where}${marker.reason}`);
  });
  if (state.phases.length === scenario.prompts.length) {
    try {
      reasons.push(...scenario.check(state));
    } catch (err) {
      reasons.push(`a check could not read the tree: ${errorText(err)}`);
    }
  }
  return { reasons, markers };
}

/** The real pi against the loopback LLM: hermetic home (PI_CODING_AGENT_DIR, PI_OFFLINE=1), no key. */
async function runScripted(
  scenario: StressScenario,
  opts: StressOptions,
  state: ScenarioState,
  extraArgs: string[],
): Promise<Execution> {
  const runId = randomUUID();
  const h = await startTree({
    baseDir: path.join(state.dir, "trees"),
    env: { ...scenario.scripted.env, [RUN_ENV]: runId },
  });
  try {
    const phases = await playScripted(scenario, h, state, extraArgs, { timeoutMs: opts.timeoutMs });
    const survivors = (await h.survivors(5_000)).map(describePid);
    return { phases, survivors };
  } finally {
    await h.cleanup();
  }
}

export interface PlayOptions {
  /** Limit of each root pi process. */
  timeoutMs: number;
  /** Runs after each root process has exited, before the next starts (the e2e tests look between). */
  afterPhase?: (index: number, phase: PhaseRun) => void | Promise<void>;
}

/**
 * One scenario's scripted play on a running harness: its models and README, then each root pi
 * process in turn on the scenario's session, each after its script hook. Shared by
 * scripts/stress-test and the e2e tests, which add their own assertions on the same run.
 */
export async function playScripted(
  scenario: StressScenario,
  h: TreeHarness,
  state: ScenarioState,
  extraArgs: string[],
  opts: PlayOptions,
): Promise<PhaseRun[]> {
  if (scenario.scripted.models)
    fs.writeFileSync(path.join(h.home.dir, "models.json"), JSON.stringify(scenario.scripted.models(h.llm.url)));
  fs.writeFileSync(path.join(h.home.cwd, "README.md"), `${README_LINE}\n`);
  const hooks = scenario.scripted.script(h);
  const phases: PhaseRun[] = [];
  for (const [i, prompt] of scenario.prompts.entries()) {
    hooks[i]?.();
    const args = ["--session", state.sessionFile, ...extraArgs];
    const startedAt = new Date().toISOString();
    const result = await h.runRoot(prompt.text, { timeoutMs: opts.timeoutMs, args });
    const argv = ["pi", "--mode", "json", "-np", "-e", REPO_ROOT, ...args, prompt.text];
    phases.push(phaseRun(prompt, argv, startedAt, result, state.dir, i));
    await opts.afterPhase?.(i, phases[i]!);
  }
  return phases;
}

/** The user's pi, providers and keys; the tree directory and session go to the scenario's folder. */
async function runLive(
  scenario: StressScenario,
  opts: StressOptions,
  state: ScenarioState,
  extraArgs: string[],
): Promise<Execution> {
  const runId = randomUUID();
  const work = path.join(state.dir, "work");
  fs.mkdirSync(work, { recursive: true });
  fs.writeFileSync(path.join(work, "README.md"), `${README_LINE}\n`);
  const env = { ...process.env, PI_SUBAGENTS_DIR: path.join(state.dir, "trees"), [RUN_ENV]: runId };
  const phases: PhaseRun[] = [];
  for (const [i, prompt] of scenario.prompts.entries()) {
    // -ne: only this checkout's extension (and the scenario's), not a copy the user installed.
    const args = [
      "--mode",
      "json",
      "-ne",
      "-np",
      "-e",
      REPO_ROOT,
      ...(opts.model ? ["--model", opts.model] : []),
      ...(opts.thinking ? ["--thinking", opts.thinking] : []),
      "--session",
      state.sessionFile,
      ...extraArgs,
      prompt.text,
    ];
    const startedAt = new Date().toISOString();
    const result = await runProcess(opts.piBin ?? "pi", args, { cwd: work, env, timeoutMs: opts.timeoutMs });
    phases.push(phaseRun(prompt, [opts.piBin ?? "pi", ...args], startedAt, result, state.dir, i));
  }
  const survivors = await leftovers(`${RUN_ENV}=${runId}`, path.join(state.dir, "trees"));
  return { phases, survivors };
}

/** Processes of the scenario still alive after 5 s, described, then SIGKILLed by pid. */
async function leftovers(marker: string, baseDir: string): Promise<string[]> {
  const find = () => {
    if (fs.existsSync("/proc")) return processesWithEnvSync(marker);
    // Without /proc (macOS): the child pis recorded in events.jsonl.
    const treeDir = treeDirIn(baseDir);
    return treeDir ? readRunPids(treeDir).filter(pidAlive) : [];
  };
  const deadline = Date.now() + 5_000;
  let alive = find();
  while (alive.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    alive = find();
  }
  const described = alive.map(describePid);
  for (const pid of alive) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  return described;
}

function phaseRun(
  prompt: PhaseRun["prompt"],
  argv: string[],
  startedAt: string,
  result: ProcessResult,
  dir: string,
  index: number,
): PhaseRun {
  const suffix = index === 0 ? "" : `-${index + 1}`;
  // The stream without message_update / tool_execution_update, which repeat whole messages.
  const events = result.stdout
    .split("\n")
    .filter(
      (line) =>
        line && !line.startsWith('{"type":"message_update"') && !line.startsWith('{"type":"tool_execution_update"'),
    );
  fs.writeFileSync(path.join(dir, `root-stdout${suffix}.jsonl`), events.length > 0 ? `${events.join("\n")}\n` : "");
  fs.writeFileSync(path.join(dir, `root-stderr${suffix}.txt`), result.stderr);
  return {
    prompt,
    argv,
    startedAt,
    durationMs: result.durationMs,
    code: result.code,
    signal: result.signal,
    timedOut: result.timedOut,
    stdout: result.stdout,
    stderr: result.stderr,
    ...parseRootStdout(result.stdout),
  };
}

function treeDirIn(baseDir: string): string | undefined {
  try {
    const dirs = fs.readdirSync(baseDir, { withFileTypes: true }).filter((e) => e.isDirectory());
    return dirs.length === 1 ? path.join(baseDir, dirs[0]!.name) : undefined;
  } catch {
    return undefined;
  }
}

const lastLine = (text: string): string => text.trim().split("\n").at(-1)?.slice(0, 300) || "(no stderr)";
const clip = (text: string, max: number): string =>
  text.length <= max ? text : `${text.slice(0, max)}… [${text.length - max} more chars]`;
const quote = (arg: string): string => (/^[\w./:=@-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`);

function renderLog(
  scenario: StressScenario,
  state: ScenarioState,
  summary: ScenarioSummary,
  opts: StressOptions,
): string {
  const lines = [
    `scenario ${summary.dir}: ${scenario.title}`,
    `mode ${opts.mode}${opts.mode === "live" ? `, model ${opts.model ?? "(pi's default)"}` : " (real pi, scripted loopback LLM)"}`,
    "",
  ];
  state.phases.forEach((phase, i) => {
    const suffix = i === 0 ? "" : `-${i + 1}`;
    lines.push(
      `=== root process ${i + 1} of ${scenario.prompts.length} (marker ${phase.prompt.marker}) ===`,
      `started ${phase.startedAt}, ${(phase.durationMs / 1000).toFixed(1)} s, exit ${phase.timedOut ? "timed out" : phase.code}${phase.signal ? ` (${phase.signal})` : ""}`,
      `$ ${phase.argv.map(quote).join(" ")}`,
      `(events: root-stdout${suffix}.jsonl, stderr: root-stderr${suffix}.txt, session: session.jsonl)`,
      "",
      "tool calls of the root:",
      ...(phase.toolCalls.length === 0
        ? ["  (none)"]
        : phase.toolCalls.map(
            (c) =>
              `  ${c.name} ${JSON.stringify(c.args)}\n    ${c.isError ? "ERROR " : "→ "}${clip(c.text.replace(/\n/g, "\\n"), 600)}`,
          )),
      "",
      "final answer of the root:",
      ...(phase.finalText ? phase.finalText.split("\n").map((l) => `  | ${l}`) : ["  (none)"]),
      "",
    );
    if (phase.stderr.trim())
      lines.push(
        "stderr (tail):",
        ...phase.stderr
          .trim()
          .split("\n")
          .slice(-15)
          .map((l) => `  ${l}`),
        "",
      );
  });
  lines.push(`=== tree ${state.treeDir ?? "(none created)"} ===`);
  for (const r of state.records)
    lines.push(
      `  ${r.path}  ${r.nickname}  ${r.role}  ${r.status}/${r.health}  ${r.model} ${r.reasoning}  runs ${r.runs.join(",")}  tools ${r.activeTools.join(",")}`,
    );
  if (state.records.length === 0) lines.push("  (no agents)");
  lines.push(
    "",
    `=== verdict: ${summary.verdict.toUpperCase()} in ${(summary.durationMs / 1000).toFixed(1)} s ===`,
    ...summary.reasons.map((r) => `  - ${r}`),
    "",
  );
  return lines.join("\n");
}
