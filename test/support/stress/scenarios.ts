/** The 11 stress scenarios, in their order. */

import type { StressScenario } from "./scenario.js";
import {
  basicSpawnWait,
  failureIsolation,
  interruptResume,
  nestedChain,
  parallelSpawns,
  queueFollowup,
} from "./scenarios-a.js";
import {
  crossProvider,
  extensionInheritance,
  limitBehavior,
  modelReasoningOverrides,
  restartResume,
} from "./scenarios-b.js";

export const STRESS_SCENARIOS: readonly StressScenario[] = [
  basicSpawnWait,
  parallelSpawns,
  nestedChain,
  queueFollowup,
  interruptResume,
  failureIsolation,
  crossProvider,
  modelReasoningOverrides,
  limitBehavior,
  restartResume,
  extensionInheritance,
];

/** `3`, `03` or `interrupt-resume`-style names → scenarios; throws with the unknown ones named. */
export function selectScenarios(only: string | undefined): StressScenario[] {
  if (!only) return [...STRESS_SCENARIOS];
  const wanted = only
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown: string[] = [];
  const picked = wanted.flatMap((w) => {
    const id = /^\d{1,2}$/.test(w) ? w.padStart(2, "0") : undefined;
    const found = STRESS_SCENARIOS.find((s) => s.id === id || s.name === w || `${s.id}-${s.name}` === w);
    if (!found) unknown.push(w);
    return found ? [found] : [];
  });
  if (unknown.length > 0) throw new Error(`unknown scenario ${unknown.join(", ")} (see --list)`);
  if (picked.length === 0) throw new Error("--only names no scenario");
  return STRESS_SCENARIOS.filter((s) => picked.includes(s));
}
