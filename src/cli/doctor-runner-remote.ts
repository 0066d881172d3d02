/**
 * `subagent-wrapper doctor --runner <name>` for the runners that go through `serve` on a far
 * side: can a child start there? One round trip through the runner's own prefix
 * (src/contracts/runner-prefix.ts, with the definition's far pi and agent dir) runs a small
 * POSIX sh script on the far side that reports git, Node (≥ 20), the pi serve would start
 * (found there, answering, on a Node it runs on: pi 1.x needs 22.19), this package
 * (`<remote_command…> --version`) and the models that pi has a key for in the far agent dir;
 * each missing one is a failed check that names it and where. Before that:
 * - ssh: the connection itself (BatchMode, the definition's port, key and options), with ssh's
 *   own message when it is refused;
 * - slurm: srun and sinfo on this machine's PATH, and `srun [srun_options…] true` within the
 *   time limit (the cluster's own refusal — a bad partition, a time limit — when it fails);
 * - command: the command's program on PATH.
 * The checks come back as DoctorCheck lines (doctor-format.ts) for the caller to print.
 */
import { ENV } from "../contracts/env.js";
import { type RemoteRunner, runnerArgv, type SshConnection, shellQuote } from "../contracts/runner-prefix.js";
import { type CommandRunner, DEFAULT_REMOTE_COMMAND, type SlurmRunner, type SshRunner } from "../contracts/runners.js";
import { packageVersion } from "../lib/package-info.js";
import { PI_AGENT_DIR_ENV } from "../lib/pi-agent-dir.js";
import { runProcess, tail } from "../lib/run-process.js";
import { findOnPath } from "../wrapper/child.js";
import { compareVersions, piNodeFloor } from "../wrapper/pi-version.js";
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
const FAR_TOOLS = ["git", "node"] as const;

/**
 * The far script: `pst-doctor<TAB>name<TAB>value` lines: git's and node's first line of
 * --version (empty when missing); `pi` (the pi serve starts: PI_SUBAGENTS_PI_BIN there, else
 * `pi`) as its path and --version; `package` for the remote command; `models` (the count and
 * first of the models that pi has a key for) and `agentdir` (what that pi reads); `host`.
 */
