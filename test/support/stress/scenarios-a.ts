/**
 * Stress scenarios 01–06: spawning, fan-out, nesting, queueing,
 * interrupts, failure isolation. Each has the natural-language prompt of a live run, the
 * scripted models of a loopback run, and the checks that judge either. scripts/stress-test
 * and the e2e tests (tree-scenarios-a.test.ts) play these same scripts; the e2e tests add
 * assertions on every request each agent made, so the scripts' texts are what they expect.
 */
import { type ChatRequest, reply } from "../scripted-llm.js";
import type { TreeHarness } from "../tree-harness.js";
import { lastToolResult } from "../tree-llm.js";
import {
  type Json,
  noticesIn,
  Program,
  spawn,
  toolResultFor,
  waitForAll,
  waitUntil,
  waitWhile,
} from "../tree-program.js";
import { markerInstruction } from "./markers.js";
import {
  agentOf,
  callsOf,
  expectAgent,
  listsSeen,
  noticesSeen,
  preamble,
  README_LINE,
  resultJson,
  runEvents,
  runMeta,
  runResults,
  SCOUT_TOOLS,
  type StressScenario,
  sortedTools,
  verdict,
  when,
} from "./scenario.js";

/** The parsed results of the root's `name` calls in a request (errors stay strings). */
export function resultsIn(req: ChatRequest, name: string, args: Json = {}): Json[] {
  return toolResultFor(req, name, args).map((text) => {
    try {
      return JSON.parse(text) as Json;
    } catch {
      return { error: text };
    }
  });
}

/** Status of `agent` in the latest list_agents result of a request. */
export function listedStatus(req: ChatRequest, agent: string): string | undefined {
  const agents = resultsIn(req, "list_agents").at(-1)?.agents as Json[] | undefined;
  return agents?.find((a) => a.agent_name === agent)?.agent_status;
}

export function noticeOf(req: ChatRequest, agent: string): Json | undefined {
  return noticesIn(req).find((n) => n.agent_name === agent && n.type !== "message");
}

/** Failures when an agent's notice is not `completed` or list_agents does not show it completed. */
export function completedIn(req: ChatRequest, agents: string[]): string[] {
  return agents.flatMap((agent) => [
    ...when(
      noticeOf(req, agent)?.type === "completed",
      `${agent}'s notice is ${noticeOf(req, agent)?.type ?? "missing"}`,
    ),
    ...when(
      listedStatus(req, agent) === "completed",
      `list_agents shows ${agent} as ${listedStatus(req, agent) ?? "absent"}`,
    ),
  ]);
}

const single = (h: TreeHarness, scripts: Record<string, Array<Parameters<TreeHarness["tree"]["add"]>[1]>>) => [
  () => {
    for (const [agent, steps] of Object.entries(scripts)) h.tree.add(agent, ...steps);
  },
];

export const basicSpawnWait: StressScenario = {
  id: "01",
  name: "basic-spawn-wait",
  title: "spawn a scout, wait for it, list_models and list_agents",
  prompts: [
    {
      marker: "01",
      text: `${preamble("01")} Call list_models. Then call spawn_agent with task_name "scout_one", agent_type "scout", fork_turns "none" and message "Read the first line of README.md in your working directory and report it verbatim.". Call wait_agent until the notice of /root/scout_one arrives, then call list_agents. Conditions: list_models returned at least one model; the notice of /root/scout_one has type "completed"; list_agents shows /root/scout_one with agent_status "completed". ${markerInstruction("01")}`,
    },
  ],
  scripted: {
    script: (h) =>
      single(h, {
        "/root": new Program([
          reply.toolCall("list_models", {}),
          spawn({ task_name: "scout_one", agent_type: "scout", fork_turns: "none", message: "Read README line 1" }),
          waitForAll(["/root/scout_one"]),
          reply.toolCall("list_agents", {}),
          verdict("01", (req) => [
            ...when(
              ((resultsIn(req, "list_models")[0]?.models as Json[] | undefined)?.length ?? 0) > 0,
              "list_models returned no model",
            ),
            ...completedIn(req, ["/root/scout_one"]),
          ]),
        ]).steps(),
        "/root/scout_one": [reply.text("SCOUT REPORT: # hello")],
      }),
  },
  check: (state) => [
    ...expectAgent(state, "/root/scout_one", { role: "scout", status: "completed", health: "healthy" }),
    // the scout has the role's whole read-only tool set, although pi leaves grep/find/ls inactive.
    ...when(
      JSON.stringify(sortedTools(agentOf(state, "/root/scout_one"))) === JSON.stringify(SCOUT_TOOLS),
      `/root/scout_one has tools ${JSON.stringify(sortedTools(agentOf(state, "/root/scout_one")))}, expected ${JSON.stringify(SCOUT_TOOLS)}`,
    ),
    ...when(
      ((resultJson(callsOf(state, "list_models")[0])?.models as Json[] | undefined)?.length ?? 0) > 0,
      "list_models returned no model to the root",
    ),
    ...when(
      listsSeen(state).some((agents) =>
        agents.some((a) => a.agent_name === "/root/scout_one" && a.agent_status === "completed"),
      ),
      "no list_agents result showed /root/scout_one completed",
    ),
  ],
};

