/**
 * What works on every runner, end to end with the real pi and scripted models on a
 * `command` runner whose prefix starts `subagent-wrapper serve` on this machine (the cheapest
 * runner: the same protocol, far side and workspace shipping as ssh and Slurm, no root needed)
 * and on the `sandbox` runner (bubblewrap; skipped where it is missing, failing under CI):
 * - fallback models: the child's 429 moves it to its fallback, a new far side that
 *   continues the session the first far side sent back, in a workspace holding what the first
 *   attempt changed; the notice names both models and the runner;
 * - limits: at max_turns the wrap-up reaches the far pi as a live message before its
 *   next request, and the notice is `completed` with `limit`;
 * - re-attach: a root SIGKILLed while the runner turn runs (and while it was still
 *   writing the agent's checkout, which the restarted root finishes: finishLeftCheckout); the
 *   local wrapper keeps relaying; a root started on the same session takes the turn back, its
 *   notice arrives once and its commit is on its branch.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { skipOrFail } from "../support/needs.js";
import { ONE_LINE_IS_ENOUGH } from "../support/pi-home.js";
import type { RpcLine } from "../support/rpc-lines.js";
import { startRpcRoot } from "../support/rpc-root.js";
import { type ChatRequest, reply, userTexts } from "../support/scripted-llm.js";
import { diag, noticesOf, ROOT_RUN } from "../support/stress-scenarios.js";
import type { TreeHarness } from "../support/tree-harness.js";
import {
  expectCleanExit,
  expectNoSurvivors,
  type Json,
  Program,
  rootResult,
  spawn,
  toolResultFor,
  useTrees,
  waitForAll,
} from "../support/tree-harness-extra.js";
import { toolResults } from "../support/tree-llm.js";
import { committedRepository, treeGit } from "../support/tree-repo.js";
import { WRAPPER_BIN } from "../support/wrapper-harness.js";

const tree = useTrees();
const SCENARIO_MS = 150_000;

const settings = {
  subagents: {
    runners: {
      near: { kind: "command", command: ["env"], remote_command: [process.execPath, WRAPPER_BIN], capacity: 2 },
      box: { kind: "sandbox" },
    },
  },
};

const git = (h: TreeHarness, ...args: string[]): string => treeGit(h, args).trim();

const outputOf = (h: TreeHarness, agent: string, request: number): string =>
  JSON.stringify(toolResults(h.requestsOf(agent)[request]!));

const HAS_BWRAP = (() => {
  try {
    execFileSync("bwrap", ["--ro-bind", "/", "/", "true"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

describe.skipIf(ONE_LINE_IS_ENOUGH)("fallback models on a runner (real pi)", () => {
  it.for([
    ["near", "command"],
    ["box", "sandbox"],
  ] as const)(
    "%s (%s): a 429 moves the child to its fallback on a new far side: same session, the first attempt's files, both models named",
    { timeout: SCENARIO_MS },
    async ([runner, kind], ctx) => {
      if (kind === "sandbox") skipOrFail(ctx, HAS_BWRAP ? undefined : "bwrap (Debian package bubblewrap) is missing");
      const h = await tree({
        scripts: {
          "/root": [
            reply.toolCall("spawn_agent", {
              task_name: "worker",
              message: "do the work",
              fork_turns: "none",
              runner,
              model: "fake/deep",
              fallback_models: ["fake/fast"],
            }),
            reply.toolCall("wait_agent", { timeout_ms: 90_000 }),
            reply.text("ROOT DONE"),
          ],
          "/root/worker": [
            reply.toolCall("bash", { command: "echo from-deep > first.txt" }),
            reply.error(429, "Rate limit reached"),
            reply.toolCall("bash", { command: "cat first.txt; echo from-fast > second.txt" }),
            reply.text("child done on fast"),
          ],
        },
        extraSettings: settings,
      });
      committedRepository(h);
      expectCleanExit(await h.runRoot("delegate", ROOT_RUN));

      const requests = h.requestsOf("/root/worker");
      expect(
        requests.map((r) => r.model),
        diag(h),
      ).toEqual(["deep", "deep", "fast", "fast"]);
      // The session went over and back: the fallback's first request holds the first far side's tool call and its result.
      expect(JSON.stringify(requests[2]!.messages)).toContain("echo from-deep > first.txt");
      expect(userTexts(requests[2]!).at(-1)).toMatch(/fake\/deep failed with a provider error \(rate_limit\)/);
      // The second far side's workspace held what the first changed.
      expect(outputOf(h, "/root/worker", 3)).toContain("from-deep");

      const waited = JSON.stringify(rootResult(h, "wait_agent", { timeout_ms: 90_000 }));
      expect(waited).toContain('"model":"fake/fast"');
      expect(waited).toContain('"attempts":[{"model":"fake/deep","error_class":"rate_limit"');
      expect(waited).toContain(`"runner":{"name":"${runner}","kind":"${kind}"}`);
      expect(waited).toContain("child done on fast");
      const notice = (JSON.parse(waited) as Json).notices.find((n: Json) => n.agent_name === "/root/worker") as Json;
      const head = notice.worktree.head_commit as string;
      expect(git(h, "show", `${head}:first.txt`)).toBe("from-deep");
      expect(git(h, "show", `${head}:second.txt`)).toBe("from-fast");
      await expectNoSurvivors(h);
    },
  );
});

describe.skipIf(ONE_LINE_IS_ENOUGH)("limits on a runner (real pi)", () => {
  it.for([
    ["near", "command"],
    ["box", "sandbox"],
  ] as const)(
    "%s (%s): max_turns: the wrap-up reaches the far pi before its next request; the notice is completed with limit",
    { timeout: SCENARIO_MS },
    async ([runner, kind], ctx) => {
      if (kind === "sandbox") skipOrFail(ctx, HAS_BWRAP ? undefined : "bwrap (Debian package bubblewrap) is missing");
      const h = await tree({
        scripts: {
          "/root": new Program([
            spawn({
              task_name: "worker",
              fork_turns: "none",
              message: "Count the files.",
              runner,
              limits: { max_turns: 1 },
            }),
            waitForAll(["/root/worker"], 60_000),
            reply.text("ROOT DONE"),
          ]).steps(),
          "/root/worker": [
            reply.toolCall("bash", { command: "sleep 1; ls | wc -l" }, { text: "counting" }),
            reply.text("Done: counted. Left: nothing. Files: unchanged."),
          ],
        },
        extraSettings: settings,
      });
      committedRepository(h);
      expectCleanExit(await h.runRoot("go", ROOT_RUN));
      const child = h.requestsOf("/root/worker");
      expect(child, diag(h)).toHaveLength(2);
      expect(userTexts(child[1]!).at(-1)).toMatch(/^\[LIMIT max_turns\] This turn has reached its limit: 1 of 1/);
      const notice = noticesOf(h).find((n) => n.agent_name === "/root/worker");
      expect(notice, diag(h)).toMatchObject({
        type: "completed",
        limit: { name: "max_turns", value: 1, used: 1 },
        report: "Done: counted. Left: nothing. Files: unchanged.",
        runner: { name: runner, kind },
      });
      await expectNoSurvivors(h);
    },
  );
});

const isUi = (method: string) => (line: RpcLine) => line.type === "extension_ui_request" && line.method === method;

/** The child notices the root's model read in `req`'s conversation: wakes and wait_agent results. */
function noticesRead(req: ChatRequest): Json[] {
  const read: Json[] = [];
  for (const text of userTexts(req)) {
    if (!text.startsWith("While you were idle")) continue;
    read.push(...(JSON.parse(text.split("\n")[1]!) as Json).notices);
  }
  for (const result of toolResultFor(req, "wait_agent")) read.push(...((JSON.parse(result) as Json).notices ?? []));
  return read;
}

