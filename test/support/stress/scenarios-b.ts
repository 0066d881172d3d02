/**
 * Stress scenarios 07–11: other providers, model and reasoning
 * overrides, validation limits, restart and resume, extension tool inheritance. scripts/stress-test
 * and the e2e tests (tree-scenarios-b.test.ts) play these same scripts; the e2e tests add
 * assertions on every request each agent made, so the scripts' texts are what they expect.
 */
import fs from "node:fs";
import path from "node:path";
import { type ChatRequest, reply } from "../scripted-llm.js";
import { lastToolResult } from "../tree-llm.js";
import {
  agentEntries,
  type Json,
  noticesIn,
  Program,
  spawn,
  twoProviders,
  waitForAll,
  waitUntil,
  waitWhile,
} from "../tree-program.js";
import { markerInstruction } from "./markers.js";
import {
  agentOf,
  callsOf,
  expectAgent,
  expectOnlyAgents,
  listsSeen,
  noticesSeen,
  preamble,
  resultJson,
  runEvents,
  SCOUT_TOOLS,
  type StressScenario,
  sortedTools,
  verdict,
  when,
} from "./scenario.js";
import { completedIn, listedStatus, noticeOf, resultsIn } from "./scenarios-a.js";

const READ_LINE_1 = "Read the first line of README.md in your working directory and report it verbatim.";

export const crossProvider: StressScenario = {
  id: "07",
  name: "cross-provider",
  title: "children on models of two providers complete on the model asked for",
  prompts: [
    {
      marker: "07",
      text: `${preamble("07")} Call list_models and choose two models of two different providers (the part before "/"); if every model has the same provider, choose two different models. Call spawn_agent with task_name "child_a", fork_turns "none", the first model as model, and message "${READ_LINE_1}"; and spawn_agent with task_name "child_b", agent_type "scout", fork_turns "none", the second model as model, and the same message. Call wait_agent until both notices arrive, then list_agents. Conditions: both notices have type "completed" and name the model you chose for that child; list_agents shows both completed on those models. ${markerInstruction("07")}`,
    },
  ],
  scripted: {
    models: twoProviders,
    script: (h) => [
      () => {
        h.tree.add(
          "/root",
          ...new Program([
            reply.toolCall("list_models", {}),
            spawn({ task_name: "child_a", message: "ALT TASK", model: "other/alt", fork_turns: "none" }),
            // A specialist: a role whose own reasoning (high) the other provider's model could not take.
            spawn({
              task_name: "child_b",
              message: "DEEP TASK",
              agent_type: "specialist",
              model: "fake/deep",
              fork_turns: "none",
            }),
            waitForAll(["/root/child_a", "/root/child_b"]),
            reply.toolCall("list_agents", {}),
            verdict("07", (req) => [
              ...completedIn(req, ["/root/child_a", "/root/child_b"]),
              ...when(
                noticeOf(req, "/root/child_a")?.model === "other/alt" &&
                  noticeOf(req, "/root/child_b")?.model === "fake/deep",
                "a notice names another model",
              ),
            ]),
          ]).steps(),
        );
        h.tree.add("/root/child_a", reply.text("ALT REPORT"));
        h.tree.add("/root/child_b", reply.text("DEEP REPORT"));
      },
    ],
  },
  check: (state) => {
    const spawnCall = (name: string) =>
      callsOf(state, "spawn_agent").find((c) => c.args.task_name === name && !c.isError)?.args;
    const asked = (name: string) => spawnCall(name)?.model;
    const a = agentOf(state, "/root/child_a");
    const b = agentOf(state, "/root/child_b");
    return [
      ...expectAgent(state, "/root/child_a", { status: "completed", health: "healthy", model: asked("child_a") }),
      // The role the root asked for (the live prompt asks for a scout; the script plays a specialist).
      ...expectAgent(state, "/root/child_b", {
        role: spawnCall("child_b")?.agent_type ?? "default",
        status: "completed",
        health: "healthy",
        model: asked("child_b"),
      }),
      ...when(!a || !b || a.model !== b.model, "both children ran on the same model"),
      ...when(
        !a || !b || a.model.split("/")[0] !== b.model.split("/")[0] || state.mode === "live",
        `both children ran on provider ${a?.model.split("/")[0]} (the scripted run has two)`,
      ),
    ];
  },
};

