/**
 * Runners: where a child's pi runs. `local` is the default and needs
 * no definition; the others are named in settings (`subagents.runners`: name → definition).
 * For every runner but `local`, the local wrapper runs `<prefix> <remote_command…> serve`.
 */
import { isRecord } from "../lib/values.js";
import { kindOf } from "./fields.js";

export const LOCAL_RUNNER = "local";
export const RUNNER_KINDS = ["sandbox", "ssh", "slurm", "command"] as const;
export type RunnerKind = (typeof RUNNER_KINDS)[number];

/** What runs on the far side when a definition names none. */
export const DEFAULT_REMOTE_COMMAND = ["subagent-wrapper"] as const;
/** Turns active at once on a sandbox runner when its definition sets no capacity. */
export const DEFAULT_SANDBOX_CAPACITY = 3;
/**
 * Paths a sandbox hides when its definition names none (the parent's repository is always
 * hidden too): keys and logins of other tools, and pi's session history of every project.
 * `~/.config` covers `~/.config/gh` and the like; what pi itself reads there for the run's
 * provider is shown again (wrapper/remote/sandbox-env.ts).
 */
export const DEFAULT_SANDBOX_HIDE = [
  "~/.ssh",
  "~/.gnupg",
  "~/.aws",
  "~/.config",
  "~/.netrc",
  "~/.kube",
  "~/.docker",
  "~/.npmrc",
  "~/.git-credentials",
  "~/.pi/agent/sessions",
] as const;

export interface SandboxRunner {
  kind: "sandbox";
  hide?: string[];
  /**
   * Names of environment variables the sandboxed child gets besides the allow-list (a proxy,
   * a CA bundle, a tool's token); every other variable of this process stays outside.
   */
  env?: string[];
  capacity?: number;
}
export interface SshRunner {
  kind: "ssh";
  /** `host` or `user@host`, as ssh takes it (the user's ssh config applies). */
  host: string;
  port?: number;
  identity?: string;
  ssh_options?: string[];
  remote_command?: string[];
  capacity: number;
}
export interface SlurmRunner {
  kind: "slurm";
  srun_options?: string[];
  remote_command?: string[];
  capacity: number;
}
export interface CommandRunner {
  kind: "command";
  command: string[];
  remote_command?: string[];
  capacity: number;
}
export type RunnerDefinition = SandboxRunner | SshRunner | SlurmRunner | CommandRunner;

/** A runner name: letters, digits, `_`, `-`, `.`; `local` is taken. */
export const RUNNER_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

const isStringList = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((item) => typeof item === "string" && item.length > 0);
/** An environment variable's name as a shell takes it. */
export const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
const isEnvNameList = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((item) => typeof item === "string" && ENV_NAME_PATTERN.test(item));
const isPositiveWhole = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) > 0;

/** The fields each kind takes: name → [required, check, expected]. */
type FieldRule = [required: boolean, ok: (value: unknown) => boolean, expected: string];
const LIST: FieldRule = [false, isStringList, "a list of non-empty strings"];
const CAPACITY: FieldRule = [true, isPositiveWhole, "a positive whole number"];
const KIND_FIELDS: Record<RunnerKind, Record<string, FieldRule>> = {
  sandbox: {
    hide: LIST,
    env: [false, isEnvNameList, "a list of environment variable names"],
    capacity: [false, isPositiveWhole, "a positive whole number"],
  },
  ssh: {
    host: [true, (value) => typeof value === "string" && /^[^\s-][^\s]*$/.test(value), "a host name (user@host)"],
    port: [false, (value) => isPositiveWhole(value) && value <= 65_535, "a port number"],
    identity: [false, (value) => typeof value === "string" && value.length > 0, "a path"],
    ssh_options: LIST,
    remote_command: LIST,
    capacity: CAPACITY,
  },
  slurm: { srun_options: LIST, remote_command: LIST, capacity: CAPACITY },
  command: {
    command: [true, (value) => isStringList(value) && value.length > 0, "a non-empty list of strings"],
    remote_command: LIST,
    capacity: CAPACITY,
  },
};

