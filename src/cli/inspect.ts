/**
 * `subagent-wrapper inspect <run-dir | meta.json | tree-dir>`: a readable summary and
 * transcript of one run, finished or live, and a check of its files against the published
 * schemas; or, for a tree directory, the whole tree (inspect-tree.ts).
 * Exit codes: 0 shown and every file holds to its schema; 1 shown, but a file breaks its
 * contract (not JSON, a schema violation, unreadable); 2 no run or tree there.
 */
import path from "node:path";
import { loadContractChecksIfInstalled, VALIDATOR_MISSING } from "./contract-check.js";
import { checkRunContracts, formatInspection, inspectionJson } from "./inspect-format.js";
import { inspectTree, isTreeDirectory } from "./inspect-tree.js";
import { locateRun, type RunFiles, RunNotFoundError, readRunSnapshot } from "./run-files.js";

export const INSPECT_EXIT = { ok: 0, contractBroken: 1, usage: 2 } as const;

export interface InspectFlags {
  json?: boolean;
  transcript?: boolean;
  check?: boolean;
}

export async function inspectCommand(target: string, flags: InspectFlags): Promise<number> {
  const absolute = path.resolve(target);
  if (isTreeDirectory(absolute)) return inspectTree(absolute, flags);
  let files: RunFiles;
  try {
    files = locateRun(target);
  } catch (err) {
    if (!(err instanceof RunNotFoundError)) throw err;
    process.stderr.write(`subagent-wrapper inspect: ${err.message}\n`);
    return INSPECT_EXIT.usage;
  }
  if (files.pickedRun) process.stderr.write(`subagent-wrapper inspect: the agent's latest run: ${files.pickedRun}\n`);
  const snapshot = readRunSnapshot(files);
  const checks = flags.check === false ? undefined : await loadContractChecksIfInstalled();
  if (flags.check !== false && !checks) process.stderr.write(`subagent-wrapper inspect: ${VALIDATOR_MISSING}\n`);
  const report = checks && checkRunContracts(snapshot, checks);
  const text = flags.json
    ? `${JSON.stringify(inspectionJson(snapshot, report), null, 2)}\n`
    : formatInspection(snapshot, report, { transcript: flags.transcript !== false });
  process.stdout.write(text);
  return report && report.findings.length > 0 ? INSPECT_EXIT.contractBroken : INSPECT_EXIT.ok;
}