const LOW_REFUSED = /^reasoning_effort low is not supported by [^/\s]+\/\S+$/;

export const modelReasoningOverrides: StressScenario = {
  id: "08",
  name: "model-reasoning-overrides",
  title: "explicit reasoning is honoured or refused; a role's level is clamped and shown",
  prompts: [
    {
      marker: "08",
      text: `${preamble("08")} Call list_models. Then spawn three children, each with fork_turns "none" and message "Answer with one short sentence.": (1) task_name "scout_high", agent_type "scout", reasoning_effort "high"; (2) task_name "scout_clamped", agent_type "scout", no reasoning_effort, on a model whose reasoning_levels lack "low" if list_models shows one (else on any model); (3) task_name "plain_low", no agent_type, reasoning_effort "low", on a model whose reasoning_levels lack "low" if there is one (such a spawn must be refused with exactly "reasoning_effort low is not supported by <provider>/<id>"), else on any model. Wait for every child that was spawned, then call list_agents. Conditions: scout_high runs at reasoning "high"; scout_clamped's reasoning is one of its model's reasoning_levels; each child's model and reasoning are the same in its spawn_agent result, its notice and list_agents; a refusal, if any, has exactly the text above. ${markerInstruction("08")}`,
    },
  ],
  scripted: {
    models: twoProviders,
    script: (h) => [
      () => {
        h.tree.add(
          "/root",
          ...new Program([
            reply.toolCall("list_models", {}),
            spawn({
              task_name: "scout_high",
              message: "SCOUT HIGH TASK",
              agent_type: "scout",
              reasoning_effort: "high",
              fork_turns: "none",
            }),
            // An explicit level the model lacks is refused, never clamped.
            spawn({
              task_name: "plain_low",
              message: "LOW",
              model: "fake/deep",
              reasoning_effort: "low",
              fork_turns: "none",
            }),
            // A role's own level (a scout's low) is clamped to what the model has.
            spawn({
              task_name: "scout_clamped",
              message: "SCOUT TASK",
              agent_type: "scout",
              model: "fake/deep",
              fork_turns: "none",
            }),
            spawn({ task_name: "plain_max", message: "MAX", reasoning_effort: "max", fork_turns: "none" }),
            spawn({
              task_name: "plain_minimal",
              message: "MINIMAL TASK",
              reasoning_effort: "minimal",
              fork_turns: "none",
            }),
            spawn({
              task_name: "deep_xhigh",
              message: "XHIGH TASK",
              model: "fake/deep",
              reasoning_effort: "xhigh",
              fork_turns: "none",
            }),
            waitForAll(["/root/scout_high", "/root/scout_clamped", "/root/plain_minimal", "/root/deep_xhigh"]),
            reply.toolCall("list_agents", {}),
            verdict("08", (req) => [
              ...completedIn(req, ["/root/scout_high", "/root/scout_clamped"]),
              ...when(noticeOf(req, "/root/scout_high")?.reasoning === "high", "scout_high does not run at high"),
              ...when(
                noticeOf(req, "/root/scout_clamped")?.reasoning === "high",
                "scout_clamped was not clamped to high",
              ),
              ...when(
                LOW_REFUSED.test(String(resultsIn(req, "spawn_agent", { task_name: "plain_low" })[0]?.error)),
                "plain_low was not refused",
              ),
            ]),
          ]).steps(),
        );
        h.tree.add("/root/scout_high", reply.text("SCOUT HIGH REPORT"));
        h.tree.add("/root/scout_clamped", reply.text("SCOUT REPORT"));
        h.tree.add("/root/plain_minimal", reply.text("MINIMAL REPORT"));
        h.tree.add("/root/deep_xhigh", reply.text("XHIGH REPORT"));
      },
    ],
  },
  check: (state) => {
    const models = (resultJson(callsOf(state, "list_models")[0])?.models as Json[] | undefined) ?? [];
    const levelsOf = (model: string | undefined) =>
      (models.find((m) => m.model === model)?.reasoning_levels as string[] | undefined) ?? [];
    const reasons = [
      ...expectAgent(state, "/root/scout_high", { role: "scout", status: "completed", reasoning: "high" }),
      ...expectAgent(state, "/root/scout_clamped", { role: "scout", status: "completed" }),
    ];
    const clamped = agentOf(state, "/root/scout_clamped");
    if (clamped)
      reasons.push(
        ...when(
          levelsOf(clamped.model).includes(clamped.reasoning),
          `scout_clamped runs at ${clamped.reasoning}, not one of ${clamped.model}'s levels ${JSON.stringify(levelsOf(clamped.model))}`,
        ),
      );
    // Every child's effective model and reasoning agree across spawn result, notice, list and record.
    for (const record of state.records) {
      const spawned = callsOf(state, "spawn_agent")
        .map(resultJson)
        .find((r) => r?.agent_name === record.path);
      const notice = noticesSeen(state).find((n) => n.agent_name === record.path && n.type !== "message");
      const listed = listsSeen(state)
        .at(-1)
        ?.find((a) => a.agent_name === record.path);
      for (const [where, seen] of [
        ["spawn_agent", spawned],
        ["notice", notice],
        ["list_agents", listed],
      ] as const) {
        if (!seen) reasons.push(`${record.path}: no ${where} result`);
        else if (seen.model !== record.model || seen.reasoning !== record.reasoning)
          reasons.push(
            `${record.path}: ${where} shows ${seen.model}/${seen.reasoning}, it runs ${record.model}/${record.reasoning}`,
          );
      }
    }
    // plain_low: refused exactly when its model cannot do low.
    const lowCall = callsOf(state, "spawn_agent").find((c) => c.args.task_name === "plain_low");
    // Without a model of its own, plain_low runs the root's model, as scout_high does.
    const lowModel = (lowCall?.args.model as string | undefined) || agentOf(state, "/root/scout_high")?.model;
    if (!lowCall) reasons.push("plain_low was never attempted");
    else if (lowCall.isError)
      reasons.push(
        ...when(
          LOW_REFUSED.test(lowCall.text) && !agentOf(state, "/root/plain_low"),
          `plain_low refused with ${JSON.stringify(lowCall.text)}`,
        ),
      );
    else
      reasons.push(
        ...when(
          levelsOf(lowModel).includes("low") || models.length === 0,
          `plain_low was accepted on ${lowModel}, which lacks low`,
        ),
        ...expectAgent(state, "/root/plain_low", { reasoning: "low" }),
      );
    if (state.mode === "scripted")
      reasons.push(...when(lowCall?.isError === true, "plain_low on fake/deep (no low) was not refused"));
    return reasons;
  },
};

