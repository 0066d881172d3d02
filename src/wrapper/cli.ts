import fs from "node:fs";
import { Command, CommanderError } from "commander";
import { addInspectionCommands, subcommandShadowNote } from "../cli/commands.js";
import { emptyUsage } from "../contracts/events.js";
import { MetaError } from "../contracts/meta.js";
import { RESULT_VERSION, type ResultV1, WRAPPER_EXIT } from "../contracts/result.js";
import { errorText } from "../lib/values.js";
import { writeResultAtomic } from "./artifacts.js";
import { loadMeta } from "./load-meta.js";
import { runWrapper } from "./run.js";

const say = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

function packageVersion(): string {
  try {
    const pkg = JSON.parse(fs.readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version?: string };
    return pkg.version ?? "unknown";
  } catch {
    return "unknown";
  }
}

/** The result.json of a run that never started because its meta.json was invalid. */
export function metaErrorResult(error: MetaError, now = new Date()): ResultV1 {
  return {
    version: RESULT_VERSION,
    runId: error.runId ?? "",
    status: "failed",
    exitCode: WRAPPER_EXIT.usage,
    finalText: "",
    usage: emptyUsage(),
    turns: 0,
    toolCalls: 0,
    startedAt: now.toISOString(),
    endedAt: now.toISOString(),
    durationMs: 0,
    childExitCode: null,
    childSignal: null,
    forcedExit: false,
    errorMessage: error.message,
  };
}

const HANDLED_SIGNALS = ["SIGTERM", "SIGINT", "SIGHUP"] as const;

async function runCommand(metaPath: string): Promise<number> {
  // A stop asked for while meta.json is read is remembered, so it is recorded as
  // `interrupted` rather than killing the wrapper before result.json exists.
  let earlySignal: NodeJS.Signals | undefined;
  const remember = (signal: NodeJS.Signals) => {
    earlySignal ??= signal;
  };
  for (const signal of HANDLED_SIGNALS) process.on(signal, remember);
  const forget = () => {
    for (const signal of HANDLED_SIGNALS) process.off(signal, remember);
  };
  let meta;
  try {
    meta = await loadMeta(metaPath);
  } catch (err) {
    forget();
    if (!(err instanceof MetaError)) throw err;
    say(`subagent-wrapper: ${err.message}`);
    if (err.resultPath) await writeResultAtomic(err.resultPath, metaErrorResult(err)).catch(() => undefined);
    return WRAPPER_EXIT.usage;
  }
  // runWrapper installs its own handlers before its first await, so none is missed.
  const running = runWrapper(meta, { warn: say, handleSignals: true, ...(earlySignal && { earlySignal }) });
  forget();
  const { result, exitCode } = await running;
  if (result.status !== "completed" && result.errorMessage) say(`subagent-wrapper: ${result.status}: ${result.errorMessage}`);
  return exitCode;
}

export function buildProgram(onExitCode: (code: number) => void): Command {
  const version = packageVersion();
  const program = new Command("subagent-wrapper")
    .description("Run one child `pi --mode json` as meta.json describes; write events.jsonl and result.json.")
    .version(version, "-v, --version")
    .exitOverride()
    .configureOutput({ writeErr: (text) => process.stderr.write(text.startsWith("error:") ? `subagent-wrapper: ${text}` : text) })
    .addHelpText(
      "after",
      `
Exit codes: 0 completed, 1 any other recorded outcome (see result.json "status"),
            2 usage or meta.json error (no child started).
Environment: PI_SUBAGENTS_PI_BIN  pi executable (path or name on PATH; default "pi")
             PI_SUBAGENTS_PARENT_PID  stop the run when this process is gone
Subcommands have their own --help and exit codes. A bare word that names a subcommand is
that subcommand: a meta file named like one runs with: subagent-wrapper run <file>`,
    );
  program
    .command("run <meta.json>", { isDefault: true })
    .description("run the child described by meta.json (the default command)")
    .action(async (metaPath: string) => onExitCode(await runCommand(metaPath)));
  addInspectionCommands(program, version, onExitCode);
  return program;
}

/** CLI entry: resolves with the process exit code. */
export async function main(argv: string[]): Promise<number> {
  let code: number = WRAPPER_EXIT.usage;
  const program = buildProgram((exitCode) => {
    code = exitCode;
  });
  const note = subcommandShadowNote(argv);
  if (note) say(note);
  try {
    await program.parseAsync(argv);
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      const benign = ["commander.helpDisplayed", "commander.version", "commander.help"].includes(err.code);
      return benign ? 0 : WRAPPER_EXIT.usage;
    }
    say(`subagent-wrapper: internal error: ${errorText(err)}`);
    return WRAPPER_EXIT.outcome;
  }
}
