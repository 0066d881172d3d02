/**
 * `subagent-wrapper doctor --runner <name>` for the runners that go through `serve` on a far
 * side: can a child start there? One round trip through the runner's own prefix
 * (src/contracts/runner-prefix.ts) runs a small POSIX sh script on the far side that reports
 * git, Node (≥ 20), pi and this package (`<remote_command…> --version`); each missing one is a
 * failed check that names it. Before that:
 * - ssh: the connection itself (BatchMode, the definition's port, key and options), with ssh's
 *   own message when it is refused;
 * - slurm: srun and sinfo on this machine's PATH, and `srun [srun_options…] true` within the
 *   time limit (the cluster's own refusal — a bad partition, a time limit — when it fails);
 * - command: the command's program on PATH.
 * The checks come back as DoctorCheck lines (doctor-format.ts) for the caller to print.
 */
import {
  type RemoteRunner,
  remoteWords,
  runnerArgv,
  type SshConnection,
  shellQuote,
} from "../contracts/runner-prefix.js";
import type { CommandRunner, SlurmRunner, SshRunner } from "../contracts/runners.js";
import { packageVersion } from "../lib/package-info.js";
import { runProcess, tail } from "../lib/run-process.js";
import { findOnPath } from "../wrapper/child.js";
import { type DoctorCheck, nodeVersionOk, parsePiVersion } from "./doctor-format.js";

/** How one argv ran: what the checks read. */
export interface ArgvRun {
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** The program could not be started at all (missing, not executable). */
  error?: string;
  durationMs: number;
}
export type RunArgv = (argv: readonly string[], timeoutMs: number) => Promise<ArgvRun>;

export interface RemoteDoctorOptions {
  /** Time limit of each call (the far script runs `pi --version`, which takes seconds). */
  timeoutMs: number;
  env?: NodeJS.ProcessEnv;
  /** The ssh kind's shared connection, as the wrapper uses it; none: a connection of its own. */
  connection?: SshConnection;
  run?: RunArgv;
}

/** Runs argv (no shell) in its own process group with a time limit; always settles. */
export function runArgv(env: NodeJS.ProcessEnv): RunArgv {
  return async (argv, timeoutMs) => {
    const started = Date.now();
    try {
      const result = await runProcess(argv[0] as string, argv.slice(1), { cwd: process.cwd(), env, timeoutMs });
      const { code, stderr, timedOut } = result;
      return { code, stdout: result.stdout.toString("utf8"), stderr, timedOut, durationMs: Date.now() - started };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return { code: null, stdout: "", stderr: "", timedOut: false, error: message, durationMs: Date.now() - started };
    }
  };
}

/** Marks the script's report lines, so a login banner or a scheduler's chatter is not read as one. */
const MARK = "pst-doctor";
const FAR_TOOLS = ["git", "node", "pi"] as const;

/**
 * The far script: `pst-doctor<TAB>name<TAB>first line of --version` per tool (empty when the
 * tool is missing), then `package` for the remote command and `host` for where it ran.
 */
export function farCheckScript(remoteCommand: readonly string[]): string {
  const version = (words: string) => `"$(${words} --version </dev/null 2>&1 | head -n 1)"`;
  const report = (name: string, value: string) => `printf '${MARK}\\t%s\\t%s\\n' ${name} ${value}`;
  const first = shellQuote(remoteCommand[0] ?? "subagent-wrapper");
  return [
    `for tool in ${FAR_TOOLS.join(" ")}; do`,
    `  if command -v "$tool" >/dev/null 2>&1; then ${report('"$tool"', version('"$tool"'))}; else ${report('"$tool"', "''")}; fi`,
    "done",
    `if command -v ${first} >/dev/null 2>&1; then ${report("package", version(remoteCommand.map(shellQuote).join(" ")))}; else ${report("package", "''")}; fi`,
    report("host", '"$(hostname)"'),
  ].join("\n");
}

/** name → value of the far script's report lines (values may be empty: missing). */
export function parseFarReport(stdout: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const line of stdout.split("\n")) {
    const [mark, name, ...value] = line.split("\t");
    if (mark === MARK && name) found.set(name, value.join("\t").trim());
  }
  return found;
}

const MISSING_HINTS: Record<string, string> = {
  git: "install git there (the child works in a git workspace)",
  node: "install Node 20 or newer there",
  pi: "install pi there (npm install -g @earendil-works/pi-coding-agent) and put it on PATH",
  package: "install pi-subagent-tree there (npm install -g pi-subagent-tree) or set remote_command to where it is",
};

/** The far side's checks from its report: git, node (≥ 20), pi and this package, each naming what is missing. */
export function farChecks(report: Map<string, string>, remoteCommand: readonly string[]): DoctorCheck[] {
  const where = report.get("host") ? ` on ${report.get("host")}` : "";
  return [...FAR_TOOLS, "package"].map((name): DoctorCheck => {
    const label = `far ${name}`;
    const value = report.get(name) ?? "";
    const hint = MISSING_HINTS[name];
    if (value === "" || (name === "pi" && parsePiVersion(value) === undefined)) {
      return { name: label, ok: false, detail: `missing${where}`, hint };
    }
    if (name === "node" && !nodeVersionOk(value))
      return { name: label, ok: false, detail: `${value}${where} is too old`, hint };
    const shown = name === "package" ? `${remoteCommand.join(" ")} --version: ${value}` : value;
    return { name: label, ok: true, detail: `${shown}${where}`, notes: packageNotes(name, value) };
  });
}

