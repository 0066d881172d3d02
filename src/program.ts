import { Command, CommanderError } from "commander";
import { addInspectionCommands, subcommandShadowNote } from "./cli/commands.js";
import { runCommand, say } from "./cli/run-command.js";
import { WRAPPER_EXIT } from "./contracts/result.js";
import { packageVersion } from "./lib/package-info.js";
import { errorText } from "./lib/values.js";

export { metaErrorResult } from "./cli/run-command.js";

export function buildProgram(onExitCode: (code: number) => void): Command {
  const version = packageVersion();
  const program = new Command("subagent-wrapper")
    .description("Run one child `pi --mode json` as meta.json describes; write events.jsonl and result.json.")
    .version(version, "-v, --version")
    .exitOverride()
    .configureOutput({
      writeErr: (text) => process.stderr.write(text.startsWith("error:") ? `subagent-wrapper: ${text}` : text),
    })
    .addHelpText(
      "after",
      `
Exit codes: 0 completed, 1 any other recorded outcome (see result.json "status"),
            2 usage or meta.json error (no child started),
            3 result.json could not be written, not even into the space reserved for it
              (the disk is full or failing): the outcome is on stderr only.
Environment: PI_SUBAGENTS_PI_BIN  pi executable (path or name on PATH; default "pi")
             PI_SUBAGENTS_PARENT_PID  stop the run when this process is gone
             PI_SUBAGENTS_LOG_MAX_BYTES  cap of each raw log (default 8 MiB; "unlimited")
Subcommands have their own --help and exit codes. A bare word that names a subcommand is
that subcommand: a meta file named like one runs with: subagent-wrapper run <file>`,
    );
  program
    .command("run <meta.json>", { isDefault: true })
    .description("run the child described by meta.json (the default command)")
    .action(async (metaPath: string) => onExitCode(await runCommand(metaPath)));
  program
    .command("spare <spare.json>")
    .description(
      "a spare wrapper: start pi for a template meta.json, run the turn a `take <meta.json>` line on stdin hands it",
    )
    .action(async (templatePath: string) => {
      const { spareCommand } = await import("./cli/spare-command.js");
      onExitCode(await spareCommand(templatePath));
    });
  program
    .command("serve")
    .description("the far side of a runner: speak the runner protocol on stdin/stdout (docs/runners.md)")
    .action(async () => {
      const { serve } = await import("./serve/serve.js");
      onExitCode(await serve({ input: process.stdin, output: process.stdout, server: `subagent-wrapper ${version}` }));
    });
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
