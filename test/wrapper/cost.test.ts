/**
 * `subagent-wrapper cost <tree dir> [--json | --csv]` against tree directories written as the
 * extension lays them out: each agent's path, role, models, turns, model requests, repairs,
 * tokens, USD and wall time, each subtree's total (list_agents' roll-up), a running turn's
 * spend so far; CSV a spreadsheet opens (header, one row per agent, RFC 4180); bad input one line.
 */
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { rollUp, usageTotals } from "../../src/contracts/usage.js";
import { turnResult } from "../support/fake-turns.js";
import { runProcess } from "../support/processes.js";
import { makeTreeDir, usageOf, writeAgent } from "../support/tree-fixture.js";
import { WRAPPER_BIN } from "../support/wrapper-harness.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

const cli = (args: string[]) => runProcess(process.execPath, [WRAPPER_BIN, "cost", ...args], { timeoutMs: 20_000 });

/**
 * /root/lead (2 turns: the first fell back from fake/deep to fake/fast), its child
 * /root/lead/check (running: one request so far), and /root/scout, whose role is a
 * formula-looking name with a comma.
 */
function sampleTree(): string {
  const treeDir = makeTreeDir();
  dirs.push(treeDir);
  writeAgent(
    treeDir,
    {
      path: "/root/lead",
      role: "lead",
      spawnSeq: 1,
      usage: usageOf({ input: 1000, output: 200, cacheRead: 300 }, 0.25),
    },
    {
      "0001-spawn": turnResult({
        durationMs: 4000,
        turns: 3,
        resolvedModel: "fake/fast",
        attempts: [{ model: "fake/deep", error_class: "rate_limit", message: "429", at: "2026-12-01T10:00:00.000Z" }],
      }),
      "0002-followup": turnResult({ durationMs: 1500, turns: 1, resolvedModel: "fake/fast" }),
    },
  );
  writeAgent(
    treeDir,
    { path: "/root/lead/check", role: "checker", status: "running", spawnSeq: 2, usage: usageOf({}, 0) },
    {
      "0001-spawn": {
        events: [
          { type: "run_start", seq: 1, ts: Date.now() - 3000, runId: "r", pid: 1, argv: [] },
          {
            type: "assistant_text",
            seq: 2,
            ts: Date.now(),
            text: "",
            model: "fake/deep",
            usage: usageOf({ input: 40, output: 10, cacheWrite: 5 }, 0.01),
          },
        ],
      },
    },
  );
  writeAgent(
    treeDir,
    { path: "/root/scout", role: '=sum, "x"', spawnSeq: 3, usage: usageOf({ input: 10, output: 5 }, 0.002) },
    { "0001-spawn": turnResult({ durationMs: 900, turns: 2, resolvedModel: "fake/fast" }) },
  );
  return treeDir;
}

