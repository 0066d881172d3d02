/**
 * The stress scenarios' state checks judge what a run left behind; they must fail on the
 * defects they exist to catch (a finished child restored as shutdown, a scout missing its read-only tools, wrong messages), not only pass on good runs.
 */
import { describe, expect, it } from "vitest";
import type { AgentRecordV1 } from "../../../src/contracts/tree.js";
import { agentRecord } from "../../support/records.js";
import {
  type PhaseRun,
  parseRootStdout,
  type ScenarioState,
  type ToolCallSeen,
} from "../../support/stress/scenario.js";
import { basicSpawnWait } from "../../support/stress/scenarios-a.js";
import { limitBehavior, restartResume } from "../../support/stress/scenarios-b.js";

const call = (name: string, args: Record<string, unknown>, result: unknown, isError = false): ToolCallSeen => ({
  id: `${name}-${Math.random()}`,
  name,
  args,
  text: typeof result === "string" ? result : JSON.stringify(result),
  isError,
});

const phase = (toolCalls: ToolCallSeen[]): PhaseRun => ({
  prompt: { marker: "x", text: "" },
  argv: [],
  startedAt: "",
  durationMs: 0,
  code: 0,
  signal: null,
  timedOut: false,
  stdout: "",
  stderr: "",
  toolCalls,
  finalText: "",
});

const state = (phases: PhaseRun[], records: AgentRecordV1[]): ScenarioState => ({
  mode: "live",
  dir: "/nowhere",
  sessionFile: "/nowhere/session.jsonl",
  phases,
  treeDir: undefined,
  records,
});

describe("stress scenario checks", () => {
  it("01 fails a scout that only got read and passes the full read-only set", () => {
    const calls = [
      call("list_models", {}, { models: [{ model: "p/m" }] }),
      call("list_agents", {}, { agents: [{ agent_name: "/root/scout_one", agent_status: "completed" }] }),
    ];
    const scout = (activeTools: string[]) => agentRecord({ path: "/root/scout_one", role: "scout", activeTools });
    expect(basicSpawnWait.check(state([phase(calls)], [scout(["read"])]))).toEqual([
      '/root/scout_one has tools ["read"], expected ["find","grep","ls","read"]',
    ]);
    expect(basicSpawnWait.check(state([phase(calls)], [scout(["read", "grep", "find", "ls"])]))).toEqual([]);
    expect(basicSpawnWait.check(state([phase([])], []))).toEqual([
      "/root/scout_one was never spawned",
      '/root/scout_one has tools [], expected ["find","grep","ls","read"]',
      "list_models returned no model to the root",
      "no list_agents result showed /root/scout_one completed",
    ]);
  });

  it("09 names every refusal the root never got verbatim, and extra agents", () => {
    const reasons = limitBehavior.check(
      state(
        [phase([call("spawn_agent", { task_name: "bad-name" }, "invalid task_name", true)])],
        [agentRecord({ path: "/root/attempt_5" }), agentRecord({ path: "/root/bad_name" })],
      ),
    );
    expect(reasons).toContain(
      'the root never got the error "agent_name must use only lowercase letters, digits, and underscores"',
    );
    expect(reasons).toContain('the root never got the error "agent task path already exists: /root/attempt_5"');
    expect(reasons).toContain(
      'the tree holds ["/root/attempt_5","/root/bad_name"], expected exactly ["/root/attempt_5"]',
    );
  });

  it("10 fails when the restarted root lists a completed child as shutdown", () => {
    const listed = (status: string) =>
      call("list_agents", {}, { agents: [{ agent_name: "/root/persisted_worker", agent_status: status }] });
    const worker = agentRecord({
      path: "/root/persisted_worker",
      status: "completed",
      runs: ["0001-spawn", "0002-followup"],
    });
    const reasons = restartResume.check(state([phase([listed("completed")]), phase([listed("shutdown")])], [worker]));
    expect(reasons).toContain("after the restart list_agents showed persisted_worker as shutdown");
  });

  it("reads the root's tool calls, errors and final answer from its json stdout", () => {
    const lines = [
      { type: "session", id: "s" },
      { type: "tool_execution_start", toolCallId: "c1", toolName: "spawn_agent", args: { task_name: "x" } },
      {
        type: "tool_execution_end",
        toolCallId: "c1",
        toolName: "spawn_agent",
        result: { content: [{ type: "text", text: "unknown model: a/b" }] },
        isError: true,
      },
      { type: "message_end", message: { role: "assistant", content: [{ type: "text", text: "first" }] } },
      {
        type: "message_end",
        message: {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "t" },
            { type: "text", text: "done" },
            { type: "text", text: "STRESS_01_OK" },
          ],
        },
      },
    ];
    const parsed = parseRootStdout(`${lines.map((l) => JSON.stringify(l)).join("\n")}\nnot json\n`);
    expect(parsed.toolCalls).toEqual([
      { id: "c1", name: "spawn_agent", args: { task_name: "x" }, text: "unknown model: a/b", isError: true },
    ]);
    expect(parsed.finalText).toBe("done\nSTRESS_01_OK");
  });
});
