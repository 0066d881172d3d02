/**
 * The subcommands beside `run` and `serve`: inspect, tail, doctor, bring, clean, stop, cost. Only their names, options and help
 * live here; each one's code is imported when it is called, so `subagent-wrapper run`
 * never loads it (nor the schema validator that `inspect` uses).
 */
import fs from "node:fs";
import { type Command, InvalidArgumentError } from "commander";

/** Every word the CLI reads as a command rather than as a meta file. */
export const COMMAND_WORDS = [
  "run",
  "serve",
  "inspect",
  "tail",
  "doctor",
  "bring",
  "clean",
  "stop",
  "cost",
  "help",
] as const;

/** A repeatable option's values, in the order given. */
const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError("must be a positive integer");
  return n;
}

/**
 * A reader that goes away (`| head`) closes stdout under us: end quietly, as other tools
 * do, rather than with an EPIPE stack trace.
 */
function quietWhenStdoutCloses(): void {
  process.stdout.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(0);
    throw err;
  });
}

const TARGET_HELP =
  "a run directory (meta.json, events.jsonl, result.json, logs), a meta.json file,\nor an agent's folder in a tree directory (its latest run)";
const INSPECT_TARGET_HELP = `${TARGET_HELP},\nor a tree directory (<base>/<root session id>/: the whole tree, each agent and its runs)`;

/**
 * A bare word that names a subcommand is always that subcommand. When it is given alone and
 * a file of that name sits in the current directory (`subagent-wrapper doctor`, meaning the
 * meta file ./doctor), say how to run the file instead, so nobody wonders.
 */
export function subcommandShadowNote(argv: readonly string[], cwd = process.cwd()): string | undefined {
  const word = argv[2];
  if (argv.length !== 3 || !word || !(COMMAND_WORDS as readonly string[]).includes(word)) return undefined;
  try {
    if (!fs.statSync(`${cwd}/${word}`).isFile()) return undefined;
  } catch {
    return undefined;
  }
  return `subagent-wrapper: note: "${word}" is the ${word} command; to run the meta file ./${word}, use: subagent-wrapper run ${word}`;
}

export function addInspectionCommands(program: Command, version: string, onExitCode: (code: number) => void): void {
  addInspectCommand(program, version, onExitCode);
  addTailCommand(program, version, onExitCode);
  addDoctorCommand(program, version, onExitCode);
  addBringCommand(program, version, onExitCode);
  addCleanCommand(program, version, onExitCode);
  addStopCommand(program, version, onExitCode);
  addCostCommand(program, version, onExitCode);
}

function addCostCommand(program: Command, version: string, onExitCode: (code: number) => void): void {
  program
    .command("cost <tree>")
    .description("what each agent of a tree cost (tokens, USD, wall time) and each subtree's total")
    .version(version, "-v, --version")
    .option("--json", "print one JSON object instead of a table")
    .option("--csv", "print CSV for a spreadsheet: a header row, one row per agent")
    .addHelpText(
      "after",
      `
<tree> is a tree directory (<PI_SUBAGENTS_DIR or subagents/>/<root session id>).
Per agent: path, role, model(s), turns, model requests, repairs (0: work is not verified
yet), input/output/cache tokens, USD, wall time; per subtree: the same usage summed, as
list_agents rolls it up (a running turn counts what it has spent so far).
Exit codes: 0 shown
            1 shown, but an agent's record could not be read (each a line on stderr)
            2 no tree directory there, or both --json and --csv (one line on stderr)`,
    )
    .action(async (tree: string, flags: { json?: boolean; csv?: boolean }) => {
      quietWhenStdoutCloses();
      const { costCommand } = await import("./cost.js");
      onExitCode(costCommand(tree, flags));
    });
}

function addStopCommand(program: Command, version: string, onExitCode: (code: number) => void): void {
  program
    .command("stop <dir>")
    .description("stop the turns running in a tree directory or a run directory (each ends interrupted, resumable)")
    .version(version, "-v, --version")
    .addHelpText(
      "after",
      `
<dir> is a tree directory (<PI_SUBAGENTS_DIR or subagents/>/<root session id>) — every turn
running in it, such as those a root left running when it quit (onExit detach) or died — or
one run directory. Each wrapper is asked to stop (SIGTERM): it stops its pi and writes
result.json \`interrupted\`; a follow-up resumes the agent.
Exit codes: 0 none is left running
            1 one is still running after 20 s (each is a line)
            2 neither a tree directory nor a run directory there (one line on stderr)`,
    )
    .action(async (dir: string) => {
      quietWhenStdoutCloses();
      const { stopCommand } = await import("./stop.js");
      onExitCode(await stopCommand(dir));
    });
}

