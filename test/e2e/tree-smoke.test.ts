import { afterEach, describe, expect, it } from "vitest";
import { makePiHome, REPO_ROOT } from "../support/pi-home.js";
import { killAll } from "../support/processes.js";
import { reply, startScriptedLlm } from "../support/scripted-llm.js";
import { lastToolResult, routeByAgent } from "../support/tree-llm.js";

let cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await killAll();
  for (const c of cleanups.reverse()) await c();
  cleanups = [];
});

describe("extension smoke", () => {
  it("root spawns a scout, waits, and gets its report", async () => {
    const llm = await startScriptedLlm();
    cleanups.push(() => llm.close());
    const home = await makePiHome({ llmUrl: llm.url });
    cleanups.push(() => home.cleanup());
    const tree = routeByAgent(llm, {
      "/root": [
        reply.toolCall("spawn_agent", {
          task_name: "scout_one",
          message: "Read README line 1",
          agent_type: "scout",
          fork_turns: "none",
        }),
        reply.toolCall("wait_agent", { timeout_ms: 20000 }),
        reply.toolCall("list_agents", {}),
        reply.text("ROOT DONE"),
      ],
      "/root/scout_one": [reply.text("child report: # hello")],
    });
    const run = await home.runPi(["--mode", "json", "-np", "-e", REPO_ROOT, "go"], {
      timeoutMs: 60_000,
      env: { ...home.env, PI_SUBAGENTS_DIR: `${home.root}/trees` },
    });
    const root = tree.requests.get("/root")!;
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    expect(lastToolResult(root[1]!)).toMatchObject({ agent_name: "/root/scout_one", role: "scout" });
    // What the root's model was given back by wait_agent: the scout's one notice, with its report.
    expect(lastToolResult(root[2]!)).toMatchObject({
      notices: [
        {
          type: "completed",
          agent_name: "/root/scout_one",
          agent_status: "completed",
          report: "child report: # hello",
          report_stored: true,
        },
      ],
      pending: 0,
      timed_out: false,
    });
  });
});

describe("loading the extension", () => {
  it("`pi install <checkout>` loads it in every later session, with no other step", async () => {
    const llm = await startScriptedLlm();
    cleanups.push(() => llm.close());
    const home = await makePiHome({ llmUrl: llm.url });
    cleanups.push(() => home.cleanup());
    const install = await home.runPi(["install", REPO_ROOT], { timeoutMs: 60_000 });
    expect(install.code, install.stderr).toBe(0);
    llm.script([reply.text("hello")]);
    const run = await home.runPi(["--mode", "json", "-np", "hi"], { timeoutMs: 60_000 });
    expect(run.code, run.stderr).toBe(0);
    const offered = (llm.requests[0]!.tools ?? []).map((tool) => tool.function.name);
    expect(offered).toEqual(
      expect.arrayContaining([
        "spawn_agent",
        "wait_agent",
        "list_agents",
        "send_message",
        "followup_task",
        "interrupt_agent",
        "close_agent",
        "list_models",
        "get_agent_report",
      ]),
    );
  });
});