const PARALLEL = ["para_a", "para_b", "para_c", "para_d"];

export const parallelSpawns: StressScenario = {
  id: "02",
  name: "parallel-spawns",
  title: "four scouts spawned at once; at most 3 run at a time",
  prompts: [
    {
      marker: "02",
      text: `${preamble("02")} In ONE message, call spawn_agent four times (no waiting in between) with task_name "para_a", "para_b", "para_c" and "para_d", each with agent_type "scout", fork_turns "none" and message "List your working directory with the ls tool and report the entries.". Then call wait_agent until all four notices have arrived, then call list_agents. Conditions: all four notices have type "completed"; list_agents shows all four with agent_status "completed". ${markerInstruction("02")}`,
    },
  ],
  scripted: {
    script: (h) => {
      const scouts = PARALLEL.map((n) => `/root/${n}`);
      const scripts: Record<string, Array<Parameters<TreeHarness["tree"]["add"]>[1]>> = {
        "/root": new Program([
          reply.toolCalls(
            PARALLEL.map((n) => ({
              name: "spawn_agent",
              args: { task_name: n, message: `recon ${n}`, agent_type: "scout", fork_turns: "none" },
            })),
          ),
          // Straight after the spawns (the scouts take over a second): the queue is visible.
          reply.toolCall("list_agents", {}),
          // Patient: the fourth scout starts only when one of the first three ends, and on pi
          // 0.73.1 / Node 20 under a full npm test a start took over the default 20 s once.
          waitForAll(scouts, 60_000),
          reply.toolCall("list_agents", {}),
          verdict("02", (req) => completedIn(req, scouts)),
        ]).steps(),
      };
      // Each scout looks around (a tool turn), then answers slowly (streamed over ~1 s), so the fourth has to queue.
      for (const n of PARALLEL)
        scripts[`/root/${n}`] = [reply.toolCall("ls", {}), reply.text(`REPORT ${n}`, { chunkDelayMs: 250 })];
      return single(h, scripts);
    },
  },
  check: (state) => {
    const reasons = PARALLEL.flatMap((n) =>
      expectAgent(state, `/root/${n}`, { role: "scout", status: "completed", health: "healthy" }),
    );
    // The per-parent limit held: never more than 3 of the root's children ran at once.
    const spans = PARALLEL.flatMap((n) => {
      const record = agentOf(state, `/root/${n}`);
      return record
        ? runEvents(state, record).map((events) => ({
            start: events.find((e) => e.type === "run_start")?.ts as number,
            end: events.find((e) => e.type === "run_end")?.ts as number,
          }))
        : [];
    });
    const most = Math.max(0, ...spans.map((s) => spans.filter((o) => o.start <= s.start && o.end > s.start).length));
    return [...reasons, ...when(most <= 3, `${most} scout runs overlapped; the limit is 3 per parent`)];
  },
};