describe("subagent-wrapper cost", () => {
  it("--json: per agent path, role, models, turns, requests, repairs, tokens, USD, wall time; subtrees as list_agents rolls them up", async () => {
    const treeDir = sampleTree();
    const out = await cli([treeDir, "--json"]);
    expect(out.stderr).toBe("");
    expect(out.code).toBe(0);
    const json = JSON.parse(out.stdout);
    const [lead, check, scout] = json.agents;
    expect(lead).toEqual({
      path: "/root/lead",
      role: "lead",
      status: "completed",
      models: ["fake/deep", "fake/fast"],
      turns: 2,
      model_requests: 4,
      repairs: 0,
      usage: { input: 1000, output: 200, cache_read: 300, cache_write: 0, total_tokens: 1500, cost: 0.25 },
      wall_ms: 5500,
      subtree_usage: { input: 1040, output: 210, cache_read: 300, cache_write: 5, total_tokens: 1555, cost: 0.26 },
    });
    // A running turn counts what it has spent so far, and its time so far.
    expect(check).toMatchObject({
      path: "/root/lead/check",
      status: "running",
      models: ["fake/deep"],
      turns: 1,
      model_requests: 1,
      usage: { input: 40, output: 10, cache_write: 5, total_tokens: 55, cost: 0.01 },
    });
    expect(check.wall_ms).toBeGreaterThanOrEqual(3000);
    expect(scout.subtree_usage).toEqual(scout.usage);
    expect(json.total_usage).toEqual({
      input: 1050,
      output: 215,
      cache_read: 300,
      cache_write: 5,
      total_tokens: 1570,
      cost: 0.262,
    });
    expect(json.repairs_note).toMatch(/not verified yet/);
    // The same numbers list_agents rolls up (its compact shape, from the same roll-up).
    const listAgents = rollUp(
      new Map(
        json.agents.map(
          (a: { path: string; usage: { input: number; output: number; total_tokens: number; cost: number } }) => [
            a.path,
            usageTotals(usageOf({ input: a.usage.input, output: a.usage.output }, a.usage.cost)),
          ],
        ),
      ),
    );
    expect(listAgents.get("/root/lead")).toMatchObject({
      input: lead.subtree_usage.input,
      cost: lead.subtree_usage.cost,
    });
  });

  it("--csv: a header row and one RFC 4180 row per agent (CRLF, quoted fields, formulas kept as text)", async () => {
    const treeDir = sampleTree();
    const out = await cli([treeDir, "--csv"]);
    expect(out.code).toBe(0);
    const rows = out.stdout.split("\r\n");
    expect(rows.at(-1)).toBe("");
    expect(rows).toHaveLength(5);
    expect(rows[0]).toBe(
      "path,role,status,models,turns,model_requests,repairs,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,total_tokens,usd,wall_seconds,subtree_input_tokens,subtree_output_tokens,subtree_cache_read_tokens,subtree_cache_write_tokens,subtree_total_tokens,subtree_usd",
    );
    expect(rows[1]).toBe(
      "/root/lead,lead,completed,fake/deep; fake/fast,2,4,0,1000,200,300,0,1500,0.25,5.5,1040,210,300,5,1555,0.26",
    );
    expect(rows[2]).toMatch(
      /^\/root\/lead\/check,checker,running,fake\/deep,1,1,0,40,10,0,5,55,0.01,\d+(\.\d+)?,40,10,0,5,55,0.01$/,
    );
    expect(rows[3]).toBe(
      `/root/scout,"'=sum, ""x""",completed,fake/fast,1,2,0,10,5,0,0,15,0.002,0.9,10,5,0,0,15,0.002`,
    );
  });

  it("text: one line per agent indented by depth, the subtree's USD where it has children, the tree's total, the repairs note", async () => {
    const treeDir = sampleTree();
    const out = await cli([treeDir]);
    expect(out.code).toBe(0);
    const lines = out.stdout.split("\n");
    expect(lines[0]).toBe(`Cost of ${treeDir}: 3 agents (the root's own conversation is pi's, not counted)`);
    expect(lines[2]).toMatch(
      /^agent +role +model\(s\) +turns +requests +input +output +cache r\/w +USD +wall +subtree USD$/,
    );
    expect(lines[3]).toMatch(
      /^\/root\/lead +lead +fake\/deep, fake\/fast +2 +4 +1,000 +200 +300\/0 +\$0\.2500 +5\.5 s +\$0\.2600$/,
    );
    expect(lines[4]).toMatch(/^ {2}\/root\/lead\/check +checker +fake\/deep +1 +1 +40 +10 +0\/5 +\$0\.0100 +\d/);
    expect(lines[6]).toMatch(/^total +4 +7 +1,050 +215 +300\/5 +\$0\.2620 /);
    expect(lines.at(-2)).toMatch(/^repairs: 0 for every agent/);
  });

  it("a damaged record is a line on stderr and exit 1, the rest still shown; no tree there, or both formats, is one line and exit 2", async () => {
    const treeDir = sampleTree();
    fs.writeFileSync(path.join(treeDir, "agents", "scout", "agent.json"), "{ not json");
    const damaged = await cli([treeDir, "--json"]);
    expect(damaged.code).toBe(1);
    expect(JSON.parse(damaged.stdout).agents.map((a: { path: string }) => a.path)).toEqual([
      "/root/lead",
      "/root/lead/check",
    ]);
    expect(damaged.stderr).toMatch(/^subagent-wrapper cost: .*scout\/agent\.json is not valid JSON: .*\n$/);

    const missing = await cli([path.join(treeDir, "nowhere")]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^subagent-wrapper cost: .*nowhere is not a tree directory .*\n$/);
    expect(missing.stdout).toBe("");

    const both = await cli([treeDir, "--json", "--csv"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toBe("subagent-wrapper cost: --json and --csv do not go together; pick one\n");
  });
});
