/**
 * Agent-definition files with the real pi: a user role from `<PI_CODING_AGENT_DIR>/agents/`
 * and a project role from `<cwd>/.pi/agents/` (only with PI_SUBAGENTS_PROJECT_AGENTS=1) become
 * `agent_type` values; their tools, model, reasoning and prompt reach the child, and a bad file
 * is refused with its reason in spawn_agent's error, its description and on stderr. Files written
 * for Claude Code (`~/.claude/agents/`, the project's `.claude/agents/`) load with their tool
 * names and model aliases mapped.
 */
import { spawn as spawnProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { MetaV1 } from "../../src/contracts/meta.js";
import { signalGroup } from "../../src/wrapper/child.js";
import { fakeModels, ONE_LINE_IS_ENOUGH, REAL_PI, REPO_ROOT } from "../support/pi-home.js";
import { type ChatRequest, reply, systemText } from "../support/scripted-llm.js";
import { readRecords, type TreeHarness } from "../support/tree-harness.js";
import {
  expectCleanExit,
  expectNoSurvivors,
  Program,
  rootResult,
  rootText,
  spawn,
  toolNames,
  useTrees,
  waitForAll,
} from "../support/tree-harness-extra.js";

const tree = useTrees();

const REVIEWER = `---
name: reviewer
description: Reviews a change for bugs without editing anything.
tools: read, ls
model: fake/deep
reasoning: low
---
REVIEWER-PROMPT-MARKER: you review code and never edit files.
`;
const BROKEN = `---
name: auditor
description: Audits.
colour: red
---
body
`;
const PROJECT_ROLE = `---
name: repo-helper
description: Knows this repository.
tools:
  - read
  - grep
---
PROJECT-PROMPT-MARKER
`;

function writeFile(file: string, text: string): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  return file;
}

function agentTypeText(req: ChatRequest): string {
  const spawnTool = req.tools?.find((t) => t.function.name === "spawn_agent");
  if (!spawnTool) throw new Error("the request lists no spawn_agent tool");
  return (spawnTool.function.parameters as { properties: { agent_type: { description: string } } }).properties
    .agent_type.description;
}

function runMeta(h: TreeHarness, agent: string, run: string): MetaV1 {
  return JSON.parse(
    fs.readFileSync(path.join(h.treeDir(), "agents", agent, "runs", run, "meta.json"), "utf8"),
  ) as MetaV1;
}