export function farCheckScript(remoteCommand: readonly string[]): string {
  const version = (words: string) => `"$(${words} --version </dev/null 2>&1 | head -n 1)"`;
  const report = (name: string, value: string) => `printf '${MARK}\\t%s\\t%s\\n' ${name} ${value}`;
  const first = shellQuote(remoteCommand[0] ?? "subagent-wrapper");
  // pi 1.x lists its models on stdout, pi 0.73.1 on stderr: both are read.
  const countModels = `"$("$pi" --list-models </dev/null 2>&1 | awk '$1=="provider"&&$2=="model"{f=1;next} f&&NF>=2{n++;if(n==1)m=$1"/"$2} END{print n+0, m}')"`;
  return [
    `pi="\${${ENV.piBin}:-pi}"`,
    `for tool in ${FAR_TOOLS.join(" ")}; do`,
    `  if command -v "$tool" >/dev/null 2>&1; then ${report('"$tool"', version('"$tool"'))}; else ${report('"$tool"', "''")}; fi`,
    "done",
    `if command -v "$pi" >/dev/null 2>&1; then`,
    `  ${report("pipath", '"$(command -v "$pi")"')}; ${report("pi", version('"$pi"'))}; ${report("models", countModels)}`,
    `else ${report("pipath", "''")}; ${report("pi", "''")}; fi`,
    `${report("agentdir", `"\${${PI_AGENT_DIR_ENV}:-$HOME/.pi/agent}"`)}`,
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

const AGENT_DIR_HINT =
  "the far pi reads the far user's agent dir, not this machine's (it does not travel): run pi there and /login, copy models.json and auth.json into it, or name another with the runner's agent_dir";
const MISSING_HINTS: Record<string, string> = {
  git: "install git there (the child works in a git workspace)",
  node: "install Node 20 or newer there (22.19 or newer for pi 1.x), first on the far PATH",
  pi: "install pi there (npm install -g @earendil-works/pi-coding-agent) so it is on the far PATH, or name it with the runner's pi field",
  package: "install pi-subagent-tree there (npm install -g pi-subagent-tree) or set remote_command to where it is",
};

/** What the far report says of one thing; `where` is ` on <host>`. */
interface FarFacts {
  report: Map<string, string>;
  where: string;
  /** The far pi as the runner names it (its `pi` field), else undefined: `pi` on the far PATH. */
  namedPi: string | undefined;
}

/** The far side's checks from its report: git, node (≥ 20), pi (and its Node floor), this package, pi's models. */
export function farChecks(
  report: Map<string, string>,
  remoteCommand: readonly string[],
  namedPi?: string,
): DoctorCheck[] {
  const facts: FarFacts = { report, where: report.get("host") ? ` on ${report.get("host")}` : "", namedPi };
  const checks = [...FAR_TOOLS.map((name) => toolCheck(facts, name)), piCheck(facts)];
  checks.push(toolCheck(facts, "package", remoteCommand));
  if (checks[2]?.ok) checks.push(modelsCheck(facts));
  return checks;
}

function toolCheck(facts: FarFacts, name: string, remoteCommand: readonly string[] = []): DoctorCheck {
  const label = `far ${name}`;
  const value = facts.report.get(name) ?? "";
  const hint = MISSING_HINTS[name];
  if (value === "") return { name: label, ok: false, detail: `missing${facts.where}`, hint };
  if (name === "node" && !nodeVersionOk(value))
    return { name: label, ok: false, detail: `${value}${facts.where} is too old`, hint };
  const shown = name === "package" ? `${remoteCommand.join(" ")} --version: ${value}` : value;
  return { name: label, ok: true, detail: `${shown}${facts.where}`, notes: packageNotes(name, value) };
}

/** The far pi: found, answering --version, and on a Node it runs on (pi 1.x needs 22.19). */
function piCheck({ report, where, namedPi }: FarFacts): DoctorCheck {
  const name = "far pi";
  const value = report.get("pi") ?? "";
  const pathThere = report.get("pipath") ?? "";
  if (pathThere === "") {
    const detail = namedPi === undefined ? `pi not found on the far PATH${where}` : `${namedPi} not found${where}`;
    return { name, ok: false, detail, hint: MISSING_HINTS.pi };
  }
  const node = report.get("node")?.replace(/^v/, "") ?? "";
  const version = parsePiVersion(value);
  if (version === undefined || !/^\d+\.\d+/.test(version)) {
    const nodeNote = node === "" ? "" : `; pi 1.x needs Node 22.19 or newer, and node there is ${node}`;
    return {
      name,
      ok: false,
      detail: `${pathThere} --version failed${where}: ${value || "printed nothing"}`,
      hint: `check that ${pathThere} is pi${nodeNote}`,
    };
  }
  const floor = piNodeFloor({ version });
  if (floor !== undefined && node !== "" && (compareVersions(node, floor) ?? -1) < 0) {
    return {
      name,
      ok: false,
      detail: `${version}${where} needs Node ${floor} or newer, and node there is ${node}`,
      hint: `put Node ${floor} or newer first on the far PATH, or name a pi that runs on this Node with the runner's pi field`,
    };
  }
  return { name, ok: true, detail: `${version} (${pathThere})${where}` };
}

/** The models the far pi has a key for: none means every child there fails at its first turn. */
function modelsCheck({ report, where }: FarFacts): DoctorCheck {
  const name = "far models";
  const [count, first] = (report.get("models") ?? "0").split(" ");
  const agentDir = report.get("agentdir") ?? "the far agent dir";
  if (!Number(count)) {
    return {
      name,
      ok: false,
      detail: `the far pi has a key for no model (it reads ${agentDir}${where})`,
      hint: AGENT_DIR_HINT,
    };
  }
  const models = `${count} model${count === "1" ? "" : "s"}`;
  return { name, ok: true, detail: `the far pi has a key for ${models} (first: ${first}), from ${agentDir}${where}` };
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
  const remoteCommand = definition.remote_command ?? [...DEFAULT_REMOTE_COMMAND];
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
  return farChecks(report, remoteCommand, definition.pi);
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
