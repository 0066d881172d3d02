/**
 * `doctor`'s checks of what pi needs beyond starting: a default model it has a key for, and
 * this package's extension loading without a complaint. pi answers both itself, so doctor
 * never guesses at pi's rules (which provider reads which variable, what counts as a key):
 * `pi --list-models` lists exactly the models pi has a key for, from auth.json, models.json or
 * the environment; `pi --mode rpc` with no input loads the extensions, reports their problems
 * on stderr, and ends at once (pi 0.73.1 reports them only on a start like this one, not with
 * --list-models).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ENV } from "../contracts/env.js";
import { isRecord } from "../lib/values.js";
import type { DoctorCheck } from "./doctor-format.js";

/** This package's folder (dist/cli/ is two levels below it): what `pi -e <folder>` loads. */
export const PACKAGE_ROOT = path.resolve(fileURLToPath(new URL("../../", import.meta.url)));

/** What running one pi command gave. */
export interface PiCommandRun {
  stdout: string;
  stderr: string;
  code: number | null;
  timedOut: boolean;
  error?: string;
}

export type RunPi = (args: string[], env: NodeJS.ProcessEnv) => Promise<PiCommandRun>;

/**
 * Pure: the `provider/model` rows of `pi --list-models` (a header line, then one row a model);
 * undefined when `text` holds no such table.
 */
export function parseModelList(text: string): string[] | undefined {
  const rows = text.split("\n").map((line) => line.trim().split(/\s+/));
  const header = rows.findIndex((cells) => cells[0] === "provider" && cells[1] === "model");
  if (header < 0) return undefined;
  return rows
    .slice(header + 1)
    .filter((cells) => cells.length >= 2 && cells[0] !== "")
    .map(([provider, model]) => `${provider}/${model}`);
}

/** settings.json's default model in the agent dir, when both of its fields are set. */
export function defaultModelOf(agentDir: string): string | undefined {
  try {
    const settings: unknown = JSON.parse(fs.readFileSync(path.join(agentDir, "settings.json"), "utf8"));
    if (!isRecord(settings)) return undefined;
    const { defaultProvider, defaultModel } = settings;
    if (typeof defaultProvider === "string" && typeof defaultModel === "string") {
      return defaultModel.includes("/") ? defaultModel : `${defaultProvider}/${defaultModel}`;
    }
  } catch {
    // no settings.json, or not JSON: no default (pi says so itself when it starts)
  }
  return undefined;
}

const KEY_HINT = "run pi and /login, or set the provider's API key variable (pi's docs/providers.md)";

/** Pure: the "pi model" line from settings.json's default and the models pi has a key for. */
export function modelCheck(defaultModel: string | undefined, run: PiCommandRun, timeoutMs: number): DoctorCheck {
  const name = "pi model";
  if (run.timedOut || run.error || run.code !== 0) {
    return {
      name,
      ok: false,
      detail: `pi --list-models ${failure(run, timeoutMs)}`,
      hint: "see doctor's pi checks above",
    };
  }
  // pi 1.x lists them on stdout; pi 0.73.1 on stderr when stdout is not a terminal.
  const usable = parseModelList(run.stdout) ?? parseModelList(run.stderr) ?? [];
  if (defaultModel) {
    return usable.includes(defaultModel)
      ? { name, ok: true, detail: `${defaultModel} (settings.json), and pi has a key for it` }
      : {
          name,
          ok: false,
          detail: `${defaultModel} (settings.json) is not among the models pi has a key for`,
          hint: `${KEY_HINT}; or pick a model it has a key for with /model in pi`,
        };
  }
  if (usable.length === 0) return { name, ok: false, detail: "pi has a key for no model", hint: KEY_HINT };
  return {
    name,
    ok: true,
    detail: `no default in settings.json: pi starts with the first model it has a key for (${usable[0]})`,
    notes: [`pi has a key for ${usable.length} model${usable.length === 1 ? "" : "s"}; /model in pi sets the default`],
  };
}

/** A line of pi's stderr about an extension (an error or a warning while loading). */
function extensionComplaint(stderr: string): string | undefined {
  return stderr
    .split("\n")
    .map((line) => line.trim())
    .find((line) => /extension/i.test(line) && /error|warning|fail|issue|conflict/i.test(line));
}

/** pi's own start-up message when it has no model: the model check reports that, not this one. */
const NO_MODELS = /No models available/i;

/** Pure: the "pi extension" line from a start of pi with only this package's extension. */
export function extensionCheck(run: PiCommandRun, timeoutMs: number): DoctorCheck {
  const name = "pi extension";
  const complaint = extensionComplaint(run.stderr);
  const hint = `pi -ne -e ${PACKAGE_ROOT} shows it in full; "npm run build" in the package rebuilds what pi loads`;
  if (complaint) return { name, ok: false, detail: complaint, hint };
  if (run.timedOut || run.error || (run.code !== 0 && !NO_MODELS.test(run.stderr))) {
    return { name, ok: false, detail: `pi --mode rpc -ne -e <package> ${failure(run, timeoutMs)}`, hint };
  }
  return { name, ok: true, detail: `pi loads ${PACKAGE_ROOT} without a complaint` };
}

function failure(run: PiCommandRun, timeoutMs: number): string {
  if (run.timedOut) return `gave no answer within ${timeoutMs} ms (stopped)`;
  if (run.error) return `could not start: ${run.error}`;
  const line = run.stderr
    .split("\n")
    .map((text) => text.trim())
    .find((text) => text !== "");
  return `failed: exit ${run.code}${line ? ` — ${line}` : ""}`;
}

/**
 * Both checks at once (each is a pi start). The extension's start gets a run-directory base
 * of its own, removed afterwards, so the check leaves nothing behind.
 */
export async function piSetupChecks(
  runPi: RunPi,
  env: NodeJS.ProcessEnv,
  agentDir: string,
  timeoutMs: number,
): Promise<DoctorCheck[]> {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "subagent-wrapper-doctor-"));
  try {
    const [models, load] = await Promise.all([
      runPi(["--list-models"], env),
      runPi(["--mode", "rpc", "--no-session", "-ne", "-e", PACKAGE_ROOT], { ...env, [ENV.baseDir]: scratch }),
    ]);
    return [modelCheck(defaultModelOf(agentDir), models, timeoutMs), extensionCheck(load, timeoutMs)];
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}