function packageNotes(name: string, value: string): string[] | undefined {
  if (name !== "package" || value.includes(packageVersion())) return undefined;
  return [`this machine has ${packageVersion()}: keep both sides on one version`];
}

/** One line for a call that failed: its first stderr line, then up to 1 KB of stderr's end. */
export function failureDetail(run: ArgvRun, what: string, timeoutMs: number): string {
  if (run.error !== undefined) return `${what} could not start: ${run.error}`;
  if (run.timedOut) return `${what} gave no answer within ${Math.round(timeoutMs / 1000)} s`;
  const lines = run.stderr.trim().split("\n");
  const first = lines[0]?.trim() || `exit ${run.code ?? "by a signal"}`;
  const rest = lines.length > 1 ? `\n${tail(lines.slice(1).join("\n"), 1024)}` : "";
  return `${first}${rest}`;
}

/** The far script through the runner's prefix: its checks, or one failed check saying why it did not run. */
async function farSideChecks(
  definition: RemoteRunner,
  opts: RemoteDoctorOptions,
  run: RunArgv,
  label: string,
): Promise<DoctorCheck[]> {
  const remoteCommand = remoteWords(definition).slice(0, -1);
  const prefix = runnerArgv({ ...definition, remote_command: ["sh", "-c"] }, { connection: opts.connection }).slice(
    0,
    -1,
  );
  const argv = [
    ...prefix,
    definition.kind === "ssh" ? shellQuote(farCheckScript(remoteCommand)) : farCheckScript(remoteCommand),
  ];
  const result = await run(argv, opts.timeoutMs);
  const report = parseFarReport(result.stdout);
  if (result.code !== 0 || !report.has("host")) {
    return [{ name: label, ok: false, detail: failureDetail(result, argv[0] as string, opts.timeoutMs) }];
  }
  return farChecks(report, remoteCommand);
}

export async function checkSshRunner(definition: SshRunner, opts: RemoteDoctorOptions): Promise<DoctorCheck[]> {
  const run = opts.run ?? runArgv(opts.env ?? process.env);
  const name = `ssh ${definition.host}`;
  const connect = await run(
    runnerArgv({ ...definition, remote_command: ["true"] }, { connection: opts.connection }).slice(0, -1),
    opts.timeoutMs,
  );
  if (connect.code !== 0) {
    const hint = "check the host, port, key and ssh_options (ssh -v shows each step); BatchMode: no password prompts";
    return [{ name, ok: false, detail: failureDetail(connect, "ssh", opts.timeoutMs), hint }];
  }
  const connected: DoctorCheck = { name, ok: true, detail: `connected (${connect.durationMs} ms)` };
  return [connected, ...(await farSideChecks(definition, opts, run, "far side"))];
}

export async function checkSlurmRunner(definition: SlurmRunner, opts: RemoteDoctorOptions): Promise<DoctorCheck[]> {
  const env = opts.env ?? process.env;
  const run = opts.run ?? runArgv(env);
  const tools = ["srun", "sinfo"].map((tool): DoctorCheck => {
    const found = findOnPath(tool, env);
    return found
      ? { name: tool, ok: true, detail: found }
      : {
          name: tool,
          ok: false,
          detail: "not on PATH",
          hint: "install Slurm's client commands (Debian: slurm-client)",
        };
  });
  if (tools.some((check) => !check.ok)) return tools;
  const trivial = await run(runnerArgv({ ...definition, remote_command: ["true"] }).slice(0, -1), opts.timeoutMs);
  const srunTrue: DoctorCheck =
    trivial.code === 0
      ? { name: "srun true", ok: true, detail: `ran in ${trivial.durationMs} ms` }
      : { name: "srun true", ok: false, detail: failureDetail(trivial, "srun", opts.timeoutMs) };
  if (!srunTrue.ok) return [...tools, srunTrue];
  return [...tools, srunTrue, ...(await farSideChecks(definition, opts, run, "far side"))];
}

export async function checkCommandRunner(definition: CommandRunner, opts: RemoteDoctorOptions): Promise<DoctorCheck[]> {
  const env = opts.env ?? process.env;
  const program = definition.command[0] as string;
  const found = program.includes("/") ? program : findOnPath(program, env);
  if (found === undefined) return [{ name: program, ok: false, detail: "not on PATH" }];
  const checks: DoctorCheck[] = [{ name: program, ok: true, detail: found }];
  return [...checks, ...(await farSideChecks(definition, opts, opts.run ?? runArgv(env), "far side"))];
}

/** The checks of any runner that goes through `serve`. */
export function checkRemoteRunner(definition: RemoteRunner, opts: RemoteDoctorOptions): Promise<DoctorCheck[]> {
  switch (definition.kind) {
    case "ssh":
      return checkSshRunner(definition, opts);
    case "slurm":
      return checkSlurmRunner(definition, opts);
    case "command":
      return checkCommandRunner(definition, opts);
  }
}