export const nestedChain: StressScenario = {
  id: "03",
  name: "nested-chain",
  title: "root → mid → leaf; the leaf's answer travels up",
  prompts: [
    {
      marker: "03",
      text: `${preamble("03")} Call spawn_agent with task_name "mid", fork_turns "none", no agent_type, and message "Call spawn_agent with task_name \\"leaf\\", fork_turns \\"none\\", no agent_type, and message \\"Read the first line of README.md in your working directory and report it verbatim.\\". Call wait_agent until its notice arrives, then answer with the leaf's report.". Call wait_agent until the notice of /root/mid arrives, then call list_agents. Conditions: the notice of /root/mid has type "completed"; list_agents shows both /root/mid and /root/mid/leaf with agent_status "completed". ${markerInstruction("03")}`,
    },
  ],
  scripted: {
    script: (h) =>
      single(h, {
        "/root": new Program([
          spawn({
            task_name: "mid",
            message: "Delegate the line-1 lookup to a leaf and relay its answer",
            fork_turns: "none",
          }),
          waitForAll(["/root/mid"], 30_000),
          reply.toolCall("list_agents", {}),
          // The leaf's notice goes to mid, not to the root: the root sees the leaf in list_agents.
          verdict("03", (req) => [
            ...completedIn(req, ["/root/mid"]),
            ...when(
              listedStatus(req, "/root/mid/leaf") === "completed",
              "list_agents does not show the leaf completed",
            ),
          ]),
        ]).steps(),
        "/root/mid": new Program([
          spawn({ task_name: "leaf", message: "Report line 1", fork_turns: "none" }),
          waitForAll(["/root/mid/leaf"], 30_000),
          (req) => reply.text(`MID RELAYS: ${noticesIn(req)[0]?.report ?? JSON.stringify(lastToolResult(req))}`),
        ]).steps(),
        "/root/mid/leaf": [reply.text("LEAF SAYS line-1")],
      }),
  },
  check: (state) => {
    const mid = agentOf(state, "/root/mid");
    const leaf = agentOf(state, "/root/mid/leaf");
    const ends = (record: typeof mid) =>
      record ? (runEvents(state, record)[0]?.find((e) => e.type === "run_end")?.ts as number | undefined) : undefined;
    return [
      ...expectAgent(state, "/root/mid", { role: "default", status: "completed", health: "healthy" }),
      ...expectAgent(state, "/root/mid/leaf", { parent: "/root/mid", status: "completed", health: "healthy" }),
      // mid waited for its child before it answered.
      ...when(
        mid === undefined || leaf === undefined || (ends(leaf) ?? Infinity) <= (ends(mid) ?? -Infinity),
        "/root/mid ended its turn before its leaf did",
      ),
    ];
  },
};

export const queueFollowup: StressScenario = {
  id: "04",
  name: "queue-followup",
  title:
    "send_message and followup_task while the child is busy arrive in order: the note in the running turn, the follow-up in the next",
  prompts: [
    {
      marker: "04",
      text: `${preamble("04")} In ONE message, without waiting in between: call spawn_agent with task_name "worker", agent_type "implementation", fork_turns "none" and message "Run sleep 5 with the bash tool, then answer first turn done."; then send_message to "worker" with message "NOTE: this note must arrive before the second task."; then followup_task to "worker" with message "SECOND TASK: answer followup_received and say which messages you got since your first task, in order.". Then call wait_agent until two notices of /root/worker have arrived (one per turn) and call list_agents. Conditions: both notices have type "completed"; the second report says followup_received; list_agents shows /root/worker completed. ${markerInstruction("04")}`,
    },
  ],
  scripted: {
    script: (h) =>
      single(h, {
        "/root": new Program([
          reply.toolCalls([
            {
              name: "spawn_agent",
              args: {
                task_name: "worker",
                message: "FIRST TASK: sleep then report",
                agent_type: "implementation",
                fork_turns: "none",
              },
            },
            { name: "send_message", args: { target: "worker", message: "NOTE" } },
            { name: "followup_task", args: { target: "worker", message: "SECOND TASK" } },
          ]),
          waitUntil((notices) => notices.filter((n) => n.agent_name === "/root/worker").length >= 2),
          reply.toolCall("list_agents", {}),
          // A message to an idle child stays queued: it starts no turn, so the next wait is idle.
          reply.toolCall("send_message", { target: "worker", message: "LATE NOTE" }),
          reply.toolCall("wait_agent", { timeout_ms: 5_000 }),
          verdict("04", (req) => {
            const notices = noticesIn(req).filter((n) => n.agent_name === "/root/worker");
            return [
              ...when(
                notices.every((n) => n.type === "completed") && notices.length === 2,
                `worker notices: ${notices.map((n) => n.type).join(", ")}`,
              ),
              ...when(
                String(notices[1]?.report).includes("followup_received"),
                "the second report lacks followup_received",
              ),
              ...when(
                listedStatus(req, "/root/worker") === "completed",
                "list_agents does not show the worker completed",
              ),
            ];
          }),
        ]).steps(),
        "/root/worker": [
          reply.toolCall("bash", { command: "sleep 2" }),
          reply.text("first turn done"),
          reply.text("followup_received"),
        ],
      }),
  },
  check: (state) => {
    const worker = agentOf(state, "/root/worker");
    const second = worker ? String(runMeta(state, worker, 1)?.task ?? "") : "";
    const events = worker ? runEvents(state, worker) : [];
    const readIn = events.map(
      (run) => run.filter((r) => r.type === "message_delivered" && String(r.text).includes("NOTE")).length,
    );
    return [
      ...expectAgent(state, "/root/worker", { role: "implementation", status: "completed", health: "healthy" }),
      ...when(
        (worker?.runs.length ?? 0) >= 2,
        `/root/worker ran ${worker?.runs.length ?? 0} turn(s); the follow-up needs a second`,
      ),
      ...when(
        callsOf(state, "send_message").some((c) => resultJson(c)?.delivered === "live"),
        "send_message to the busy worker was not delivered live",
      ),
      // The note reached the running first turn, once; the second turn got the follow-up alone.
      ...when(
        readIn[0] === 1 && readIn.slice(1).every((n) => n === 0),
        `the worker read NOTE in its runs ${JSON.stringify(readIn)} (want once, in the first)`,
      ),
      ...when(
        second.includes("SECOND TASK") && !second.includes("[MESSAGE from /root"),
        "the worker's second turn did not get SECOND TASK alone",
      ),
    ];
  },
};