describe.skipIf(ONE_LINE_IS_ENOUGH)("re-attach to a runner turn (real pi)", () => {
  it.for([
    ["near", "command"],
    ["box", "sandbox"],
  ] as const)(
    "%s (%s): the root SIGKILLed mid-turn; the wrapper keeps relaying; a new root re-attaches, reads the notice once; the commit is on the branch",
    { timeout: SCENARIO_MS },
    async ([runner, kind], ctx) => {
      if (kind === "sandbox") skipOrFail(ctx, HAS_BWRAP ? undefined : "bwrap (Debian package bubblewrap) is missing");
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const h = await tree({
        scripts: {
          "/root": [
            reply.toolCall("spawn_agent", {
              task_name: "far",
              fork_turns: "none",
              message: "Work a while.",
              runner,
            }),
            reply.text("Started a worker."),
            reply.text("WOKEN"),
            reply.text("WOKEN AGAIN"),
          ],
          "/root/far": [
            reply.toolCall("bash", { command: "echo far > far.txt; sleep 1" }),
            reply.text("far done", { waitFor: gate }),
          ],
        },
        extraSettings: settings,
      });
      committedRepository(h);
      const first = startRpcRoot(h);
      first.send({ type: "prompt", message: "start a worker" });
      await first.rpc.waitFor((line) => line.type === "agent_end");
      await first.rpc.waitFor((line) => isUi("setStatus")(line) && /^agents: 1 running/.test(line.statusText ?? ""));
      await first.kill("SIGKILL");
      expect((await h.readRecords()).map((r) => r.status)).toEqual(["running"]);
      // Mostly it died while writing the worker's checkout (the rest is written once the far pi
      // has started), and the restarted root must write it and say `ready` before the wrapper
      // lands the turn's commit there; on a slow far start the first root may have finished it.
      // Either way the turn must end and land below (the left checkout alone: left-checkout.test.ts).

      const second = startRpcRoot(h, { args: ["-c"] });
      second.send({ type: "get_state" });
      await second.rpc.waitFor((line) => line.type === "response");
      // Re-attached while the far side still works: no result yet, shown running.
      const result = path.join(h.treeDir(), "agents", "far", "runs", "0001-spawn", "result.json");
      expect(fs.existsSync(result)).toBe(false);
      await second.rpc.waitFor((line) => isUi("setStatus")(line) && /^agents: 1 running/.test(line.statusText ?? ""));
      release();
      await second.rpc.waitFor(() => {
        const last = h.requestsOf("/root").at(-1);
        return last !== undefined && noticesRead(last).length >= 1;
      }, 90_000);
      await second.rpc.waitFor(() => second.rpc.lines.some((line) => line.type === "agent_end"));
      // Once, and as this runner's turn, completed.
      const read = noticesRead(h.requestsOf("/root").at(-1)!);
      expect(
        read.map((n) => n.agent_name),
        diag(h),
      ).toEqual(["/root/far"]);
      const notice = read[0]!;
      expect(notice).toMatchObject({
        type: "completed",
        report: "far done",
        runner: { name: runner, kind },
      });
      expect(git(h, "show", `${notice.worktree.head_commit}:far.txt`)).toBe("far");
      expect((await h.readRecords()).map((r) => [r.path, r.status])).toEqual([["/root/far", "completed"]]);
      await second.close();
      await expectNoSurvivors(h);
    },
  );
});
