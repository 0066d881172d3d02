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

export function resolveVerify(input: VerifyInput): VerifyResult {
  const given = parseVerify(input.param === "" ? undefined : input.param);
  if (!given.ok) return { ok: false, error: given.problem };
  // The settings' default is for children that work here: a runner's child is not checked by it.
  const spec = chooseVerify(given.verify, input.role?.verify, input.runner ? undefined : input.settings);
  if (!spec) return { ok: true, verify: undefined };
  if (input.runner) {
    // Checks run where the child worked; on a runner's far side that is not built yet, and
    // running them here instead would run the child's work outside the runner's boundary.
    return {
      ok: false,
      error: `verify cannot run on runner "${input.runner.name}" (${input.runner.kind}) yet: checks run only where a local child works; spawn it without verify or on the local runner`,
    };
  }
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