export const interruptResume: StressScenario = {
  id: "05",
  name: "interrupt-resume",
  title: "a wait times out, interrupt a running child, resume it",
  prompts: [
    {
      marker: "05",
      text: `${preamble("05")} Call spawn_agent with task_name "slowpoke", agent_type "implementation", fork_turns "none" and message "Run sleep 60 with the bash tool, then answer back_online.". Call wait_agent with timeout_ms 5000 (it should time out). Then call interrupt_agent on "slowpoke" and list_agents. Then call followup_task to "slowpoke" with message "Do not run anything now; just answer back_online.", call wait_agent until its notice arrives, and call list_agents again. Conditions: the first wait_agent timed out; interrupt_agent returned previous_status "running"; the first list_agents shows slowpoke "interrupted"; the follow-up's notice has type "completed"; the last list_agents shows slowpoke "completed". ${markerInstruction("05")}`,
    },
  ],
  scripted: {
    script: (h) => {
      // The child sleeps on its first task and answers at once when followed up.
      const slowpoke = (req: ChatRequest) =>
        JSON.stringify(req.messages.at(-1)?.content ?? "").includes("FOLLOWUP_TASK")
          ? reply.text("back_online")
          : reply.toolCall("bash", { command: "sleep 60" });
      return single(h, {
        "/root": new Program([
          spawn({
            task_name: "slowpoke",
            agent_type: "implementation",
            fork_turns: "none",
            message: "Run sleep 60 with the bash tool, then answer back_online.",
          }),
          reply.toolCall("wait_agent", { timeout_ms: 1000 }),
          // Interrupt once the child really works on its task.
          waitWhile(() => h.requestsOf("/root/slowpoke").length === 0, 250),
          reply.toolCall("interrupt_agent", { target: "slowpoke" }),
          reply.toolCall("list_agents", {}),
          reply.toolCall("followup_task", {
            target: "slowpoke",
            message: "Do not run anything now; just answer back_online.",
          }),
          {
            loop: (req) =>
              noticesIn(req).some((n) => n.type === "completed")
                ? undefined
                : reply.toolCall("wait_agent", { timeout_ms: 30_000 }),
          },
          reply.toolCall("list_agents", {}),
          verdict("05", (req) => {
            const lists = resultsIn(req, "list_agents").map((r) => (r.agents as Json[] | undefined)?.[0]?.agent_status);
            return [
              ...when(
                resultsIn(req, "wait_agent", { timeout_ms: 1000 })[0]?.timed_out === true,
                "the first wait did not time out",
              ),
              ...when(
                resultsIn(req, "interrupt_agent")[0]?.previous_status === "running",
                "interrupt_agent did not report previous_status running",
              ),
              ...when(
                lists[0] === "interrupted" && lists.at(-1) === "completed",
                `list_agents showed ${lists.join(" then ")}`,
              ),
              ...when(
                noticeOf(req, "/root/slowpoke") !== undefined && noticesIn(req).some((n) => n.type === "completed"),
                "no completed notice after the follow-up",
              ),
            ];
          }),
        ]).steps(),
        "/root/slowpoke": Array.from({ length: 10 }, () => slowpoke),
      });
    },
  },
  check: (state) => {
    const slowpoke = agentOf(state, "/root/slowpoke");
    const results = slowpoke ? runResults(state, slowpoke) : [];
    const lists = listsSeen(state).map((agents) => agents.find((a) => a.agent_name === "/root/slowpoke")?.agent_status);
    return [
      ...expectAgent(state, "/root/slowpoke", { status: "completed", health: "healthy" }),
      ...when(
        results[0]?.status === "interrupted",
        `slowpoke's first run ended ${results[0]?.status ?? "without result.json"}, expected interrupted`,
      ),
      ...when(results.at(-1)?.status === "completed", "slowpoke's last run did not complete"),
      ...when(
        callsOf(state, "wait_agent").some((c) => resultJson(c)?.timed_out === true),
        "no wait_agent timed out",
      ),
      ...when(
        callsOf(state, "interrupt_agent").some((c) => resultJson(c)?.previous_status === "running"),
        "interrupt_agent never stopped a running turn",
      ),
      ...when(lists.includes("interrupted"), "list_agents never showed slowpoke interrupted"),
      ...when(
        noticesSeen(state).some((n) => n.agent_name === "/root/slowpoke" && n.type === "interrupted"),
        "no interrupted notice reached the root",
      ),
    ];
  },
};

