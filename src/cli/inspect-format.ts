/**
 * Pure: what `subagent-wrapper inspect` says about a run snapshot — its state, a summary,
 * the transcript (from events.jsonl, so it works while the run is live), and how its files
 * hold up against the published schemas.
 */
import type { EventRecordBody } from "../contracts/events.js";
import type { ResultV1 } from "../contracts/result.js";
import { addUsage, emptyUsage, formatCost, normalizeUsage, type Usage } from "../contracts/usage.js";
import { checkPassed, describeCheck, describeVerification } from "../contracts/verify.js";
import { isRecord } from "../lib/values.js";
import { formatTranscriptEntry } from "../wrapper/transcript.js";
import type { ContractChecks } from "./contract-check.js";
import { formatIssue } from "./contract-check.js";
import type { RunSnapshot } from "./run-files.js";
import {
  FAIL_MARK,
  firstLinePreview,
  formatCount,
  formatDuration,
  indentContinuation,
  lastLines,
  OK_MARK,
  plural,
  sectionHeader,
} from "./text.js";

export type RunState =
  | { kind: "finished"; status: string; exitCode: number | undefined }
  /** run_end is recorded but result.json is not there (being written, or unwritable). */
  | { kind: "ended"; status: string }
  | { kind: "running"; pid: number | undefined; elapsedMs: number | undefined }
  /** No result and the child is gone: the wrapper stopped without finishing. */
  | { kind: "stopped"; pid: number }
  | { kind: "not-started" };

const records = (snapshot: RunSnapshot): Record<string, unknown>[] =>
  snapshot.events.flatMap((line) => ("record" in line ? [line.record] : []));

export function runState(snapshot: RunSnapshot): RunState {
  const result = snapshot.result;
  if (isRecord(result) && typeof result.status === "string") {
    return {
      kind: "finished",
      status: result.status,
      exitCode: typeof result.exitCode === "number" ? result.exitCode : undefined,
    };
  }
  const all = records(snapshot);
  const end = all.find((record) => record.type === "run_end");
  if (end) return { kind: "ended", status: String(end.status) };
  const start = all.find((record) => record.type === "run_start");
  if (!start) return { kind: "not-started" };
  if (snapshot.child && !snapshot.child.alive) return { kind: "stopped", pid: snapshot.child.pid };
  const elapsedMs = typeof start.ts === "number" ? snapshot.takenAt - start.ts : undefined;
  return { kind: "running", pid: snapshot.child?.pid, elapsedMs };
}

export function describeState(state: RunState): string {
  switch (state.kind) {
    case "finished":
      return `${state.status}${state.exitCode === undefined ? "" : ` (exit ${state.exitCode})`}`;
    case "ended":
      return `ended ${state.status}, but result.json is not there (yet)`;
    case "running": {
      const details = [
        state.pid ? `pi pid ${state.pid}` : "",
        state.elapsedMs === undefined ? "" : `${formatDuration(state.elapsedMs)} so far`,
      ];
      const said = details.filter((detail) => detail !== "");
      return said.length > 0 ? `running (${said.join(", ")})` : "running";
    }
    case "stopped":
      return `stopped without result.json (its pi process, pid ${state.pid}, is gone)`;
    case "not-started":
      return "not started (no events and no result.json yet)";
  }
}

/** One file (or events line) that breaks its contract, with every issue found. */
export interface ContractFinding {
  label: string;
  issues: string[];
}

export interface ContractReport {
  /** Files that were checked and hold up (e.g. "events.jsonl (12 records)"). */
  passed: string[];
  findings: ContractFinding[];
}

/** Checks what the snapshot holds against the schemas: meta.json, result.json, each record. */
export function checkRunContracts(snapshot: RunSnapshot, checks: ContractChecks): ContractReport {
  const report: ContractReport = { passed: [], findings: [] };
  const verdict = (label: string, issues: string[]) => {
    if (issues.length === 0) report.passed.push(label);
    else report.findings.push({ label, issues });
  };
  const { files } = snapshot;
  if (files.metaPath) {
    if (files.metaRaw === undefined) verdict("meta.json", [files.metaError ?? "unreadable"]);
    else verdict("meta.json", checks.meta(files.metaRaw).map(formatIssue));
  }
  if (snapshot.resultError) verdict("result.json", [snapshot.resultError]);
  else if (snapshot.result !== undefined) verdict("result.json", checks.result(snapshot.result).map(formatIssue));
  if (snapshot.eventsError) verdict("events.jsonl", [snapshot.eventsError]);
  let good = 0;
  let expectedSeq = 1;
  for (const line of snapshot.events) {
    const label = `events.jsonl line ${line.line}`;
    if (!("record" in line)) {
      report.findings.push({ label, issues: [line.error] });
      continue;
    }
    const issues = checks.event(line.record).map(formatIssue);
    const seq = line.record.seq;
    if (typeof seq === "number" && seq !== expectedSeq)
      issues.push(`/seq: ${seq} out of order (expected ${expectedSeq})`);
    if (typeof seq === "number") expectedSeq = seq + 1;
    if (issues.length > 0) report.findings.push({ label, issues });
    else good++;
  }
  if (snapshot.eventsExists && good === snapshot.events.length)
    report.passed.push(`events.jsonl (${plural(good, "record")})`);
  return report;
}

