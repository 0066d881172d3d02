/**
 * The tree's spend gate (settings `confirm_every_usd`): `spend-gate.json` at the top of the tree
 * directory, written whole by the root only, read by every process of the tree — each agent's
 * extension before it starts a turn, each turn's wrapper while its turn runs (meta.json `env`
 * PI_SUBAGENTS_SPEND_GATE names the file).
 *
 * - `ceiling_usd` is the spend the tree may reach before the person is asked again: a multiple
 *   of `every_usd`, raised to the next one each time the person says yes.
 * - `person`: whether the root has a person to ask (a UI, and `dialogs` is not "deny"). Without
 *   one the ceiling is a budget: a turn is wrapped up once the tree crosses it, and no new turn
 *   starts past it — nobody said the tree may spend more.
 * - `declined`: the person said no (or did not answer in time): every running turn of the tree
 *   is wrapped up and no new turn starts in it.
 */
import fs from "node:fs";
import { isRecord } from "../lib/values.js";
import { formatCost, roundCost } from "./usage.js";

export interface SpendGateV1 {
  version: 1;
  every_usd: number;
  ceiling_usd: number;
  person: boolean;
  declined?: {
    /** What the tree had spent when the person was asked. */
    spent_usd: number;
    /** `no` (the person's answer) or `timeout` (no answer within `dialog_timeout`). */
    by: "no" | "timeout";
    /** ISO time of the answer. */
    at: string;
  };
}

/** The settings key, as the lines the person reads name it. */
export const CONFIRM_EVERY_KEY = "confirm_every_usd";

const positive = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value) && value > 0;

/** A gate as read back, or undefined when it is not one (a person can read what is wrong in the file). */
export function checkSpendGate(value: unknown): SpendGateV1 | undefined {
  if (!isRecord(value) || value.version !== 1) return undefined;
  const { every_usd, ceiling_usd, person, declined } = value;
  if (!positive(every_usd) || !positive(ceiling_usd) || typeof person !== "boolean") return undefined;
  const gate: SpendGateV1 = { version: 1, every_usd, ceiling_usd, person };
  if (isRecord(declined)) {
    const spent = declined.spent_usd;
    const by = declined.by === "timeout" ? "timeout" : "no";
    gate.declined = {
      spent_usd: typeof spent === "number" && spent >= 0 ? spent : ceiling_usd,
      by,
      at: String(declined.at ?? ""),
    };
  }
  return gate;
}

/** The gate in `file`, or undefined when there is none (or it cannot be read as one). */
export function readSpendGateSync(file: string): SpendGateV1 | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
  try {
    return checkSpendGate(JSON.parse(text));
  } catch {
    return undefined; // written whole by a rename: anything else is not a gate
  }
}

/** The first multiple of `every` above `spent`: where a yes raises the ceiling to. */
export function nextCeiling(every: number, spent: number): number {
  return roundCost((Math.floor(roundCost(spent / every)) + 1) * every);
}

/** Whether the tree has reached the gate's ceiling. */
export function ceilingReached(gate: SpendGateV1, spent: number): boolean {
  return roundCost(spent) >= gate.ceiling_usd;
}

/** The one line a spawn or follow-up is refused with once the person said no. */
export function declinedRefusal(gate: SpendGateV1): string {
  const declined = gate.declined;
  const spent = formatCost(declined?.spent_usd ?? gate.ceiling_usd);
  const why =
    declined?.by === "timeout" ? "nobody answered whether to spend more" : "the person chose not to spend more";
  return `tree spending stopped: this tree's agents have spent ${spent} and ${why} (${CONFIRM_EVERY_KEY}: ${formatCost(gate.every_usd)}); no new turns start`;
}

/** The one line a spawn or follow-up is refused with when nobody can be asked and the ceiling is reached. */
export function unconfirmedRefusal(gate: SpendGateV1, spent: number): string {
  return `tree spending stopped: this tree's agents have spent ${formatCost(spent)}, the ${formatCost(gate.ceiling_usd)} that ${CONFIRM_EVERY_KEY} lets a tree spend before a person says yes, and this tree has no person to ask; no new turns start`;
}