export const failureIsolation: StressScenario = {
  id: "06",
  name: "failure-isolation",
  title: "a child whose work fails completes healthy; its sibling is unaffected",
  prompts: [
    {
      marker: "06",
      text: `${preamble("06")} In ONE message, call spawn_agent twice: task_name "doomed", agent_type "implementation", fork_turns "none", message "Read the file missing-file.txt with the read tool, then run exit 1 with the bash tool, then report both errors."; and task_name "healthy", agent_type "scout", fork_turns "none", message "Read the first line of README.md in your working directory and report it verbatim.". Call wait_agent until both notices arrive, then call list_agents. Conditions: both children reached a final status; /root/healthy completed with the README line in its report; the root carried on after doomed's errors. ${markerInstruction("06")}`,
    },
  ],
  scripted: {
    script: (h) =>
      single(h, {
        "/root": new Program([
          reply.toolCalls([
            {
              name: "spawn_agent",
              args: {
                task_name: "doomed",
                agent_type: "implementation",
                fork_turns: "none",
                message: "Read missing-file.txt, then run exit 1, then report both errors.",
              },
            },
            {
              name: "spawn_agent",
              args: {
                task_name: "healthy",
                agent_type: "scout",
                fork_turns: "none",
                message: "Read the first line of README.md and report it verbatim.",
              },
            },
          ]),
          waitForAll(["/root/doomed", "/root/healthy"]),
          reply.toolCall("list_agents", {}),
          verdict("06", (req) => [
            ...completedIn(req, ["/root/healthy"]),
            ...when(
              String(noticeOf(req, "/root/healthy")?.report).includes(README_LINE),
              "healthy's report lacks the README line",
            ),
            ...when(noticeOf(req, "/root/doomed") !== undefined, "no notice from doomed"),
          ]),
        ]).steps(),
        "/root/doomed": [
          reply.toolCall("read", { path: "missing-file.txt" }),
          reply.toolCall("bash", { command: "exit 1" }),
          reply.text("Both failed: the file is missing and exit 1 failed."),
        ],
        "/root/healthy": [reply.toolCall("read", { path: "README.md", limit: 1 }), reply.text(README_LINE)],
      }),
  },
  check: (state) => {
    const doomed = agentOf(state, "/root/doomed");
    const errors = doomed
      ? runEvents(state, doomed)
          .flat()
          .filter((e) => e.type === "tool_result" && e.isError === true).length
      : 0;
    return [
      // Failed work is not a failed agent: doomed still answered, so it completed healthy.
      ...expectAgent(state, "/root/doomed", { status: "completed", health: "healthy" }),
      ...expectAgent(state, "/root/healthy", { role: "scout", status: "completed", health: "healthy" }),
      ...when(errors > 0, "doomed hit no tool error (its task was to fail)"),
      ...when(
        noticesSeen(state).some((n) => n.agent_name === "/root/healthy" && String(n.report).includes(README_LINE)),
        "healthy's notice lacks the README line",
      ),
    ];
  },
};