function usageLine(usage: Partial<Usage> | undefined, turns: number, toolCalls: number): string {
  const parts = [plural(turns, "turn"), plural(toolCalls, "tool call")];
  if (usage && typeof usage.totalTokens === "number") {
    parts.push(
      `${formatCount(usage.totalTokens)} tokens (in ${formatCount(usage.input ?? 0)}, out ${formatCount(usage.output ?? 0)}, cache read ${formatCount(usage.cacheRead ?? 0)}, write ${formatCount(usage.cacheWrite ?? 0)})`,
    );
  }
  if (usage?.cost && typeof usage.cost.total === "number") parts.push(formatCost(usage.cost.total));
  return parts.join(" · ");
}

/** Usage summed over the assistant records so far (what result.json will say, for a live run). */
function liveUsage(all: Record<string, unknown>[]): { usage: Usage; turns: number; toolCalls: number } {
  const usage = emptyUsage();
  let turns = 0;
  let toolCalls = 0;
  for (const record of all) {
    if (record.type === "tool_call") toolCalls++;
    if (record.type !== "assistant_text") continue;
    turns++;
    addUsage(usage, normalizeUsage(record.usage));
  }
  return { usage, turns, toolCalls };
}

const LABEL_WIDTH = 10;
const field = (label: string, value: string): string =>
  `${label.padEnd(LABEL_WIDTH)}${indentContinuation(value, " ".repeat(LABEL_WIDTH))}`;

export interface InspectOptions {
  /** Show the transcript (default); without it the final answer is shown instead. */
  transcript: boolean;
  /** At most this many contract issues are listed (the rest are counted). */
  maxIssues?: number;
}

/** The transcript of a run from its records, as the wrapper's transcript.md words it. */
export function transcriptText(snapshot: RunSnapshot): string {
  return records(snapshot).map(transcriptEntry).join("").replace(/\n+$/, "");
}

/** A record's transcript lines; one that breaks its contract gets a note instead of a crash. */
export function transcriptEntry(record: Record<string, unknown>): string {
  try {
    return formatTranscriptEntry(record as unknown as EventRecordBody) ?? "";
  } catch {
    return `? record ${JSON.stringify(record.seq ?? null)} of type ${JSON.stringify(record.type ?? null)} cannot be shown\n`;
  }
}

export function formatInspection(
  snapshot: RunSnapshot,
  report: ContractReport | undefined,
  options: InspectOptions,
): string {
  const run = inspected(snapshot);
  const out = [
    ...summaryFields(run),
    ...(options.transcript ? transcriptSection(snapshot) : finalAnswerSection(run.result)),
    ...logTailSections(run),
    ...(report ? contractsSection(report, options.maxIssues ?? 20) : []),
  ];
  return `${out.join("\n")}\n`;
}

/** What the sections of `inspect` read: the snapshot, its result (when it is an object), its state and records. */
interface Inspected {
  snapshot: RunSnapshot;
  meta: RunSnapshot["files"]["meta"];
  result: Partial<ResultV1> | undefined;
  state: ReturnType<typeof runState>;
  records: Array<Record<string, unknown>>;
}

function inspected(snapshot: RunSnapshot): Inspected {
  return {
    snapshot,
    meta: snapshot.files.meta,
    result: isRecord(snapshot.result) ? (snapshot.result as Partial<ResultV1>) : undefined,
    state: runState(snapshot),
    records: records(snapshot),
  };
}

/** The labelled lines at the top: which run, whose, on what model, how it stands, its files. */
function summaryFields(run: Inspected): string[] {
  const { snapshot, meta, result, state } = run;
  const { files } = snapshot;
  const out = [field("run", `${result?.runId ?? meta?.runId ?? "?"}  (${files.dir})`)];
  const agent = [result?.agentPath ?? meta?.agentPath, result?.agent ?? meta?.agent].filter(Boolean).join(" · ");
  if (agent) out.push(field("agent", agent));
  const model = modelField(run);
  if (model) out.push(model);
  const stop = result?.rawStopReason ? ` · stop reason ${result.rawStopReason}` : "";
  out.push(field("status", `${describeState(state)}${stop}${result?.forcedExit ? " · forced exit" : ""}`));
  if (result?.startedAt)
    out.push(
      field("time", `${result.startedAt} → ${result.endedAt ?? "?"} (${formatDuration(result.durationMs ?? NaN)})`),
    );
  const usage = usageField(run);
  if (usage) out.push(usage);
  out.push(...outcomeFields(result));
  if (files.metaError) out.push(field("meta", `${FAIL_MARK} ${files.metaError}`));
  if (meta) out.push(field("task", firstLinePreview(meta.task)));
  out.push(field("files", filesPresent(snapshot)));
  return out;
}