/** The refused spawns of scenario 09 and the exact validation message each must get. */
const INVALID_SPAWNS: Array<{ args: Json; error: string }> = [
  {
    args: { task_name: "bad-name", fork_turns: "none" },
    error: "agent_name must use only lowercase letters, digits, and underscores",
  },
  {
    args: { task_name: "attempt_2", agent_type: "nonexistent_role", fork_turns: "none" },
    error: "unknown agent_type: nonexistent_role",
  },
  {
    args: { task_name: "attempt_3", agent_type: "scout", fork_turns: "all" },
    error: "scout agents require fork_turns `none`",
  },
  {
    args: { task_name: "attempt_4", model: "nonexistent/model-xyz", fork_turns: "none" },
    error: "unknown model: nonexistent/model-xyz",
  },
  {
    args: { task_name: "attempt_6", agent_type: "implementation" },
    error:
      "Full-history forked agents inherit the parent agent type; omit agent_type, or spawn without a full-history fork.",
  },
];
const DUPLICATE_ERROR = "agent task path already exists: /root/attempt_5";

export const limitBehavior: StressScenario = {
  id: "09",
  name: "limit-behavior",
  title: "invalid spawns are refused with the exact messages and leave nothing behind",
  prompts: [
    {
      marker: "09",
      text: `${preamble("09")} Make these spawn_agent calls one at a time, each with message "Answer done.", exactly as written (several are meant to be refused; do not correct them): (1) task_name "bad-name", fork_turns "none"; (2) task_name "attempt_2", agent_type "nonexistent_role", fork_turns "none"; (3) task_name "attempt_3", agent_type "scout", fork_turns "all"; (4) task_name "attempt_4", model "nonexistent/model-xyz", fork_turns "none"; (5) task_name "attempt_5", fork_turns "none" — and then the same call (5) a second time; (6) task_name "attempt_6", agent_type "implementation" and no fork_turns. Then call wait_agent until the notice of /root/attempt_5 arrives and call list_agents. Quote every error verbatim. Conditions: calls 1, 2, 3, 4, the repeated 5 and 6 were refused with an error each; the first call 5 succeeded; list_agents shows only /root/attempt_5. ${markerInstruction("09")}`,
    },
  ],
  scripted: {
    script: (h) => [
      () => {
        const call = (args: Json) => spawn({ ...args, message: "Answer done." });
        h.tree.add(
          "/root",
          ...new Program([
            ...INVALID_SPAWNS.slice(0, 4).map((s) => call(s.args)),
            call({ task_name: "attempt_5", fork_turns: "none" }),
            call({ task_name: "attempt_5", fork_turns: "none" }),
            call(INVALID_SPAWNS[4]!.args),
            waitForAll(["/root/attempt_5"]),
            reply.toolCall("list_agents", {}),
            verdict("09", (req) => {
              const errors = [...INVALID_SPAWNS.map((s) => s.error), DUPLICATE_ERROR];
              const seen = resultsIn(req, "spawn_agent")
                .map((r) => r.error)
                .filter(Boolean);
              return [
                ...errors.filter((e) => !seen.includes(e)).map((e) => `missing error: ${e}`),
                ...when(
                  JSON.stringify(
                    (resultsIn(req, "list_agents").at(-1)?.agents as Json[] | undefined)?.map((a) => a.agent_name),
                  ) === '["/root/attempt_5"]',
                  "list_agents shows more than attempt_5",
                ),
              ];
            }),
          ]).steps(),
        );
        h.tree.add("/root/attempt_5", reply.text("done"));
      },
    ],
  },
  check: (state) => {
    const errors = callsOf(state, "spawn_agent")
      .filter((c) => c.isError)
      .map((c) => c.text);
    return [
      ...[...INVALID_SPAWNS.map((s) => s.error), DUPLICATE_ERROR]
        .filter((e) => !errors.includes(e))
        .map((e) => `the root never got the error ${JSON.stringify(e)}`),
      ...expectOnlyAgents(state, ["/root/attempt_5"]),
      ...expectAgent(state, "/root/attempt_5", { status: "completed" }),
    ];
  },
};

