import { describe, expect, it } from "vitest";
import type { AgentRecordV1 } from "../../../../src/contracts/tree.js";
import { emptyUsage } from "../../../../src/contracts/usage.js";
import { emptyRunProgress } from "../../../../src/extension/progress/events-tail.js";
import type { AgentProgress } from "../../../../src/extension/progress/progress.js";
import type { Painter } from "../../../../src/extension/ui/paint.js";
import {
  DISPLAY_KEY,
  describeAgent,
  formatElapsed,
  formatTokens,
  statusLine,
  TreeDisplay,
  treeLines,
  widgetLines,
} from "../../../../src/extension/ui/widget.js";
import { FakeClock } from "../../../support/fake-clock.js";
import { agentRecord } from "../../../support/records.js";

function agent(overrides: Partial<AgentRecordV1>, extra: Partial<AgentProgress> = {}): AgentProgress {
  const record = agentRecord(overrides);
  const usage = emptyUsage();
  usage.totalTokens = 1200;
  usage.cost.total = 0.0036;
  return { record, usage, subtreeUsage: { input: 0, output: 0, total_tokens: 1200, cost: 0.0036 }, ...extra };
}

describe("formatting", () => {
  it.each([
    [0, "0"],
    [999, "999"],
    [1234, "1.2k"],
    [56_789, "57k"],
    [2_345_678, "2.3M"],
  ])("%i tokens read %s", (n, text) => expect(formatTokens(n)).toBe(text));

  it.each([
    [0, "0s"],
    [59_999, "59s"],
    [65_000, "1m05s"],
    [3_725_000, "1h02m"],
  ])("%i ms read %s", (ms, text) => expect(formatElapsed(ms)).toBe(text));
});

/** A painter that shows which colour each word got. */
const tagged: Painter = { fg: (color, text) => `<${color}>${text}</${color}>`, bold: (text) => `**${text}**` };

describe("the widget and the status line", () => {
  const run = { ...emptyRunProgress(), turns: 3, toolCalls: 2 };
  run.openTools.set("c", "bash");
  const tree = [
    agent(
      { path: "/root/lead", nickname: "Euclid", status: "running", spawnSeq: 1, runs: ["0001-spawn", "0002-followup"] },
      { run, elapsedMs: 12_000, subtreeUsage: { input: 0, output: 0, total_tokens: 2400, cost: 0.0072 } },
    ),
    agent({ path: "/root/scout", nickname: "Hypatia", status: "pending_init", spawnSeq: 2 }, { queuePosition: 1 }),
    agent(
      {
        path: "/root/lead/check",
        nickname: "Ptolemy",
        status: "completed",
        model: "fake/deep",
        spawnSeq: 3,
        runs: ["0001-spawn"],
      },
      { elapsedMs: 4_000 },
    ),
  ];

  it("shows the tree in tree order; counters say what they count (the agent's turn, this run's calls, every turn's tokens)", () => {
    expect(widgetLines("/root", tree, { tokens: 50_000 })).toEqual([
      "subagents · 3 agents: 1 running, 1 queued, 1 completed · 3.6k tok total · $0.0108 (budget 50k tok)",
      "├─ lead (Euclid) · running · fake/fast · 12s · bash · turn 2 · 2 calls this run · 1.2k tok total · $0.0036 · subtree 2.4k tok · $0.0072",
      "│ └─ check (Ptolemy) · completed · fake/deep · 4s · 1.2k tok total · $0.0036",
      "└─ scout (Hypatia) · queued #1 · fake/fast · 1.2k tok total · $0.0036",
    ]);
  });

  it("a turn queued because its runner is full across the tree says which runner and how full", () => {
    const queued = agent(
      { path: "/root/boxed", nickname: "Noether", status: "pending_init", spawnSeq: 1 },
      { queuePosition: 1, waitingFor: "runner box (3/3 in use)" },
    );
    expect(describeAgent(queued)).toContain("queued #1 for runner box (3/3 in use)");
  });

  it("draws ├─ for every sibling but the last, └─ for the last, and │ below a parent that has later siblings", () => {
    const paths = ["/root/a", "/root/a/x", "/root/a/x/deep", "/root/a/y", "/root/b", "/root/b/z"];
    const agents = paths.map((p, i) => agent({ path: p, nickname: `N${i}`, status: "running", spawnSeq: i + 1 }));
    expect(treeLines("/root", agents).map((line) => line.slice(0, line.indexOf(" (")))).toEqual([
      "├─ a",
      "│ ├─ x",
      "│ │ └─ deep",
      "│ └─ y",
      "└─ b",
      "  └─ z",
    ]);
  });

  it("the status line tells completed, errored, aborted, interrupted and shut down apart, errors in the error colour", () => {
    const ended = (["completed", "errored", "errored", "aborted", "interrupted", "shutdown"] as const).map(
      (status, i) => agent({ path: `/root/a${i}`, nickname: `N${i}`, status, spawnSeq: i + 1 }),
    );
    expect(statusLine(ended)).toBe(
      "agents: 1 completed, 2 errored, 1 aborted, 1 interrupted, 1 shutdown · 7.2k tok · $0.0216",
    );
    expect(statusLine(ended, undefined, tagged)).toBe(
      "agents: <success>1 completed</success>, <error>2 errored</error>, <warning>1 aborted</warning>, <warning>1 interrupted</warning>, <muted>1 shutdown</muted> · 7.2k tok · $0.0216",
    );
    expect(statusLine(tree)).toBe("agents: 1 running, 1 queued, 1 completed · 3.6k tok · $0.0108");
    expect(statusLine([])).toBeUndefined();
  });

  it("folds away once every agent has ended: no widget, the status line alone", () => {
    const ended = [
      agent({ path: "/root/a", status: "completed" }),
      agent({ path: "/root/b", nickname: "B", status: "errored", spawnSeq: 2 }),
    ];
    expect(widgetLines("/root", ended)).toBeUndefined();
    expect(widgetLines("/root", [])).toBeUndefined();
    expect(statusLine(ended)).toBe("agents: 1 completed, 1 errored · 2.4k tok · $0.0072");
    // /agents still lists every agent of a folded tree.
    expect(treeLines("/root", ended)).toEqual([
      "├─ a (Euclid) · completed · fake/fast · 1.2k tok total · $0.0036",
      "└─ b (B) · errored · fake/fast · 1.2k tok total · $0.0036",
    ]);
  });

  it("paints each agent's status, tool and retry in theme colours", () => {
    const retrying = { ...emptyRunProgress(), retrying: true };
    const line = describeAgent(
      agent({ path: "/root/x", status: "running" }, { run: retrying, elapsedMs: 1000 }),
      tagged,
    );
    expect(line).toBe(
      "x (Euclid) · <accent>running</accent> · fake/fast · 1s · <warning>retrying</warning> · 1.2k tok total · $0.0036",
    );
    expect(describeAgent(agent({ status: "errored" }), tagged)).toContain("<error>errored</error>");
  });

  it("stays within pi's 10 widget lines, keeping running agents and saying how many are hidden", () => {
    const many = Array.from({ length: 14 }, (_, i) =>
      agent({ path: `/root/a${i}`, nickname: `N${i}`, spawnSeq: i + 1, status: i === 12 ? "running" : "completed" }),
    );
    const lines = widgetLines("/root", many)!;
    expect(lines).toHaveLength(10);
    expect(lines.some((l) => l.includes("a12 (N12) · running"))).toBe(true);
    expect(lines.at(-1)).toBe("   … 6 more (/agents lists every agent)");
  });
});