describe("agent definitions", () => {
  it("a user role from the agent dir: its tools, model, clamped reasoning and prompt reach the child; a bad file says why", async () => {
    const root = new Program([
      spawn({ task_name: "rev", message: "Review the change.", agent_type: "reviewer", fork_turns: "none" }),
      spawn({ task_name: "aud", message: "Audit.", agent_type: "auditor", fork_turns: "none" }),
      waitForAll(["/root/rev"]),
      reply.toolCall("followup_task", { target: "rev", message: "One more look." }),
      waitUntilTwoReports(),
      reply.text("ROOT DONE"),
    ]);
    const h = await tree({
      scripts: { "/root": root.steps(), "/root/rev": [reply.text("REVIEW ONE"), reply.text("REVIEW TWO")] },
    });
    writeFile(path.join(h.home.dir, "agents", "reviewer.md"), REVIEWER);
    const broken = writeFile(path.join(h.home.dir, "agents", "broken.md"), BROKEN);

    const run = await h.runRoot("review please");
    expectCleanExit(run);

    // The root model was told about both files before its first call.
    const described = agentTypeText(h.requestsOf("/root")[0]!);
    expect(described).toContain("`reviewer` (user: Reviews a change for bugs without editing anything.)");
    expect(described).toContain(`${broken}: unknown field "colour"`);

    expect(rootResult(h, "spawn_agent", { task_name: "rev" })).toMatchObject({
      agent_name: "/root/rev",
      role: "reviewer",
      model: "fake/deep",
      reasoning: "high",
    });
    expect(rootText(h, "spawn_agent", { task_name: "aud" })).toBe(
      `unknown agent_type: auditor — agent definition ${broken} was rejected: unknown field "colour" (allowed: name, description, tools, model, reasoning, isolation, limits, fallback_models, runner, verify)`,
    );
    expect(run.stderr).toContain(`pi-subagent-tree: agent definition ${broken} is not used: unknown field "colour"`);

    // Both turns ran on the role's model with its tools and its prompt after the tree instructions.
    const childRequests = h.requestsOf("/root/rev");
    expect(childRequests).toHaveLength(2);
    for (const req of childRequests) {
      expect(req.model).toBe("deep");
      expect(toolNames(req)).toEqual(["ls", "read"]);
      const system = systemText(req);
      expect(system).toContain("# Your role: reviewer\nREVIEWER-PROMPT-MARKER: you review code and never edit files.");
      expect(system.indexOf("You are the agent /root/rev")).toBeLessThan(system.indexOf("REVIEWER-PROMPT-MARKER"));
    }
    const [record] = await h.readRecords();
    expect(record).toMatchObject({
      role: "reviewer",
      agentSource: "user",
      activeTools: ["read", "ls"],
      reasoning: "high",
    });
    for (const name of record!.runs)
      expect(runMeta(h, "rev", name)).toMatchObject({
        agent: "reviewer",
        agentSource: "user",
        tools: ["read", "ls"],
        thinking: "high",
      });
    await expectNoSurvivors(h);
  });

  // Package bookkeeping, the same on either line: pi 1.x only in npm test (ONE_LINE_IS_ENOUGH).
  it.skipIf(ONE_LINE_IS_ENOUGH)(
    "project roles in .pi/agents count only when PI_SUBAGENTS_PROJECT_AGENTS=1",
    async () => {
      const call = spawn({ task_name: "helper", message: "Help.", agent_type: "repo-helper", fork_turns: "none" });
      const h = await tree({ scripts: { "/root": [call, reply.text("ROOT DONE")] } });
      const projectDir = path.join(h.home.cwd, ".pi", "agents");
      writeFile(path.join(projectDir, "repo-helper.md"), PROJECT_ROLE);

      expectCleanExit(await h.runRoot("off"));
      expect(rootText(h, "spawn_agent")).toBe(
        `unknown agent_type: repo-helper — ${projectDir} defines project agents, which are off: the user can set PI_SUBAGENTS_PROJECT_AGENTS=1 to use them`,
      );
      expect(agentTypeText(h.requestsOf("/root")[0]!)).not.toContain("repo-helper");

      h.tree.add("/root", ...new Program([call, waitForAll(["/root/helper"]), reply.text("ROOT DONE")]).steps(20));
      h.tree.add("/root/helper", reply.text("HELPED"));
      expectCleanExit(await h.runRoot("on", { env: { PI_SUBAGENTS_PROJECT_AGENTS: "1" } }));
      expect(rootResult(h, "spawn_agent")).toMatchObject({
        agent_name: "/root/helper",
        role: "repo-helper",
        model: "fake/fast",
      });
      const [child] = h.requestsOf("/root/helper");
      expect(toolNames(child!)).toEqual(["grep", "read"]);
      expect(systemText(child!)).toContain("# Your role: repo-helper\nPROJECT-PROMPT-MARKER");
      const records = (await readAllRecords(h)).filter((r) => r.path === "/root/helper");
      expect(records).toMatchObject([{ agentSource: "project" }]);
      await expectNoSurvivors(h);
    },
  );
});

const CLAUDE_REVIEWER = `---
name: reviewer
description: Reviews code for bugs. Use proactively after changes.
tools: Read, Grep, Glob, WebFetch
model: sonnet
color: blue
---
CLAUDE-REVIEWER-MARKER: you review code.
`;
const CLAUDE_PLANNER = `---
name: planner
description: Plans a change.
tools: Read, LS
model: opus
---
CLAUDE-PLANNER-MARKER
`;