/** What persisted_worker answers in its first turn and, resumed after the restart, its second. */
const WORKER_REPORTS = ["WORKER REPORT 1", "WORKER REPORT 2"] as const;

export const restartResume: StressScenario = {
  id: "10",
  name: "restart-resume",
  title: "a second pi process on the same session sees its children as they ended and resumes one",
  prompts: [
    {
      marker: "10A",
      text: `${preamble("10")} Phase A of two. Call spawn_agent with task_name "persisted_worker", agent_type "scout", fork_turns "none" and message "${READ_LINE_1}". Call wait_agent until its notice arrives, then call list_agents. Conditions: the notice has type "completed"; list_agents shows /root/persisted_worker completed. ${markerInstruction("10A")}`,
    },
    {
      marker: "10",
      text: `${preamble("10")} Phase B of two: this session was restarted in a new pi process. First call list_agents: /root/persisted_worker must be listed with agent_status "completed" (not "shutdown"). Then call get_agent_report on "persisted_worker", then followup_task to "persisted_worker" with message "Answer with the single word resumed.", call wait_agent until its notice arrives, and call list_agents again. Conditions: the first list_agents shows persisted_worker "completed"; get_agent_report returns its earlier report; the follow-up's notice has type "completed"; the last list_agents shows it "completed". ${markerInstruction("10")}`,
    },
  ],
  scripted: {
    script: (h) => {
      const root = new Program([
        spawn({ task_name: "persisted_worker", message: "WORKER TASK", agent_type: "scout", fork_turns: "none" }),
        waitForAll(["/root/persisted_worker"]),
        reply.toolCall("list_agents", {}),
        // A second child whose turn is still going when the first process ends: restore must
        // show it stopped, and a follow-up must give it its lost task again.
        spawn({ task_name: "slow", message: "SLOW TASK", fork_turns: "none" }),
        waitWhile(() => h.requestsOf("/root/slow").length === 0),
        verdict("10A", (req) => completedIn(req, ["/root/persisted_worker"])),
      ]);
      h.tree.add("/root/persisted_worker", reply.text(WORKER_REPORTS[0]), reply.text(WORKER_REPORTS[1]));
      h.tree.add("/root/slow", reply.hang(), reply.text("SLOW RESUMED"));
      const noticesOf = (notices: Json[], agent: string) => notices.filter((n) => n.agent_name === agent);
      return [
        () => h.tree.add("/root", ...root.steps()),
        () =>
          root.extend(
            reply.toolCall("list_agents", {}),
            reply.toolCall("wait_agent", { timeout_ms: 0 }),
            reply.toolCall("get_agent_report", { target: "persisted_worker" }),
            reply.toolCall("followup_task", { target: "persisted_worker", message: "WORKER AGAIN" }),
            reply.toolCall("followup_task", { target: "slow", message: "SLOW RESUME" }),
            waitUntil(
              (notices) =>
                noticesOf(notices, "/root/persisted_worker").length >= 2 &&
                noticesOf(notices, "/root/slow").length >= 1,
            ),
            reply.toolCall("list_agents", { path_prefix: "/root" }),
            verdict("10", (req) => [
              ...when(
                resultsIn(req, "get_agent_report").at(-1)?.text === WORKER_REPORTS[0],
                "get_agent_report did not return the earlier report",
              ),
              ...when(
                noticesOf(noticesIn(req), "/root/persisted_worker").at(-1)?.report === WORKER_REPORTS[1],
                "the follow-up's notice lacks its report",
              ),
              ...when(
                listedStatus(req, "/root/persisted_worker") === "completed",
                "list_agents does not show it completed",
              ),
            ]),
          ),
      ];
    },
  },
  check: (state) => {
    const firstListB = listsSeen(state, 1)[0]?.find((a) => a.agent_name === "/root/persisted_worker");
    const record = agentOf(state, "/root/persisted_worker");
    const entries = fs.existsSync(state.sessionFile)
      ? agentEntries(state.sessionFile).filter((e) => e.path === "/root/persisted_worker")
      : [];
    return [
      ...when(
        firstListB?.agent_status === "completed",
        `after the restart list_agents showed persisted_worker as ${firstListB?.agent_status ?? "absent"}`,
      ),
      ...expectAgent(state, "/root/persisted_worker", { status: "completed", health: "healthy" }),
      ...when((record?.runs.length ?? 0) >= 2, "persisted_worker was not resumed for a second turn"),
      ...when(
        callsOf(state, "get_agent_report", 1).some((c) => resultJson(c)?.available === true),
        "get_agent_report had no stored report after the restart",
      ),
      ...when(
        entries.at(-1)?.status === "completed",
        `the session's last record of persisted_worker says ${entries.at(-1)?.status ?? "nothing"}`,
      ),
    ];
  },
};