function addInspectCommand(program: Command, version: string, onExitCode: (code: number) => void): void {
  program
    .command("inspect <run>")
    .description(
      "show a run's summary and transcript, finished or live, and check its files against the schemas; or a whole agent tree",
    )
    .version(version, "-v, --version")
    .option("--json", "print one JSON object (state, files, meta, result, contract findings) instead of text")
    .option("--no-transcript", "leave the transcript out (the final answer is shown instead)")
    .option("--no-check", "do not check the files against schemas/*.schema.json")
    .addHelpText(
      "after",
      `
<run> is ${INSPECT_TARGET_HELP}.
The transcript comes from events.jsonl, so a run that is still going shows what it did so far.
Exit codes: 0 shown, and every file holds to its schema
            1 shown, but a file breaks its contract (not JSON, or a schema violation)
            2 no run or tree there (one line on stderr)
A tree directory: exit 0 shown, 1 an agent's record cannot be read.`,
    )
    .action(async (target: string, flags: { json?: boolean; transcript?: boolean; check?: boolean }) => {
      quietWhenStdoutCloses();
      const { inspectCommand } = await import("./inspect.js");
      onExitCode(await inspectCommand(target, flags));
    });
}

function addTailCommand(program: Command, version: string, onExitCode: (code: number) => void): void {
  program
    .command("tail <run>")
    .description("follow a run's events.jsonl as it grows; stop when the run ends")
    .version(version, "-v, --version")
    .option("--from-start", "print every record so far before following (default: the last --lines)")
    .option("-n, --lines <count>", "records shown from before the start of following", positiveInt, 10)
    .option("--json", "print the records as they are written (NDJSON) instead of readable lines")
    .addHelpText(
      "after",
      `
<run> is ${TARGET_HELP},
or a tree directory (its newest running run, else its newest run; named on stderr).
Waits for events.jsonl to appear, prints each new record, and returns when run_end is
written or result.json appears (a one-line summary follows, on stderr with --json).
Exit codes: 0 the run completed
            1 the run ended with another status, or stopped without result.json
            2 no run there (one line on stderr)
            130 stopped with Ctrl-C (SIGINT); 143 with SIGTERM`,
    )
    .action(async (target: string, flags: { fromStart?: boolean; lines: number; json?: boolean }) => {
      quietWhenStdoutCloses();
      const { tailCommand } = await import("./tail.js");
      onExitCode(await tailCommand(target, flags));
    });
}

function addDoctorCommand(program: Command, version: string, onExitCode: (code: number) => void): void {
  program
    .command("doctor")
    .description(
      "check that runs can start here: Node, the pi binary and its version, pi's agent dir, its default model and key, the extension loading, writable run directories",
    )
    .version(version, "-v, --version")
    .option("--json", "print the checks as JSON")
    .option(
      "--timeout-ms <ms>",
      "how long `pi --version` may take (a pi start that loads models: 3 times it)",
      positiveInt,
      10_000,
    )
    .option(
      "--tree <dir>",
      "instead: list the git worktrees of a tree directory's isolated agents and say which are stale",
    )
    .option("--runner <name>", "instead: say whether that runner of the settings can work here, and what is missing")
    .addHelpText(
      "after",
      `
Environment: PI_SUBAGENTS_PI_BIN   pi executable (path or name on PATH; default "pi")
             PI_CODING_AGENT_DIR  pi's agent dir (default ~/.pi/agent)
             PI_SUBAGENTS_DIR     where the extension keeps run directories (default: beside the
                                  session file, else a temp folder)
With --tree <dir> (a tree directory: <PI_SUBAGENTS_DIR or subagents/>/<root session id>):
each isolated agent's worktree and branch, stale when its folder is missing or unknown to git
for an agent not shut down, its branch is gone, a shut-down agent's worktree is still there,
or a folder in worktrees/ belongs to no agent. Read-only: it repairs nothing.
With --runner <name> (a runner of pi's settings, docs/runners.md): for ssh, slurm and command,
the connection (ssh) or \`srun true\` (slurm), then on the far side git, Node, the pi serve starts
(and its Node: pi 1.x needs 22.19), this package, and a model that pi has a key for there; for a
sandbox: bwrap, user namespaces, git. Then the far side answers the protocol's hello. Only that
runner is spoken of; one the settings name but cannot use says why (exit 2).
Exit codes: 0 every check passed (--tree: none stale), 1 a check failed (--tree: some stale),
            2 usage error (--tree: no tree directory there)`,
    )
    .action(async (flags: { json?: boolean; timeoutMs: number; tree?: string; runner?: string }) => {
      quietWhenStdoutCloses();
      if (flags.runner !== undefined) {
        const { runnerDoctor } = await import("./doctor-runner.js");
        onExitCode(await runnerDoctor(flags.runner, flags.json, flags.timeoutMs));
        return;
      }
      const { doctorCommand } = await import("./doctor.js");
      onExitCode(await doctorCommand(flags));
    });
}

