/**
 * `scripts/stress-test`: the 11 stress scenarios against the real pi, judged by strict
 * markers and the tree's own state. Exit 0 when every scenario passed, 1 when one failed,
 * 2 for bad usage (one line on stderr).
 */
import fs from "node:fs";
import path from "node:path";
import { Command, CommanderError, Option } from "commander";
import { THINKING_LEVELS } from "../../../src/contracts/meta.js";
import { errorText } from "../../../src/lib/values.js";
import { REAL_PI, REPO_ROOT } from "../pi-home.js";
import { killAll } from "../processes.js";
import { runStress, type StressOptions } from "./run.js";
import { STRESS_SCENARIOS, selectScenarios } from "./scenarios.js";

class UsageError extends Error {}

const THINKING: readonly string[] = THINKING_LEVELS;

interface CliOptions {
  live?: boolean;
  only?: string;
  out?: string;
  model?: string;
  thinking?: string;
  pi?: string;
  timeout?: string;
  list?: boolean;
  quiet?: boolean;
}

function buildProgram(): Command {
  return new Command("stress-test")
    .description(
      "Run the 11 stress scenarios against the real pi with this extension, judge each by its strict marker line and the tree's state, and write a log per scenario and summary.json.",
    )
    .option(
      "--live",
      "use your own pi, providers and keys instead of the scripted loopback LLM (spawns real agents: costs tokens)",
    )
    .option("--only <ids>", "comma-separated scenario ids or names, e.g. 03,07 or nested-chain")
    .option("--out <dir>", "artifacts folder (default: stress-output/<mode>-<time>/)")
    .option("--model <provider/id>", "live: the root's model; children default to it")
    .addOption(new Option("--thinking <level>", "live: the root's thinking level").choices(THINKING))
    .option("--pi <path>", 'live: the pi executable (default: "pi" on PATH)')
    .option("--timeout <seconds>", "limit of each root pi process (default 180 scripted, 900 live)")
    .option("--list", "list the scenarios and exit")
    .option("-q, --quiet", "print only the final tally line")
    .exitOverride()
    .configureOutput({
      writeErr: (text) => process.stderr.write(text.startsWith("error:") ? `stress-test: ${text}` : text),
    })
    .addHelpText(
      "after",
      `
Scripted (default): hermetic — a temporary PI_CODING_AGENT_DIR, PI_OFFLINE=1, the pi of PI_SUBAGENTS_TEST_PI_LINE (1.x),
  every model played by a scripted OpenAI-compatible server on 127.0.0.1. Deterministic; no key.
Live (--live): your pi, settings and keys; each scenario's instruction goes to a real model
  (the root) which spawns real child agents — several model calls per scenario, and scenario 04
  and 05 run sleep commands. Children run in a scratch folder under --out, never in your checkout.
A scenario passes when its root's final answer holds the marker alone on one line
  (STRESS_<id>_OK; a STRESS_<id>_FAIL: <why> line fails it), pi exited 0, the tree's records
  are as the scenario requires, and no process of its tree is left running.
Exit codes: 0 every scenario passed, 1 at least one failed, 2 usage error.
Docs: docs/stress-test.md`,
    );
}

function resolvePi(given: string | undefined): string {
  if (given) {
    if (!fs.existsSync(given)) throw new UsageError(`--pi ${given}: no such file`);
    return path.resolve(given);
  }
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    const candidate = path.join(dir, "pi");
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // next
    }
  }
  throw new UsageError(
    'no "pi" on PATH; install pi (npm install -g @earendil-works/pi-coding-agent) or pass --pi <path>',
  );
}

function optionsFrom(cli: CliOptions, say: (line: string) => void): StressOptions {
  const mode = cli.live ? "live" : "scripted";
  for (const flag of ["model", "thinking", "pi"] as const)
    if (cli[flag] !== undefined && !cli.live) throw new UsageError(`--${flag} needs --live`);
  if (cli.model !== undefined && !/^[^/\s]+\/\S+$/.test(cli.model))
    throw new UsageError(`--model ${cli.model}: expected provider/id`);
  const seconds = cli.timeout === undefined ? (cli.live ? 900 : 180) : Number(cli.timeout);
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new UsageError(`--timeout ${cli.timeout}: expected a positive number of seconds`);
  if (!cli.live && !fs.existsSync(REAL_PI)) throw new UsageError(`${REAL_PI} is missing: run "npm install" first`);
  if (!fs.existsSync(path.join(REPO_ROOT, "dist", "extension", "index.js")))
    throw new UsageError('dist/ is missing: run "npm install" (or "npm run build") first');
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  return {
    mode,
    out: path.resolve(cli.out ?? path.join("stress-output", `${mode}-${stamp}`)),
    timeoutMs: seconds * 1000,
    ...(cli.live && { piBin: resolvePi(cli.pi) }),
    ...(cli.model && { model: cli.model }),
    ...(cli.thinking && { thinking: cli.thinking }),
    say,
  };
}

/** CLI entry: resolves with the exit code. */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    program.parse(argv);
  } catch (err) {
    if (err instanceof CommanderError)
      return ["commander.helpDisplayed", "commander.help", "commander.version"].includes(err.code) ? 0 : 2;
    throw err;
  }
  const cli = program.opts<CliOptions>();
  if (cli.list) {
    for (const s of STRESS_SCENARIOS) process.stdout.write(`${s.id}  ${s.name.padEnd(26)} ${s.title}\n`);
    return 0;
  }
  const say = (line: string) => process.stdout.write(`${line}\n`);
  let opts: StressOptions;
  let scenarios: ReturnType<typeof selectScenarios>;
  try {
    opts = optionsFrom(cli, cli.quiet ? () => {} : say);
    scenarios = selectScenarios(cli.only);
  } catch (err) {
    process.stderr.write(`stress-test: ${errorText(err)}\n`);
    return 2;
  }
  // Ctrl-C: end the root pi (its wrappers and children follow their parent) and stop.
  const onSignal = () => void killAll().finally(() => process.exit(130));
  process.once("SIGINT", onSignal).once("SIGTERM", onSignal);
  opts.say?.(
    `stress-test: ${scenarios.length} scenario(s), ${opts.mode}${opts.model ? ` on ${opts.model}` : ""}; artifacts in ${opts.out}`,
  );
  const summary = await runStress(scenarios, opts);
  say(
    `stress-test: ${summary.totals.passed}/${summary.totals.scenarios} passed in ${(summary.durationMs / 1000).toFixed(1)} s — ${path.join(opts.out, "summary.json")}`,
  );
  return summary.totals.failed === 0 ? 0 : 1;
}