describe("Claude Code agent files", () => {
  // Package bookkeeping, the same on either line: pi 1.x only in npm test (ONE_LINE_IS_ENOUGH).
  it.skipIf(ONE_LINE_IS_ENOUGH)(
    "~/.claude/agents and the project's .claude/agents load: tools mapped, an alias on its best match or on the parent's model with a note",
    async () => {
      const root = new Program([
        spawn({ task_name: "rev", message: "Review.", agent_type: "reviewer", fork_turns: "none" }),
        spawn({ task_name: "plan", message: "Plan.", agent_type: "planner", fork_turns: "none" }),
        waitForAll(["/root/rev", "/root/plan"]),
        reply.text("ROOT DONE"),
      ]);
      const h = await tree({
        scripts: {
          "/root": root.steps(),
          "/root/rev": [reply.text("REVIEWED")],
          "/root/plan": [reply.text("PLANNED")],
        },
      });
      // Two Claude-like models beside fast and deep: `sonnet` must pick the newer one.
      const models = fakeModels(h.llm.url) as { providers: { fake: { models: object[] } } };
      models.providers.fake.models.push(
        { id: "claude-sonnet-4", reasoning: true },
        { id: "claude-sonnet-4-5", reasoning: true },
      );
      fs.writeFileSync(path.join(h.home.dir, "models.json"), JSON.stringify(models));
      const reviewer = writeFile(path.join(h.home.home, ".claude", "agents", "reviewer.md"), CLAUDE_REVIEWER);
      const planner = writeFile(path.join(h.home.cwd, ".claude", "agents", "planner.md"), CLAUDE_PLANNER);

      const run = await h.runRoot("review and plan", { env: { PI_SUBAGENTS_PROJECT_AGENTS: "1" } });
      expectCleanExit(run);

      const described = agentTypeText(h.requestsOf("/root")[0]!);
      expect(described).toContain("`reviewer` (user: Reviews code for bugs. Use proactively after changes.)");
      expect(described).toContain("`planner` (project: Plans a change.)");
      // What pi cannot honour is named once at session start; `color` is not mentioned.
      expect(run.stderr).toContain(
        `pi-subagent-tree: agent definition ${reviewer}: unknown tool WebFetch left out (pi maps Read, Grep, Glob, LS, Bash, Edit, MultiEdit, Write)`,
      );
      expect(run.stderr).not.toContain(planner);
      expect(run.stderr).not.toContain("color");

      const spawnedRev = rootResult(h, "spawn_agent", { task_name: "rev" });
      expect(spawnedRev).toMatchObject({ agent_name: "/root/rev", role: "reviewer", model: "fake/claude-sonnet-4-5" });
      expect(spawnedRev).not.toHaveProperty("model_note");
      expect(rootResult(h, "spawn_agent", { task_name: "plan" })).toMatchObject({
        agent_name: "/root/plan",
        role: "planner",
        model: "fake/fast",
        model_note: `model opus of agent definition ${planner} matches no model you can use; the child runs on your model fake/fast`,
      });

      const [rev] = h.requestsOf("/root/rev");
      expect(rev!.model).toBe("claude-sonnet-4-5");
      expect(toolNames(rev!)).toEqual(["find", "grep", "read"]);
      expect(systemText(rev!)).toContain("# Your role: reviewer\nCLAUDE-REVIEWER-MARKER: you review code.");
      const [plan] = h.requestsOf("/root/plan");
      expect(plan!.model).toBe("fast");
      expect(toolNames(plan!)).toEqual(["ls", "read"]);
      expect(systemText(plan!)).toContain("# Your role: planner\nCLAUDE-PLANNER-MARKER");

      const records = await h.readRecords();
      expect(records.find((r) => r.path === "/root/rev")).toMatchObject({
        role: "reviewer",
        agentSource: "user",
        model: "fake/claude-sonnet-4-5",
        activeTools: ["read", "grep", "find"],
      });
      expect(records.find((r) => r.path === "/root/plan")).toMatchObject({
        role: "planner",
        agentSource: "project",
        model: "fake/fast",
        activeTools: ["read", "ls"],
      });
      await expectNoSurvivors(h);
    },
  );
});

describe("agent definitions in an interactive session", () => {
  it("a refused file is shown to the user through pi's UI at session start", async () => {
    const h = await tree({});
    const broken = writeFile(path.join(h.home.dir, "agents", "broken.md"), BROKEN);
    const root = spawnProcess(REAL_PI, ["--mode", "rpc", "-np", "-e", REPO_ROOT], {
      cwd: h.home.cwd,
      env: { ...h.home.env, PI_SUBAGENTS_DIR: h.baseDir },
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
    });
    try {
      const shown = await new Promise<Record<string, unknown>>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("no notify within 30 s")), 30_000);
        let buffer = "";
        root.stdout.setEncoding("utf8").on("data", (chunk: string) => {
          buffer += chunk;
          for (const line of buffer.split("\n").slice(0, -1)) {
            const event = JSON.parse(line) as Record<string, unknown>;
            if (event.type === "extension_ui_request" && event.method === "notify") {
              clearTimeout(timer);
              resolve(event);
            }
          }
          buffer = buffer.slice(buffer.lastIndexOf("\n") + 1);
        });
      });
      expect(shown).toMatchObject({
        notifyType: "warning",
        message: `pi-subagent-tree: agent definition ${broken} is not used: unknown field "colour" (allowed: name, description, tools, model, reasoning, isolation, limits, fallback_models, runner, verify)`,
      });
    } finally {
      root.stdin.end();
      await new Promise((resolve) => {
        const timer = setTimeout(() => signalGroup(root.pid, "SIGKILL"), 10_000);
        root.once("exit", () => resolve(clearTimeout(timer)));
      });
    }
    expect(h.llm.requests).toHaveLength(0);
    await expectNoSurvivors(h);
  });
});

/** wait_agent until the second report of /root/rev (the follow-up's) arrived. */
function waitUntilTwoReports() {
  return {
    loop: (req: ChatRequest) =>
      JSON.stringify(req.messages).includes("REVIEW TWO")
        ? undefined
        : reply.toolCall("wait_agent", { timeout_ms: 20_000 }),
  };
}

/** Records of every tree directory (two root runs without --session make two trees). */
async function readAllRecords(h: TreeHarness) {
  const all = [];
  for (const dir of fs.readdirSync(h.baseDir)) all.push(...(await readRecords(path.join(h.baseDir, dir))));
  return all;
}