function addBringCommand(program: Command, version: string, onExitCode: (code: number) => void): void {
  program
    .command("bring <base> <head>")
    .description(
      "bring an isolated agent's work (the changes from <base> to <head>) into this repository's working tree, keeping your uncommitted work",
    )
    .version(version, "-v, --version")
    .addHelpText(
      "after",
      `
<base> and <head> are the base_commit and head_commit of the agent's notice (or any names
git gives a commit, such as its subagent/ branch). Run it anywhere in the repository.
Each file the agent changed is written into the working tree only (nothing is staged):
  - a file you have not changed since the agent started becomes the agent's version;
  - a file you changed too (staged, unstaged or untracked) is merged line by line: both
    changes are kept, and lines you both changed get conflict markers (<<<<<<< yours);
  - a change no line merge can join (a binary file, a file one side deleted) keeps yours
    and puts the agent's version beside it as <file>~<head>.
The conflicting files are named on one line ("conflicts: …"), each with why below it.
Exit codes: 0 everything came in, 1 some files conflict (named), 2 nothing done (not a
            git working tree, or a commit the repository does not hold)`,
    )
    .action(async (base: string, head: string) => {
      quietWhenStdoutCloses();
      const { bringCommand } = await import("./bring.js");
      onExitCode(await bringCommand(base, head));
    });
}

function addCleanCommand(program: Command, version: string, onExitCode: (code: number) => void): void {
  program
    .command("clean [tree]")
    .description(
      "list, then with --yes remove, the git worktrees of a tree's ended agents and their branches without commits",
    )
    .version(version, "-v, --version")
    .option("--yes", "remove what the list shows (without it nothing changes)")
    .option(
      "--branch <name>",
      "also delete this branch though it holds the child's commits (a branch name or the agent's path; repeatable)",
      collect,
    )
    .option("--repo", "every tree that holds a worktree of the repository at [tree] (default: the current folder)")
    .addHelpText(
      "after",
      `
[tree] is a tree directory (<PI_SUBAGENTS_DIR or subagents/>/<root session id>), or a folder
of them (a session's subagents/, PI_SUBAGENTS_DIR): each of its trees. With --repo, every tree
that holds a worktree of the repository (found through git's own list of its worktrees,
wherever the sessions kept their trees); [tree] then names the repository. Several trees:
each is listed under a "tree <dir>:" line.
Goes: the worktree of every isolated agent that ended (not running or queued, and under no
parent that still works), and its subagent/* branch when the branch holds no commit beyond
its base. Stays: a branch with the child's commits (name it with --branch to delete it), a
worktree with uncommitted changes, everything of an agent in use. Clean a tree once its pi
session is over; inside the session, /agents clean does the same.
Exit codes: 0 listed (or removed) everything it should
            1 something could not be removed (each failure is a line)
            2 no tree directory there (or no tree of the repository), or a --branch no tree
              holds (one line on stderr)`,
    )
    .action(async (tree: string | undefined, flags: { yes?: boolean; branch?: string[]; repo?: boolean }) => {
      quietWhenStdoutCloses();
      const { cleanCommand } = await import("./clean.js");
      onExitCode(await cleanCommand(tree, flags));
    });
}