/** A third-party extension with one tool, as a user would write it. */
const PROBE_EXTENSION = `import { Type } from "typebox";

export default function probe(pi) {
  pi.registerTool({
    name: "probe_tool",
    label: "Probe",
    description: "Echoes a word back, prefixed with 'probe says'.",
    parameters: Type.Object({ word: Type.String() }),
    execute: async (_id, params) => ({ content: [{ type: "text", text: "probe says " + params.word }], details: {} }),
  });
}
`;
/** Where the scenario's folder keeps the probe extension (`-e` for the root). */
export const probeFile = (dir: string) => path.join(dir, "probe-extension", "index.ts");

export const extensionInheritance: StressScenario = {
  id: "11",
  name: "extension-inheritance",
  title: "a plain child inherits a third-party extension's tool; a scout does not",
  prompts: [
    {
      marker: "11",
      text: `${preamble("11")} You have a tool probe_tool from a third-party extension. In ONE message, call spawn_agent twice: task_name "plain_child", fork_turns "none", no agent_type, message "Call the probe_tool tool with word ping and report its output verbatim."; and task_name "scout_child", agent_type "scout", fork_turns "none", message "List the names of every tool you have, then answer.". Call wait_agent until both notices arrive. Conditions: plain_child's report contains "probe says ping"; scout_child's report does not list probe_tool. ${markerInstruction("11")}`,
    },
  ],
  prepare: (dir) => {
    fs.mkdirSync(path.dirname(probeFile(dir)), { recursive: true });
    fs.writeFileSync(probeFile(dir), PROBE_EXTENSION);
    return ["-e", probeFile(dir)];
  },
  scripted: {
    script: (h) => [
      () => {
        h.tree.add(
          "/root",
          ...new Program([
            reply.toolCalls([
              {
                name: "spawn_agent",
                args: {
                  task_name: "plain_child",
                  fork_turns: "none",
                  message: "Call the probe_tool tool with word ping and report its output verbatim.",
                },
              },
              {
                name: "spawn_agent",
                args: {
                  task_name: "scout_child",
                  agent_type: "scout",
                  fork_turns: "none",
                  message: "List the names of every tool you have, then answer.",
                },
              },
            ]),
            waitForAll(["/root/plain_child", "/root/scout_child"]),
            verdict("11", (req) => [
              ...when(
                String(noticeOf(req, "/root/plain_child")?.report).includes("probe says ping"),
                "plain_child did not report probe says ping",
              ),
              ...when(
                !String(noticeOf(req, "/root/scout_child")?.report).includes("probe_tool"),
                "scout_child lists probe_tool",
              ),
            ]),
          ]).steps(),
        );
        h.tree.add("/root/plain_child", reply.toolCall("probe_tool", { word: "ping" }), (req: ChatRequest) =>
          reply.text(`PLAIN GOT ${String(lastToolResult(req))}`),
        );
        h.tree.add("/root/scout_child", (req) =>
          reply.text(`My tools: ${(req.tools ?? []).map((t) => t.function.name).join(", ")}`),
        );
      },
    ],
  },
  check: (state) => {
    const plain = agentOf(state, "/root/plain_child");
    const scout = agentOf(state, "/root/scout_child");
    const probeCalls = plain
      ? runEvents(state, plain)
          .flat()
          .filter((e) => e.type === "tool_call" && e.toolName === "probe_tool")
      : [];
    const probeOk = plain
      ? runEvents(state, plain)
          .flat()
          .some((e) => e.type === "tool_result" && e.toolName === "probe_tool" && e.isError === false)
      : false;
    return [
      ...expectAgent(state, "/root/plain_child", { role: "default", status: "completed" }),
      ...expectAgent(state, "/root/scout_child", { role: "scout", status: "completed" }),
      ...when(plain?.activeTools.includes("probe_tool") === true, "plain_child did not get probe_tool"),
      ...when(
        plain?.extensions.includes(probeFile(state.dir)) === true,
        "plain_child was not given the probe extension",
      ),
      ...when(probeCalls.length > 0 && probeOk, "plain_child never ran probe_tool successfully"),
      ...when(
        JSON.stringify(sortedTools(scout)) === JSON.stringify(SCOUT_TOOLS),
        `scout_child has tools ${JSON.stringify(sortedTools(scout))}; role limits must drop extension tools`,
      ),
    ];
  },
};
