/**
 * subagent-wrapper with meta.json `limits`, against the fake pi running the
 * wrapper's real task extension: at a limit the wrapper writes the wrap-up message into the
 * run's inbox (a private one when meta.json names none), the extension steers it into pi,
 * and the run ends `completed` with an answer in the grace, else `interrupted` once the grace
 * is over — result.json carrying `limit` either way.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { answer, bashCall, LOAD, start, toolThenSteer } from "../support/limit-steps.js";
import { killAll } from "../support/processes.js";
import { cleanupWrapperCases, defaultMeta, type WrapperRunOutput, wrapperCase } from "../support/wrapper-harness.js";

const boards: string[] = [];
afterEach(async () => {
  await killAll();
  await cleanupWrapperCases();
  for (const dir of boards.splice(0)) await rm(dir, { recursive: true, force: true });
});

const types = (run: WrapperRunOutput) => run.events.map((e) => e.type);

/** A case; its wrapper's TMPDIR (where a private inbox goes) is the case's `tmp/`, to see it is gone afterwards. */
async function limitsCase(steps: object[], meta: Record<string, unknown>) {
  const wrapper = await wrapperCase({ scenario: { steps }, meta: defaultMeta(meta) });
  return { wrapper, run: () => wrapper.run({ env: LOAD }), tmp: path.join(wrapper.dir, "tmp") };
}

