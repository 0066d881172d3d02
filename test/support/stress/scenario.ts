/**
 * What one stress scenario is, what a run of it leaves behind (ScenarioState), and the readers
 * its checks use. A check looks only at what both modes have — the root's `--mode json` stdout
 * (its tool calls, their results, its final answer) and the tree directory (agent.json,
 * result.json, events.jsonl) — so the same check judges the scripted and the live run.
 */
import fs from "node:fs";
import path from "node:path";
import type { ResultV1 } from "../../../src/contracts/result.js";
import type { AgentRecordV1 } from "../../../src/contracts/tree.js";
import { type ChatRequest, reply } from "../scripted-llm.js";
import type { TreeHarness } from "../tree-harness.js";
import type { AgentStep } from "../tree-llm.js";
import type { Json } from "../tree-program.js";
import { failMarker, okMarker } from "./markers.js";

export interface StressPrompt {
  /** The marker id this root process must answer with (`01`, or `10A` for a first phase). */
  marker: string;
  /** The natural-language instruction a live run sends to a real model. */
  text: string;
}

export interface StressScenario {
  /** Two digits: `01` … `11`. */
  id: string;
  /** Folder name suffix: `<id>-<name>`. */
  name: string;
  title: string;
  /** One prompt per root pi process, in order (scenario 10 restarts the root once). */
  prompts: StressPrompt[];
  /** Files the scenario needs in its folder; returns the extra root arguments they imply. */
  prepare?(dir: string): string[];
  scripted: {
    /** models.json for the loopback LLM (default: fake/fast and fake/deep). */
    models?(url: string): unknown;
    env?: Record<string, string>;
    /** Installs the scripted models; returns one hook per prompt, run before that root process starts. */
    script(h: TreeHarness): Array<() => void>;
  };
  /** Reasons the run is wrong, judged on what it left behind; `[]` when it is right. */
  check(state: ScenarioState): string[];
}

export interface ToolCallSeen {
  id: string;
  name: string;
  args: Json;
  /** The result text the model got (a tool error is its message). */
  text: string;
  isError: boolean;
}

export interface PhaseRun {
  prompt: StressPrompt;
  argv: string[];
  startedAt: string;
  durationMs: number;
  code: number | null;
  signal: string | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  toolCalls: ToolCallSeen[];
  finalText: string;
}

export interface ScenarioState {
  mode: "scripted" | "live";
  dir: string;
  sessionFile: string;
  phases: PhaseRun[];
  /** The tree directory (`<dir>/trees/<session id>`), when the root created one. */
  treeDir: string | undefined;
  /** agent.json of every agent, in spawn order. */
  records: AgentRecordV1[];
}

/** The root's stdout, line by line; lines that are not JSON are skipped (stdout is NDJSON). */
export function parseRootStdout(stdout: string): { toolCalls: ToolCallSeen[]; finalText: string } {
  const started = new Map<string, ToolCallSeen>();
  const toolCalls: ToolCallSeen[] = [];
  let finalText = "";
  for (const line of stdout.split("\n")) {
    if (!line.startsWith("{")) continue;
    let event: Json;
    try {
      event = JSON.parse(line) as Json;
    } catch {
      continue;
    }
    if (event.type === "tool_execution_start") {
      const call: ToolCallSeen = {
        id: String(event.toolCallId),
        name: String(event.toolName),
        args: (event.args ?? {}) as Json,
        text: "",
        isError: false,
      };
      started.set(call.id, call);
      toolCalls.push(call);
    } else if (event.type === "tool_execution_end") {
      const call = started.get(String(event.toolCallId));
      if (!call) continue;
      call.isError = event.isError === true;
      const content = (event.result as Json | undefined)?.content;
      call.text = Array.isArray(content)
        ? content.map((c: Json) => (c?.type === "text" ? String(c.text) : "")).join("")
        : "";
    } else if (event.type === "message_end" && event.message?.role === "assistant") {
      const content = event.message.content;
      finalText = Array.isArray(content)
        ? content
            .filter((c: Json) => c?.type === "text")
            .map((c: Json) => String(c.text))
            .join("\n")
        : String(content ?? "");
    }
  }
  return { toolCalls, finalText };
}

// ---- readers for checks -------------------------------------------------------------------

export function agentOf(state: ScenarioState, agentPath: string): AgentRecordV1 | undefined {
  return state.records.find((r) => r.path === agentPath);
}

/** The root's calls of one tool, across every phase (or one phase). */
export function callsOf(state: ScenarioState, name: string, phase?: number): ToolCallSeen[] {
  const phases = phase === undefined ? state.phases : state.phases.slice(phase, phase + 1);
  return phases.flatMap((p) => p.toolCalls.filter((c) => c.name === name));
}

