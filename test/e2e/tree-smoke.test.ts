import { afterEach, describe, expect, it } from "vitest";
import { REPO_ROOT, makePiHome } from "../support/pi-home.js";
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
        reply.toolCall("spawn_agent", { task_name: "scout_one", message: "Read README line 1", agent_type: "scout", fork_turns: "none" }),
        reply.toolCall("wait_agent", { timeout_ms: 20000 }),
        reply.toolCall("list_agents", {}),
        reply.text("ROOT DONE"),
      ],
      "/root/scout_one": [reply.text("child report: # hello")],
    });
    const run = await home.runPi(["--mode", "json", "-np", "-e", REPO_ROOT, "go"], { timeoutMs: 60_000, env: { ...home.env, PI_SUBAGENTS_DIR: `${home.root}/trees` } });
    console.log(run.stderr.slice(-2000));
    const root = tree.requests.get("/root")!;
    console.log(JSON.stringify(root.map((r) => lastToolResult(r)), null, 1).slice(0, 4000));
    expect(run.code).toBe(0);
    expect(lastToolResult(root[1]!)).toMatchObject({ agent_name: "/root/scout_one", role: "scout" });
  });
});
