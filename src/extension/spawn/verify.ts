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
 * Checks run where the child worked: a sandbox's commands inside the same sandbox. What has
 * no such place yet — any check on a far side (ssh, Slurm, command), a sandbox's reviewer — is
 * refused rather than run here, outside the runner's boundary.
 */
function runnerRefusal(runner: ResolvedRunner, spec: VerifySpec): string | undefined {
  const where = `runner "${runner.name}" (${runner.kind})`;
  if (runner.kind !== "sandbox") {
    return `verify cannot run on ${where} yet: its checks would have to run on its far side; spawn it without verify, or on the local or a sandbox runner`;
  }
  if (spec.review !== undefined) {
    return `verify.review cannot run on ${where} yet: a reviewer would have to run inside its sandbox; use run, or the local runner`;
  }
  return undefined;
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
  const spec = chooseVerify(given.verify, input.role?.verify, remote ? undefined : input.settings);
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