describe("a child's notify", () => {
  it("shows on its running line, cut short; not once it has ended", () => {
    const run = { ...emptyRunProgress(), notified: { message: `Formatting\n${"x".repeat(80)}`, at: 1 } };
    const running = describeAgent({ ...agent({ path: "/root/a", status: "running" }), run });
    expect(running).toContain(` · Formatting ${"x".repeat(48)}…`);
    expect(describeAgent({ ...agent({ path: "/root/a", status: "completed" }), run })).not.toContain("Formatting");
  });
});

describe("TreeDisplay", () => {
  it("counts the child dialogs waiting for the person on the status line and the widget's header", async () => {
    const drawn: Record<string, unknown> = {};
    const ui = {
      setStatus: (_key: string, text: string | undefined) => (drawn.status = text),
      setWidget: (_key: string, lines: string[] | undefined) => (drawn.widget = lines),
    };
    const display = new TreeDisplay(ui, "/root", async () => [agent({ path: "/root/a", status: "running" })]);
    let waiting = 2;
    display.dialogsWaiting = () => waiting;
    await display.refresh();
    expect(drawn.status).toMatch(/ · 2 dialogs waiting$/);
    expect((drawn.widget as string[])[0]).toMatch(/ · 2 dialogs waiting$/);
    waiting = 0;
    await display.refresh();
    expect(drawn.status).not.toMatch(/dialog/);
    expect((drawn.widget as string[])[0]).not.toMatch(/dialog/);
  });

  it("redraws only on change and, once stopped, clears the UI, holds no timer and draws nothing more", async () => {
    const clock = new FakeClock();
    const calls: Array<[string, string, unknown]> = [];
    const ui = {
      setStatus: (key: string, text: string | undefined) => calls.push(["status", key, text]),
      setWidget: (key: string, lines: string[] | undefined) => calls.push(["widget", key, lines]),
    };
    let agents = [agent({ path: "/root/a", status: "running" }, { elapsedMs: 1000 })];
    const display = new TreeDisplay(ui, "/root", async () => agents, undefined, undefined, clock);
    display.start(1000);
    await clock.advance(0);
    expect(calls.map(([kind, key]) => `${kind}:${key}`)).toEqual([`status:${DISPLAY_KEY}`, `widget:${DISPLAY_KEY}`]);
    await clock.advance(1000);
    expect(calls).toHaveLength(2); // nothing changed, nothing sent
    agents = [agent({ path: "/root/a", status: "running" }, { elapsedMs: 2000 })];
    await clock.advance(1000);
    expect(calls).toHaveLength(3); // the widget's elapsed time changed; the status line did not
    expect(calls[2]![0]).toBe("widget");
    display.stop();
    expect(calls.slice(3)).toEqual([
      ["status", DISPLAY_KEY, undefined],
      ["widget", DISPLAY_KEY, undefined],
    ]);
    expect(clock.pending().length).toBe(0);
    await display.refresh();
    expect(calls).toHaveLength(5);
  });

  it("freeze() draws a last frame without the running agents and keeps it: no refresh draws over it, stop() leaves its status", async () => {
    const calls: Array<[string, unknown]> = [];
    const ui = {
      setStatus: (_key: string, text: string | undefined) => calls.push(["status", text]),
      setWidget: (_key: string, lines: string[] | undefined) => calls.push(["widget", lines]),
    };
    const display = new TreeDisplay(ui, "/root", async () => [agent({ path: "/root/a", status: "running" })]);
    await display.refresh();
    expect(display.lastRecords().map((r) => r.status)).toEqual(["running"]);
    expect(calls.at(-1)![0]).toBe("widget");
    display.freeze("agents: stopping 1 running");
    expect(calls.slice(-2)).toEqual([
      ["status", "agents: stopping 1 running"],
      ["widget", undefined],
    ]);
    const drawn = calls.length;
    await display.refresh();
    display.stop();
    expect(calls).toHaveLength(drawn);
  });
});