describe("subagent-wrapper with limits", () => {
  it("max_turns reached → the wrap-up reaches the child before its next request (private inbox) → its answer ends the run completed, with limit", async () => {
    const { run, tmp } = await limitsCase(
      [...start, bashCall("c1", "looking"), ...toolThenSteer("c1"), answer("done: A; left: B; files: clean")],
      { limits: { max_turns: 1 } },
    );
    const out = await run();
    expect(out.result).toMatchObject({
      status: "completed",
      finalText: "done: A; left: B; files: clean",
      limit: { name: "max_turns", value: 1, used: 1 },
      forcedExit: false,
    });
    expect(types(out)).toEqual([
      "run_start",
      "assistant_text",
      "limit",
      "tool_call",
      "tool_result",
      "message_delivered",
      "assistant_text",
      "run_end",
    ]);
    const delivered = out.events.find((e) => e.type === "message_delivered") as { id: string; text: string };
    expect(delivered.id).toBe("limit-wrap-up");
    expect(delivered.text).toMatch(/^\[LIMIT max_turns\] .*1 of 1 model requests.*start nothing new/);
    expect(out.events.find((e) => e.type === "limit")).toMatchObject({ phase: "reached", name: "max_turns" });
    // The private inbox (and the task file) went with the run.
    expect(await readdir(tmp)).toEqual([]);
  });

  it("a child that ignores the wrap-up is stopped after grace_turns requests: interrupted, its last text the report, limit kept, the process gone", async () => {
    const { run } = await limitsCase(
      [
        ...start,
        bashCall("c1", "first look"),
        ...toolThenSteer("c1"),
        bashCall("c2", "still digging"),
        { tool: { id: "c2", name: "bash", output: "ok" } },
        { linger: null },
      ],
      { limits: { max_turns: 1, grace_turns: 1 }, inboxPath: "inbox" },
    );
    const out = await run();
    expect(out.result).toMatchObject({
      status: "interrupted",
      exitCode: 1,
      finalText: "still digging",
      limit: { name: "max_turns", value: 1, used: 1 },
      forcedExit: true,
      childSignal: null,
      childExitCode: 143,
    });
    expect(out.result?.errorMessage).toBe(
      "limit max_turns reached (1 of 1): no answer within the grace of 1 model request",
    );
    expect(out.events.filter((e) => e.type === "limit").map((e) => (e as { phase: string }).phase)).toEqual([
      "reached",
      "stopped",
    ]);
    // A shared inbox keeps what the child read in delivered/; nothing of the wrapper's is left in it.
    expect((await readdir(path.join(out.dir, "inbox"))).sort()).toEqual(["delivered"]);
  });

  it("time_limit reached on a child that never reads the wrap-up: stopped grace_seconds later, interrupted with limit", async () => {
    const { run } = await limitsCase([...start, bashCall("c1", "a long job"), { linger: null }], {
      limits: { time_limit: 0.5, grace_seconds: 0.5 },
    });
    const began = Date.now();
    const out = await run();
    expect(out.result).toMatchObject({
      status: "interrupted",
      finalText: "a long job",
      limit: { name: "time_limit", value: 0.5 },
      forcedExit: true,
    });
    expect(out.result?.limit?.used).toBeGreaterThanOrEqual(0.5);
    expect(out.result?.errorMessage).toMatch(/^limit time_limit reached .*: no answer within the grace of 0\.5 s$/);
    expect(Date.now() - began).toBeGreaterThanOrEqual(1000);
  });

  it("max_tokens and max_cost count the child's usage: each reached once, answered within the grace", async () => {
    // The fake's usage: 10 in + 5 out = 15 tokens and $0.001 a request.
    for (const [limits, expected] of [
      [{ max_tokens: 30 }, { name: "max_tokens", value: 30, used: 30 }],
      [{ max_cost: 0.002 }, { name: "max_cost", value: 0.002, used: 0.002 }],
    ] as const) {
      const { run } = await limitsCase(
        [
          ...start,
          bashCall("c1"),
          { tool: { id: "c1", name: "bash" } },
          { turnEnd: true },
          { turnStart: true },
          bashCall("c2"),
          ...toolThenSteer("c2"),
          answer("wrapped up"),
        ],
        { limits },
      );
      const out = await run();
      expect(out.result).toMatchObject({ status: "completed", finalText: "wrapped up", limit: expected });
    }
  });

  it("a wrap-up that cannot be written (the inbox is a file) stops the run at once: interrupted, saying why", async () => {
    const { wrapper, run } = await limitsCase([...start, bashCall("c1", "busy"), { linger: null }], {
      limits: { max_turns: 1 },
      inboxPath: "not-a-folder",
    });
    await writeFile(path.join(wrapper.dir, "not-a-folder"), "");
    const out = await run();
    expect(out.result).toMatchObject({
      status: "interrupted",
      finalText: "busy",
      limit: { name: "max_turns", value: 1, used: 1 },
      forcedExit: true,
    });
    expect(out.result?.errorMessage).toMatch(
      /^limit max_turns reached \(1 of 1\): the wrap-up message could not be given to the child \(.*not-a-folder\/limit-wrap-up\.json: ENOTDIR/,
    );
    expect(out.durationMs).toBeLessThan(10_000);
  });

  it("a meta.json with bad limits is a usage error naming each key", async () => {
    const wrapper = await wrapperCase({
      scenario: { steps: [...start, answer("x")] },
      meta: defaultMeta({ limits: { max_turns: 0, speed: 3 } }),
    });
    const out = await wrapper.run({ env: LOAD });
    expect(out.code).toBe(2);
    expect(out.stderr).toContain("meta.json field limits.max_turns must be a positive whole number, not 0");
    expect(out.stderr).toContain('meta.json field limits: unknown key "speed"');
  });
});

describe("subagent-wrapper with the tree's budget", () => {
  it("what is left of the tree's budget (meta env) wraps the turn up like a limit: tree_budget_tokens, stopped after the grace", async () => {
    // The fake's usage: 15 tokens a request (totalTokens, cache included, as the budget counts them).
    const { run } = await limitsCase(
      [
        ...start,
        bashCall("c1", "spending"),
        { tool: { id: "c1", name: "bash" } },
        { turnEnd: true },
        { turnStart: true },
        bashCall("c2", "spending more"),
        ...toolThenSteer("c2"),
        bashCall("c3", "ignoring it"),
        { linger: null },
      ],
      { limits: { grace_turns: 1 }, env: { PI_SUBAGENTS_BUDGET_LEFT_TOKENS: "20" } },
    );
    const out = await run();
    expect(out.result).toMatchObject({
      status: "interrupted",
      finalText: "ignoring it",
      limit: { name: "tree_budget_tokens", value: 20, used: 30 },
    });
    const delivered = out.events.find((e) => e.type === "message_delivered") as { text: string };
    expect(delivered.text).toMatch(/^\[LIMIT tree_budget_tokens\] .*30 of 20 tokens of the tree's budget/);
  });

  it("an answer that crosses what was left is the turn's answer: completed, not labelled a wrap-up", async () => {
    const { run } = await limitsCase(
      [
        ...start,
        bashCall("c1"),
        { tool: { id: "c1", name: "bash" } },
        { turnEnd: true },
        { turnStart: true },
        answer("all done"),
      ],
      { limits: {}, env: { PI_SUBAGENTS_BUDGET_LEFT_TOKENS: "20" } },
    );
    const out = await run();
    expect(out.result).toMatchObject({ status: "completed", finalText: "all done" });
    expect(out.result!.limit).toBeUndefined();
    expect(types(out)).not.toContain("limit");
  });

  it("a turn beside others is wrapped up once the tree has spent what was left, its own use under it", async () => {
    const board = await mkdtemp(path.join(os.tmpdir(), "budget-board-case-"));
    boards.push(board);
    // Another turn of the tree had used 40 tokens when this one started: only what it adds counts.
    await writeFile(path.join(board, "other.json"), JSON.stringify({ tokens: 40, cost: 0 }));
    const { run } = await limitsCase(
      [
        ...start,
        // The other turn spends 90 more while this one works; this one's 15 makes the tree's 105.
        { writeFile: { path: path.join(board, "other.json"), text: JSON.stringify({ tokens: 130, cost: 0 }) } },
        bashCall("c2", "working"),
        ...toolThenSteer("c2"),
        answer("done: A; left: B"),
      ],
      {
        limits: {},
        runId: "N1-0001-spawn",
        env: { PI_SUBAGENTS_BUDGET_LEFT_TOKENS: "100", PI_SUBAGENTS_BUDGET_BOARD: board },
      },
    );
    const out = await run();
    expect(out.result).toMatchObject({
      status: "completed",
      finalText: "done: A; left: B",
      limit: { name: "tree_budget_tokens", value: 100, used: 105 },
    });
    const delivered = out.events.find((e) => e.type === "message_delivered") as { text: string };
    expect(delivered.text).toMatch(/^\[LIMIT tree_budget_tokens\] .*105 of 100 tokens of the tree's budget/);
    // Its own use is posted for the others, its answer included.
    expect(JSON.parse(await readFile(path.join(board, "N1-0001-spawn.json"), "utf8"))).toEqual({
      tokens: 30,
      cost: 0.002,
    });
  });

  it("the person's no at the tree's spend gate wraps a running turn up (tree_budget_cost), as a spent tree budget does", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "spend-gate-case-"));
    boards.push(dir);
    const gate = path.join(dir, "spend-gate.json");
    const open = { version: 1, every_usd: 0.5, ceiling_usd: 1, person: true };
    await writeFile(gate, JSON.stringify(open));
    const declined = { ...open, declined: { spent_usd: 1.2, by: "no", at: "2030-01-01T00:00:00.000Z" } };
    const { run } = await limitsCase(
      [
        ...start,
        // The person says no while this turn works.
        { writeFile: { path: gate, text: JSON.stringify(declined) } },
        bashCall("c2", "working"),
        ...toolThenSteer("c2"),
        answer("done: A; left: B"),
      ],
      { limits: {}, runId: "N1-0001-spawn", env: { PI_SUBAGENTS_SPEND_GATE: gate } },
    );
    const out = await run();
    expect(out.result).toMatchObject({
      status: "completed",
      finalText: "done: A; left: B",
      limit: { name: "tree_budget_cost", value: 1, used: 1.2 },
    });
  });

  for (const mode of ["json", "rpc"] as const) {
    it(`${mode} mode: a wrap-up that comes while the model writes its final answer is never handed to pi (no extra request), and the answered turn carries no limit`, async () => {
      const board = await mkdtemp(path.join(os.tmpdir(), "budget-board-case-"));
      boards.push(board);
      const { run } = await limitsCase(
        [
          ...start,
          bashCall("c1"),
          { tool: { id: "c1", name: "bash" } },
          { turnEnd: true },
          { turnStart: true },
          // The tree's budget is crossed by another turn while this model writes its answer:
          // after the tool call's turn has ended (the pause lets the wrapper read that end
          // first), and read from the board (every 500 ms) well before the answer's end.
          { sleep: 150 },
          { writeFile: { path: path.join(board, "other.json"), text: JSON.stringify({ tokens: 500, cost: 0 }) } },
          { sleep: 900 },
          answer("all done"),
          { turnEnd: true },
          // pi reads its steering queue at the answer's end: whatever was handed would make it go on.
          { awaitSteer: 300 },
          { steer: true },
          { agentEnd: true, willRetry: false },
        ],
        {
          limits: {},
          env: { PI_SUBAGENTS_BUDGET_LEFT_TOKENS: "100", PI_SUBAGENTS_BUDGET_BOARD: board },
          ...(mode === "rpc" && { dialogs: { timeoutMs: 60_000 } }),
        },
      );
      const out = await run();
      expect(out.result).toMatchObject({ status: "completed", finalText: "all done" });
      expect(out.result!.limit).toBeUndefined();
      // Reached while the answer streamed, but never in pi's queue nor its conversation.
      expect(out.events.find((e) => e.type === "limit")).toMatchObject({
        phase: "reached",
        name: "tree_budget_tokens",
      });
      expect(types(out)).not.toContain("message_delivered");
      expect(await out.read("out/stdout.log")).not.toContain("[LIMIT tree_budget_tokens]");
    });
  }
});
