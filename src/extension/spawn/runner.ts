/**
 * Which runner a spawn's child runs on: spawn_agent's `runner`, else
 * the role's `runner:`, else the settings' default, else `local`. Any other runner is named in
 * the settings' `runners` (pi's global settings only); its definition is resolved here (the
 * sandbox's default hide list and capacity filled in) and kept in the agent's record, so every
 * turn of the agent runs on the runner it was spawned on.
 */

import { ENV } from "../../contracts/env.js";
import {
  DEFAULT_SANDBOX_HIDE,
  LOCAL_RUNNER,
  type ResolvedRunner,
  RUNNER_NAME_PATTERN,
  runnerCapacity,
  unknownRunnerMessage,
} from "../../contracts/runners.js";
import type { SubagentSettings } from "../settings.js";

export type RunnerChoice = { ok: true; runner: ResolvedRunner | undefined } | { ok: false; error: string };

/** The runner of a spawn; undefined for `local`. */
export function chooseRunner(
  requested: unknown,
  roleRunner: string | undefined,
  settings: SubagentSettings,
): RunnerChoice {
  let name: string;
  if (requested === undefined || requested === null || (typeof requested === "string" && requested.trim() === "")) {
    name = roleRunner ?? settings.runner ?? LOCAL_RUNNER;
  } else if (typeof requested === "string" && RUNNER_NAME_PATTERN.test(requested.trim())) {
    name = requested.trim();
  } else {
    return { ok: false, error: `runner must be a runner name, not ${JSON.stringify(requested)}` };
  }
  if (name === LOCAL_RUNNER) return { ok: true, runner: undefined };
  const runners = settings.runners ?? {};
  const definition = runners[name];
  if (!definition) return { ok: false, error: unknownRunnerMessage(name, runners) };
  if (definition.kind === "sandbox") {
    return {
      ok: true,
      runner: {
        name,
        ...definition,
        hide: definition.hide ?? [...DEFAULT_SANDBOX_HIDE],
        capacity: runnerCapacity(definition),
      },
    };
  }
  return { ok: true, runner: { name, ...definition } };
}

/** The message when a non-local runner is asked for where no git repository holds the cwd. */
export const runnerNeedsGit = (name: string): string => `runner ${name} needs a git repository`;

/**
 * Why this process may not spawn: it is a child on a runner other than local (its parent set
 * PI_SUBAGENTS_RUNNER). Such a child runs away from the tree directory — a sandbox sees it
 * read-only or not at all, an ssh host, a Slurm node or a container not at all — so it could record no child,
 * claim no slot and hear no child's end. Undefined where spawning works.
 */
export function delegationRefusal(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const runner = env[ENV.runner]?.trim();
  if (!runner) return undefined;
  return `spawn_agent does not work on runner ${runner}: this agent runs away from the agent tree's folder, so it cannot have children of its own (only agents on the local runner delegate). Do the work yourself, or say in your report what should be delegated.`;
}
