/**
 * The user's stress report (seeds/003), scenarios 01–06, against the real pi CLI loading the
 * extension, with a scripted root model and scripted children (test/support/tree-harness.ts).
 * Each scenario asserts on what the root model received (its tool results), on each child's
 * LLM requests, on the tree directory's records, and that no process of the tree survives.
 */
import { afterEach, describe, expect, it } from "vitest";
import { describePid, startTree, type TreeHarness, type TreeOptions } from "../support/tree-harness.js";
import { reply, systemText, userTexts } from "../support/scripted-llm.js";

let harnesses: TreeHarness[] = [];
afterEach(async () => {
  for (const h of harnesses.reverse()) await h.cleanup();
  harnesses = [];
});

async function tree(opts: TreeOptions): Promise<TreeHarness> {
  const h = await startTree(opts);
  harnesses.push(h);
  return h;
}

type Json = Record<string, any>;

async function expectNoSurvivors(h: TreeHarness): Promise<void> {
  const alive = await h.survivors();
  expect(alive.map(describePid)).toEqual([]);
}

function expectCleanExit(run: { code: number | null; timedOut: boolean; stderr: string }): void {
  expect(run.timedOut, run.stderr.slice(-2000)).toBe(false);
  expect(run.code, run.stderr.slice(-2000)).toBe(0);
}

const toolNames = (req: { tools?: Array<{ function: { name: string } }> }) => (req.tools ?? []).map((t) => t.function.name).sort();

describe("stress scenarios 01–06 (real pi, scripted models)", () => {
  it("01 basic: list_models, spawn a scout, wait, list_agents", async () => {
    const h = await tree({
      scripts: {
        "/root": [
          reply.toolCall("list_models", {}),
          reply.toolCall("spawn_agent", { task_name: "scout_one", message: "Read README line 1", agent_type: "scout", fork_turns: "none" }),
          reply.toolCall("wait_agent", { timeout_ms: 20_000 }),
          reply.toolCall("list_agents", {}),
          reply.text("ROOT DONE"),
        ],
        "/root/scout_one": [reply.text("SCOUT REPORT: # hello")],
      },
    });
    const run = await h.runRoot("go");
    expectCleanExit(run);
    const [, models, spawn, wait, list] = h.rootResults() as Json[];

    const fast = models!.models.find((m: Json) => m.model === "fake/fast");
    expect(fast).toMatchObject({ reasoning_levels: ["off", "minimal", "low", "medium", "high"], context_window: expect.any(Number) });
    expect(models!.models.find((m: Json) => m.model === "fake/deep")?.reasoning_levels).toEqual(["off", "high", "xhigh"]);
    expect(models!.scoped ?? false).toBe(false);

    expect(spawn).toMatchObject({ agent_name: "/root/scout_one", role: "scout", model: "fake/fast", reasoning: "low" });
    expect(spawn!.nickname).toEqual(expect.any(String));
    expect(["running", "pending_init"]).toContain(spawn!.agent_status);

    expect(wait!.timed_out).toBe(false);
    expect(wait!.notices).toHaveLength(1);
    expect(wait!.notices[0]).toMatchObject({
      agent_name: "/root/scout_one",
      nickname: spawn!.nickname,
      type: "completed",
      agent_status: "completed",
      health: "healthy",
      model: "fake/fast",
      reasoning: "low",
      report: "SCOUT REPORT: # hello",
    });

    expect(list!.agents).toHaveLength(1);
    expect(list!.agents[0]).toMatchObject({
      agent_name: "/root/scout_one",
      nickname: spawn!.nickname,
      agent_status: "completed",
      health: "healthy",
      role: "scout",
      model: "fake/fast",
      reasoning: "low",
    });

    // F-02: the scout gets the role's whole read-only tool set, nothing else.
    const scoutReqs = h.requestsOf("/root/scout_one");
    expect(scoutReqs).toHaveLength(1);
    expect(toolNames(scoutReqs[0]!)).toEqual(["find", "grep", "ls", "read"]);
    // F-07: its path is a coordination identifier, not a filesystem path.
    const sys = systemText(scoutReqs[0]!);
    expect(sys).toContain("/root/scout_one");
    expect(sys).toMatch(/coordination identifier[^.]*not a filesystem path/);
    expect(userTexts(scoutReqs[0]!).join("\n")).toContain("Read README line 1");

    await expectNoSurvivors(h);
  });
});