/** A successful call's result as JSON (undefined for errors and non-JSON text). */
export function resultJson(call: ToolCallSeen | undefined): Json | undefined {
  if (!call || call.isError) return undefined;
  try {
    return JSON.parse(call.text) as Json;
  } catch {
    return undefined;
  }
}

/** Every notice the root got from wait_agent, in order. */
export function noticesSeen(state: ScenarioState, phase?: number): Json[] {
  return callsOf(state, "wait_agent", phase).flatMap((c) => (resultJson(c)?.notices as Json[] | undefined) ?? []);
}

/** The agents of every successful list_agents result, in order. */
export function listsSeen(state: ScenarioState, phase?: number): Json[][] {
  return callsOf(state, "list_agents", phase).flatMap((c) => {
    const agents = resultJson(c)?.agents;
    return Array.isArray(agents) ? [agents as Json[]] : [];
  });
}

function agentFolder(state: ScenarioState, record: AgentRecordV1): string {
  return path.join(state.treeDir ?? "", "agents", ...record.path.split("/").slice(2));
}

/** result.json of each of an agent's runs, oldest first (undefined where a run wrote none). */
export function runResults(state: ScenarioState, record: AgentRecordV1): Array<ResultV1 | undefined> {
  return record.runs.map(
    (run) => readJsonFile(path.join(agentFolder(state, record), "runs", run, "result.json")) as ResultV1 | undefined,
  );
}

/** events.jsonl records of each of an agent's runs, oldest first. */
export function runEvents(state: ScenarioState, record: AgentRecordV1): Json[][] {
  return record.runs.map((run) => {
    try {
      return fs
        .readFileSync(path.join(agentFolder(state, record), "runs", run, "events.jsonl"), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Json);
    } catch {
      return [];
    }
  });
}

/** meta.json of one of an agent's runs. */
export function runMeta(state: ScenarioState, record: AgentRecordV1, index: number): Json | undefined {
  const run = record.runs[index];
  return run === undefined
    ? undefined
    : (readJsonFile(path.join(agentFolder(state, record), "runs", run, "meta.json")) as Json | undefined);
}

function readJsonFile(file: string): unknown {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
}

// ---- check helpers ------------------------------------------------------------------------

/** Reasons an agent is missing or differs from `want` (compared field by field). */
export function expectAgent(
  state: ScenarioState,
  agentPath: string,
  want: Partial<Record<keyof AgentRecordV1, unknown>>,
): string[] {
  const record = agentOf(state, agentPath);
  if (!record) return [`${agentPath} was never spawned`];
  return Object.entries(want).flatMap(([key, value]) => {
    const actual = (record as unknown as Json)[key];
    return JSON.stringify(actual) === JSON.stringify(value)
      ? []
      : [`${agentPath}: ${key} is ${JSON.stringify(actual)}, expected ${JSON.stringify(value)}`];
  });
}

export function expectOnlyAgents(state: ScenarioState, paths: string[]): string[] {
  const actual = state.records.map((r) => r.path);
  return JSON.stringify(actual) === JSON.stringify(paths)
    ? []
    : [`the tree holds ${JSON.stringify(actual)}, expected exactly ${JSON.stringify(paths)}`];
}

export const when = (condition: boolean, reason: string): string[] => (condition ? [] : [reason]);

/** The role tool set of a scout (grep/find/ls included although pi leaves them inactive). */
export const SCOUT_TOOLS = ["find", "grep", "ls", "read"];

export const sortedTools = (record: AgentRecordV1 | undefined): string[] => [...(record?.activeTools ?? [])].sort();

// ---- scripted-mode pieces -----------------------------------------------------------------

/** The scripted root's last step: it checks what it saw and answers with the marker, as a model would. */
export function verdict(marker: string, failures: (req: ChatRequest) => string[]): AgentStep {
  return (req) => {
    const failed = failures(req);
    return reply.text(
      failed.length === 0
        ? `Every condition holds.\n${okMarker(marker)}`
        : `Something is off.\n${failMarker(marker)}: ${failed.join("; ")}`,
    );
  };
}

/** The text of README.md in each scenario's working directory (tasks read its first line). */
export const README_LINE = "# pi-subagent-tree stress fixture";

/** Opening of every prompt. */
export const preamble = (id: string): string =>
  `This is stress scenario ${id} of pi-subagent-tree. Use the coordination tools exactly as asked, do not edit any file, and do not stop before every step is done.`;