/** The model the run used (or will use), the one asked for when it differs, and the thinking level. */
function modelField({ meta, result, records: all }: Inspected): string | undefined {
  const lastModel = [...all]
    .reverse()
    .find((record) => record.type === "assistant_text" && typeof record.model === "string")?.model;
  const model = (result?.resolvedModel ?? lastModel ?? meta?.resolvedModel ?? meta?.requestedModel) as
    | string
    | undefined;
  const requested = result?.requestedModel ?? meta?.requestedModel;
  if (!model && !meta?.thinking) return undefined;
  const parts = [model ?? "pi's default model"];
  if (requested && requested !== model) parts.push(`(requested ${requested})`);
  if (meta?.thinking) parts.push(`· thinking ${meta.thinking}`);
  return field("model", parts.join(" "));
}

/** Usage from result.json, or from the records so far while there is none. */
function usageField({ result, records: all }: Inspected): string | undefined {
  if (result && typeof result.turns === "number")
    return field("usage", usageLine(result.usage, result.turns, result.toolCalls ?? 0));
  if (all.length === 0) return undefined;
  const live = liveUsage(all);
  return field("usage", `${usageLine(live.usage, live.turns, live.toolCalls)} so far`);
}

/** How the run ended, beyond its status: the abort, the error, how pi exited. */
function outcomeFields(result: Partial<ResultV1> | undefined): string[] {
  if (!result) return [];
  const out: string[] = [];
  if (result.abortReason !== undefined)
    out.push(field("abort", `${result.abortReason} (${result.abortSource ?? "?"})`));
  if (result.errorMessage) out.push(field("error", result.errorMessage));
  if (result.childExitCode !== undefined || result.childSignal) {
    const child = result.childSignal ? `signal ${result.childSignal}` : `exit ${result.childExitCode ?? "none"}`;
    out.push(field("pi", child));
  }
  if (result.verification) {
    out.push(field("verification", describeVerification(result.verification)));
    for (const check of result.verification.checks) out.push(field("check", describeCheck(check)));
  }
  return out;
}

function filesPresent(snapshot: RunSnapshot): string {
  const eventsNote = snapshot.eventsExists
    ? `events.jsonl (${plural(snapshot.events.length, "record")})`
    : "no events.jsonl";
  const present = [
    snapshot.files.metaPath ? "meta.json" : "",
    eventsNote,
    snapshot.result !== undefined ? "result.json" : "no result.json",
    ...snapshot.artifacts,
  ];
  return present.filter(Boolean).join(", ");
}

function transcriptSection(snapshot: RunSnapshot): string[] {
  const transcript = transcriptText(snapshot);
  const out = ["", sectionHeader("transcript (events.jsonl)"), transcript === "" ? "(no records yet)" : transcript];
  if (snapshot.partialLine) out.push("(a record is being written)");
  return out;
}

function finalAnswerSection(result: Partial<ResultV1> | undefined): string[] {
  const failed = (result?.verification?.checks ?? []).filter((check) => !checkPassed(check) && check.output_tail);
  const checks = failed.flatMap((check) => ["", sectionHeader(`check ${check.name}`), check.output_tail]);
  return result?.finalText ? [...checks, "", sectionHeader("final answer"), result.finalText] : checks;
}

/** The tails of stderr.log and wrapper.log, for a run that is over and did not complete. */
function logTailSections({ snapshot, result, state }: Inspected): string[] {
  const troubled = state.kind !== "finished" || result?.status !== "completed";
  if (!troubled || state.kind === "running") return [];
  const out: string[] = [];
  for (const [title, text] of [
    ["stderr.log", snapshot.stderrTail],
    ["wrapper.log", snapshot.wrapperLogTail],
  ] as const) {
    const tail = text === undefined ? [] : lastLines(text, 10);
    if (tail.length > 0) out.push("", sectionHeader(`${title} (last ${tail.length} lines)`), ...tail);
  }
  return out;
}

/** Each contract that passed, then at most `max` issues (the rest counted). */
function contractsSection(report: ContractReport, max: number): string[] {
  const out = ["", sectionHeader("contracts (schemas/*.schema.json)")];
  for (const label of report.passed) out.push(`${OK_MARK} ${label}`);
  const issues = report.findings.flatMap((finding) => finding.issues.map((issue) => `${finding.label}: ${issue}`));
  out.push(...issues.slice(0, max).map((issue) => `${FAIL_MARK} ${issue}`));
  if (issues.length > max) out.push(`… and ${issues.length - max} more`);
  return out;
}

/** The machine-readable form of `inspect --json`. */
export function inspectionJson(snapshot: RunSnapshot, report: ContractReport | undefined): Record<string, unknown> {
  const { files } = snapshot;
  return {
    state: runState(snapshot),
    files: {
      dir: files.dir,
      meta: files.metaPath ?? null,
      result: files.resultPath,
      events: files.eventsPath,
      stdout: files.stdoutPath ?? null,
      stderr: files.stderrPath ?? null,
      transcript: files.transcriptPath ?? null,
    },
    metaError: files.metaError ?? null,
    meta: files.metaRaw ?? null,
    result: snapshot.result ?? null,
    records: snapshot.events.length,
    contracts: report ? { ok: report.findings.length === 0, passed: report.passed, findings: report.findings } : null,
  };
}