/** The problems of one definition, each naming `<where>.<field>`; none means it is valid. */
export function runnerProblems(value: unknown, where: string): string[] {
  if (!isRecord(value)) return [`${where} must be an object, not ${kindOf(value)}`];
  const kind = value.kind;
  if (!(RUNNER_KINDS as readonly unknown[]).includes(kind)) {
    return [`${where}.kind must be one of ${RUNNER_KINDS.join(", ")}, not ${JSON.stringify(kind) ?? "missing"}`];
  }
  const fields = KIND_FIELDS[kind as RunnerKind];
  const problems: string[] = [];
  for (const [field, [required, ok, expected]] of Object.entries(fields)) {
    const fieldValue = value[field];
    if (fieldValue === undefined) {
      if (required) problems.push(`${where}.${field} is missing (${expected})`);
    } else if (!ok(fieldValue)) problems.push(`${where}.${field} must be ${expected}`);
  }
  for (const field of Object.keys(value)) {
    if (field !== "kind" && !(field in fields)) problems.push(`${where}: unknown field "${field}" for kind ${kind}`);
  }
  return problems;
}

export interface RunnersParse {
  /** The valid definitions; an invalid one is left out (a turn that names it meets `unknown runner`). */
  runners: Record<string, RunnerDefinition>;
  problems: string[];
}

export function parseRunners(value: unknown, where = "runners"): RunnersParse {
  if (value === undefined || value === null) return { runners: {}, problems: [] };
  if (!isRecord(value)) return { runners: {}, problems: [`${where} must be an object, not ${kindOf(value)}`] };
  const runners: Record<string, RunnerDefinition> = {};
  const problems: string[] = [];
  for (const [name, definition] of Object.entries(value)) {
    if (name === LOCAL_RUNNER) problems.push(`${where}.${name}: "local" is built in and cannot be redefined`);
    else if (!RUNNER_NAME_PATTERN.test(name)) problems.push(`${where}: bad runner name ${JSON.stringify(name)}`);
    else {
      const found = runnerProblems(definition, `${where}.${name}`);
      if (found.length === 0) runners[name] = definition as RunnerDefinition;
      else problems.push(...found);
    }
  }
  return { runners, problems };
}

/** Turns a runner may keep active at once. */
export function runnerCapacity(definition: RunnerDefinition): number {
  return definition.capacity ?? DEFAULT_SANDBOX_CAPACITY;
}

/** `unknown runner: gpu (known: local, sandbox)`. */
export function unknownRunnerMessage(name: string, runners: Record<string, RunnerDefinition>): string {
  return `unknown runner: ${name} (known: ${[LOCAL_RUNNER, ...Object.keys(runners)].join(", ")})`;
}

/** A runner as meta.json carries it (its `runner` field): its name and its definition, resolved. */
export type ResolvedRunner = RunnerDefinition & { name: string };

/** The problems of meta.json's `runner`; none means it is valid. */
export function resolvedRunnerProblems(value: unknown, where: string): string[] {
  if (!isRecord(value)) return [`${where} must be an object, not ${kindOf(value)}`];
  const { name, ...definition } = value;
  const problems =
    typeof name === "string" && RUNNER_NAME_PATTERN.test(name) ? [] : [`${where}.name must be a runner name`];
  return [...problems, ...runnerProblems(definition, where)];
}

/** What result.json and notices say of the runner: `{name, kind, host?}`. */
export interface RunnerSummary {
  name: string;
  kind: RunnerKind;
  host?: string;
}

export function runnerSummary(runner: ResolvedRunner): RunnerSummary {
  return { name: runner.name, kind: runner.kind, ...(runner.kind === "ssh" && { host: runner.host }) };
}
