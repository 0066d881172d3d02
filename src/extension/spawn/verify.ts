/**
 * A spawn's checks: `verify` on spawn_agent, else the agent definition's `verify:`, else the
 * settings default (`subagents.verify`, which a project's `.pi/settings.json` may set: a
 * repository knows its own checks). A malformed one is the spawn's error, naming the field.
 * The reviewer a `review` names is found now, among the definitions and roles, and kept in the
 * record with its model and text. Pure: the caller reads the settings and finds the roles.
 */
import type { ResolvedRunner } from "../../contracts/runners.js";
import {
  type AgentVerify,
  chooseVerify,
  parseVerify,
  VERIFY_DEFAULTS,
  type VerifySpec,
} from "../../contracts/verify.js";
import type { Role, RoleLookup } from "../roles/roles.js";

export interface VerifyInput {
  /** spawn_agent's `verify`, as the model sent it. */
  param: unknown;
  role: Role | undefined;
  /** The settings default. */
  settings: VerifySpec | undefined;
  /** The runner the child runs on (undefined: here). */
  runner: ResolvedRunner | undefined;
  findRole(name: string): RoleLookup;
}

export type VerifyResult = { ok: true; verify: AgentVerify | undefined } | { ok: false; error: string };

/**
 * Checks run where the child worked: a sandbox's commands inside the same sandbox, a far
 * side's (ssh, Slurm, command) on the far side through a check run. A reviewer runs here, with
 * read-only tools that can read any file here, and what it says goes back to the child in a
 * repair: for a child whose work is walled off (a sandbox) or done elsewhere (a far side), that
 * would carry this machine's files to it. So `review` is refused on every runner but local.
 */
function runnerRefusal(runner: ResolvedRunner, spec: VerifySpec): string | undefined {
  if (spec.review === undefined) return undefined;
  return `verify.review cannot run on runner "${runner.name}" (${runner.kind}): the reviewer would run on this machine, outside the runner's boundary, and its words go back to the child; use run (checks run where the child works), or the local runner`;
}

/** A spec without its review; nothing left when it had no commands. */
function withoutReview({ review: _review, ...rest }: VerifySpec): VerifySpec | undefined {
  return rest.run?.length ? rest : undefined;
}

/** resolveVerify for a spawn: its error is the spawn's. */
export function spawnVerify(input: VerifyInput): AgentVerify | undefined {
  const resolved = resolveVerify(input);
  if (!resolved.ok) throw new Error(resolved.error);
  return resolved.verify;
}

export function resolveVerify(input: VerifyInput): VerifyResult {
  const given = parseVerify(input.param === "" ? undefined : input.param);
  if (!given.ok) return { ok: false, error: given.problem };
  // The settings' default is for children that work here: a remote runner's child is not checked by it.
  const remote = input.runner !== undefined && input.runner.kind !== "sandbox";
  const chosen = chooseVerify(given.verify, input.role?.verify, remote ? undefined : input.settings);
  // A default the model never asked for does not refuse a spawn: on a runner that cannot have a
  // reviewer (a sandbox), the settings' default keeps its commands and leaves its review out.
  const fromSettings = chosen !== undefined && chosen === input.settings && !given.verify && !input.role?.verify;
  const spec = fromSettings && input.runner && chosen.review !== undefined ? withoutReview(chosen) : chosen;
  if (!spec) return { ok: true, verify: undefined };
  const refusal = input.runner && runnerRefusal(input.runner, spec);
  if (refusal) return { ok: false, error: refusal };
  let review: AgentVerify["review"];
  if (spec.review !== undefined) {
    const found = input.findRole(spec.review);
    if (!found.ok) return { ok: false, error: `verify.review: ${found.error}` };
    const { role } = found;
    review = { name: role.name, ...(role.model && { model: role.model }), ...(role.prompt && { prompt: role.prompt }) };
  }
  return {
    ok: true,
    verify: {
      ...(spec.run?.length && { run: spec.run }),
      ...(review && { review }),
      max_repairs: spec.max_repairs ?? VERIFY_DEFAULTS.maxRepairs,
      timeout: spec.timeout ?? VERIFY_DEFAULTS.timeoutSeconds,
    },
  };
}
