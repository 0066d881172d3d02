import fs from "node:fs";
import path from "node:path";
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

/** Every file below `dir` named `name`. */
function findFiles(dir: string, name: string): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...findFiles(full, name));
    else if (entry.name === name) found.push(full);
  }
  return found;
}

/** The live processes whose command line mentions `text`. */
function processesMentioning(text: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8");
      const state = /State:\s+(\w)/.exec(fs.readFileSync(`/proc/${entry}/status`, "utf8"))?.[1];
      if (cmdline.includes(text) && state !== "Z") pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/**
 * The folders of spares no turn took that a live process still names: the folder is there
 * and holds no hand-over file. (A taken spare is a child's wrapper, which may finish after the
 * root: children are durable.)
 */
function untakenSparesAlive(tmp: string): string[] {
  const folders = new Set<string>();
  for (const pid of processesMentioning(`${tmp}${path.sep}pi-subagent-spare-`)) {
    try {
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8");
      for (const [folder] of cmdline.matchAll(/[^\0\s]*pi-subagent-spare-[A-Za-z0-9]+/g)) folders.add(folder);
    } catch {
      // gone meanwhile
    }
  }
  return [...folders].filter((folder) => fs.existsSync(folder) && !fs.existsSync(path.join(folder, "handover.json")));
}

async function waitFor(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}

describe("the spare pi", () => {
  it("the second child takes the spare the first one left: its answer and identity are right, nothing is left after", async () => {
    const llm = await startScriptedLlm();
    cleanups.push(() => llm.close());
    const home = await makePiHome({ llmUrl: llm.url });
    cleanups.push(() => home.cleanup());
    const spawn = (name: string) =>
      reply.toolCall("spawn_agent", { task_name: name, message: `task of ${name}`, fork_turns: "none" });
    const tree = routeByAgent(llm, {
      "/root": [
        spawn("first"),
        reply.toolCall("wait_agent", { timeout_ms: 30000 }),
        spawn("second"),
        reply.toolCall("wait_agent", { timeout_ms: 30000 }),
        reply.text("ROOT DONE"),
      ],
      "/root/first": [reply.text("FIRST ANSWER")],
      // Its own child is /root/second/leaf only if its extension knows who it is.
      "/root/second": [spawn("leaf"), reply.toolCall("wait_agent", { timeout_ms: 30000 }), reply.text("SECOND ANSWER")],
      "/root/second/leaf": [reply.text("LEAF ANSWER")],
    });
    const trees = path.join(home.root, "trees");
    const run = await home.runPi(["--mode", "json", "-np", "-e", REPO_ROOT, "go"], {
      timeoutMs: 90_000,
      env: { ...home.env, PI_SUBAGENTS_DIR: trees, PI_SUBAGENTS_SPARE: "1" },
    });
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    const root = tree.requests.get("/root")!;
    if (process.env.SPARE_DEBUG) {
      console.log(
        JSON.stringify(
          root.map((r) => lastToolResult(r)),
          null,
          1,
        ).slice(0, 4000),
      );
      for (const f of [
        ...findFiles(trees, "wrapper.log"),
        ...findFiles(trees, "events.jsonl"),
        ...findFiles(trees, "result.json"),
      ])
        console.log(f, fs.readFileSync(f, "utf8").slice(0, 3000));
      console.log(run.stderr.slice(-3000));
    }
    expect(lastToolResult(root[4]!)).toMatchObject({
      notices: [{ type: "completed", agent_name: "/root/second", report: "SECOND ANSWER" }],
    });
    // The second child's pi was the spare: its run says so, and its extension knew who it was.
    const starts = findFiles(trees, "events.jsonl").map((file) => ({
      file,
      start: JSON.parse(fs.readFileSync(file, "utf8").split("\n")[0]!) as { type: string; spare?: boolean },
    }));
    const second = starts.find((s) => s.file.includes(`${path.sep}second${path.sep}runs${path.sep}`));
    const first = starts.find((s) => s.file.includes(`${path.sep}first${path.sep}runs${path.sep}`));
    expect(second?.start).toMatchObject({ type: "run_start", spare: true });
    expect(first?.start.spare).toBeUndefined();
    expect(lastToolResult(tree.requests.get("/root/second")![2]!)).toMatchObject({
      notices: [{ type: "completed", agent_name: "/root/second/leaf", report: "LEAF ANSWER" }],
    });
    // The moment the root has exited, its untaken spare is gone: the root waited for it to exit,
    // or killed it at its bound and removed its folder.
    expect(untakenSparesAlive(path.join(home.root, "tmp"))).toEqual([]);
    // Then nothing at all: the children's wrappers may still be finishing after the root took
    // their results (children are durable), but not for long.
    expect(await waitFor(() => processesMentioning(home.root).length === 0, 10_000)).toBe(true);
    expect(fs.readdirSync(path.join(home.root, "tmp")).filter((name) => name.startsWith("pi-subagent-spare-"))).toEqual(
      [],
    );
  }, 120_000);
});
