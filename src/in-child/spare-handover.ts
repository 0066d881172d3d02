/**
 * A spare pi taken over by a turn (contracts/spare.ts): pi loads its extensions again when it
 * switches to the turn's session, and the task extension, loaded first, calls this before
 * anything else reads the environment, so every extension after it sees the turn's, exactly
 * as a pi started for the turn would. Before the hand-over (the spare's own start) there is
 * no file yet, and nothing changes.
 */
import fs from "node:fs";
import { ENV } from "../contracts/env.js";
import type { SpareHandoverV1 } from "../contracts/spare.js";

export function applySpareHandover(env: NodeJS.ProcessEnv = process.env): void {
  const file = env[ENV.spareHandover];
  if (!file) return;
  let handover: SpareHandoverV1;
  try {
    handover = JSON.parse(fs.readFileSync(file, "utf8")) as SpareHandoverV1;
  } catch {
    return; // not handed over yet
  }
  for (const name of handover.unset) delete env[name];
  for (const [name, value] of Object.entries(handover.env)) env[name] = value;
  // Read once: the turn's later extension loads (none expected) keep what it set.
  fs.rmSync(file, { force: true });
}
