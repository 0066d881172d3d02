/**
 * The extension's promises whatever the disk or the tree directory does, against the real pi
 * with scripted models:
 * - the tree directory's disk fills while children finish (a small tmpfs as PI_SUBAGENTS_DIR):
 *   pi keeps running, wait_agent returns each child's errored notice with the reason, the
 *   user sees one line per failed write, nothing outlives the run;
 * - a tree directory damaged between two sessions: the second session starts, the healthy
 *   agent restores and takes a follow-up, the damaged one is named (once, in one line) and
 *   refused with a clear message.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { fillDisk, mountTmpfs } from "../../scripts/full-disk.mjs";
import { ONE_LINE_IS_ENOUGH } from "../support/pi-home.js";
import { type ChatRequest, reply } from "../support/scripted-llm.js";
import type { TreeHarness } from "../support/tree-harness.js";
import {
  allNotices,
  expectCleanExit,
  expectNoSurvivors,
  type Json,
  lastList,
  Program,
  rootText,
  sinceLastPrompt,
  spawn,
  toolResultFor,
  useTrees,
  waitForAll,
  waitUntil,
} from "../support/tree-harness-extra.js";

const tree = useTrees();

/** Lines the extension showed the user on stderr (a root without a UI). */
const extensionLines = (stderr: string) => stderr.split("\n").filter((line) => line.startsWith("pi-subagent-tree: "));
/** Node's stack frames, which must never reach the user. */
const STACK = /^\s+at .+[:(]\d+/m;

// Package bookkeeping, the same on either line: pi 1.x only in npm test (ONE_LINE_IS_ENOUGH).
describe.skipIf(ONE_LINE_IS_ENOUGH)(
  "the extension's promises whatever the disk or the tree directory does (real pi)",
  {
    timeout: 180_000,
  },
  () => {
    it("the tree directory's disk fills while two children finish: pi keeps running, wait_agent returns both errored notices with the reason", async (ctx) => {
      const disk = mountTmpfs("16m", 4096);
      if ("skip" in disk) return ctx.skip(`a small tmpfs is needed to fill the tree directory's disk: ${disk.skip}`);
      let h: TreeHarness | undefined;
      try {
        // Both children ask before the disk fills, and both answer on the full disk: a wrapper
        // that starts on a full disk cannot reserve result.json's space and fails at its start
        // instead (another case), so the fill waits until both runs are under way.
        // Whatever a finishing process deletes (a temp file, a released reserve) is taken back
        // at once: the disk stays full until the root has ended.
        let filled = 0;
        let bothAsked!: () => void;
        let refill: NodeJS.Timeout | undefined;
        const diskFull = new Promise<void>((resolve) => {
          bothAsked = resolve;
        }).then(() => {
          fillDisk(disk.dir);
          refill = setInterval(() => fillDisk(disk.dir), 1);
        });
        const answerOnFullDisk = (text: string) => (_req: ChatRequest) => {
          if (++filled === 2) bothAsked();
          return reply.text(text, { waitFor: diskFull });
        };
        const root = new Program([
          spawn({ task_name: "first", message: "FIRST TASK", fork_turns: "none" }),
          spawn({ task_name: "second", message: "SECOND TASK", fork_turns: "none" }),
          waitForAll(["/root/first", "/root/second"]),
          reply.toolCall("list_agents", {}),
          reply.text("ROOT DONE"),
        ]);
        h = await tree({
          baseDir: disk.dir,
          // A child pi that cannot write its session on the full disk must not hold the test for 30 minutes.
          env: { PI_SUBAGENTS_TURN_TIMEOUT_MS: "30000" },
          scripts: {
            "/root": root.steps(),
            "/root/first": [answerOnFullDisk("FIRST DONE")],
            "/root/second": [answerOnFullDisk("SECOND DONE")],
          },
        });
        const run = await h.runRoot("go", { timeoutMs: 120_000 }).finally(() => clearInterval(refill));
        expectCleanExit(run);
        expect(root.remaining).toBe(0);
        expect(filled).toBe(2);

        const notices = allNotices(h).filter((n) => n.type !== "message");
        expect(notices.map((n) => n.agent_name).sort()).toEqual(["/root/first", "/root/second"]);
        for (const notice of notices) {
          expect(notice).toMatchObject({ type: "errored", agent_status: "errored" });
          expect(notice.reason).toMatch(
            /^the turn ended \w+, but its record could not be written: ENOSPC: no space left on device/,
          );
        }
        // What this process knows, not the disk's stale `running`.
        expect(lastList(h).map((a) => [a.agent_name, a.agent_status])).toEqual([
          ["/root/first", "errored"],
          ["/root/second", "errored"],
        ]);
        // One line per write that failed: each turn's end, its notice in the delivery record (given,
        // then read), and shutdown's last try at each record.
        const lines = extensionLines(run.stderr);
        expect(lines.filter((line) => line.includes("could not record the end of a turn")).length).toBe(2);
        const failedWrite =
          /could not record .* of \/root\/(first|second)(#\S+ as given)?: ENOSPC|could not record that \d+ notice\(s\) were read: ENOSPC/;
        expect(lines.filter((line) => !failedWrite.test(line))).toEqual([]);
        expect(run.stderr).not.toMatch(STACK);
        expect(run.stderr).not.toContain("Unhandled");
        await expectNoSurvivors(h);
      } finally {
        if (h) await expectNoSurvivors(h).catch(() => undefined);
        disk.unmount();
      }
    });

    it("a tree directory damaged between two sessions: the healthy child resumes, the damaged one is named once and refused clearly", async () => {
      let h!: TreeHarness;
      const session = () => path.join(h.home.root, "root-session.jsonl");
      const root = new Program([
        spawn({ task_name: "alpha", message: "ALPHA TASK", fork_turns: "none" }),
        spawn({ task_name: "beta", message: "BETA TASK", fork_turns: "none" }),
        waitForAll(["/root/alpha", "/root/beta"]),
        reply.text("A DONE"),
      ]);
      h = await tree({
        scripts: {
          "/root": root.steps(),
          "/root/alpha": [reply.text("ALPHA 1")],
          "/root/beta": [reply.text("BETA 1"), reply.text("BETA 2")],
        },
      });
      expectCleanExit(await h.runRoot("phase a", { args: ["--session", session()] }));
      expect(root.remaining).toBe(0);

      // Between the sessions: alpha's record is cut in half, and a named pipe sits in the root's inbox.
      const alphaRecord = path.join(h.treeDir(), "agents", "alpha", "agent.json");
      fs.writeFileSync(alphaRecord, fs.readFileSync(alphaRecord, "utf8").slice(0, 120));
      execFileSync("mkfifo", [path.join(h.treeDir(), "inbox", "000000000000001-0000000000-dead.json")]);

      root.extend(
        reply.toolCall("list_agents", {}),
        reply.toolCall("followup_task", { target: "alpha", message: "ALPHA AGAIN" }),
        reply.toolCall("followup_task", { target: "beta", message: "BETA AGAIN" }),
        // The conversation holds phase a's notice of beta too: wait for a second one.
        waitUntil((notices) => notices.filter((n) => n.agent_name === "/root/beta").length >= 2),
        reply.toolCall("list_agents", {}),
        reply.text("B DONE"),
      );
      const runB = await h.runRoot("phase b", { args: ["--session", session()], timeoutMs: 60_000 });
      expectCleanExit(runB);
      expect(root.remaining).toBe(0);
      const b = sinceLastPrompt(h.requestsOf("/root").at(-1)!);

      const firstList = JSON.parse(toolResultFor(b, "list_agents")[0]!) as Json;
      expect(firstList.agents.map((a: Json) => [a.agent_name, a.agent_status])).toEqual([["/root/beta", "completed"]]);
      expect(firstList.damaged).toEqual([
        { agent_name: "/root/alpha", problem: "agent.json is not valid JSON (truncated or overwritten)" },
      ]);
      expect(rootText(h, "followup_task", { target: "alpha" }, b)).toBe(
        "/root/alpha's record is damaged (agent.json is not valid JSON (truncated or overwritten)); it cannot take follow-ups",
      );
      expect(allNotices(h, b).map((n) => [n.agent_name, n.type, n.report])).toEqual([
        ["/root/beta", "completed", "BETA 2"],
      ]);

      // One line per damaged thing, however often the tools read the tree again.
      const lines = extensionLines(runB.stderr);
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatch(
        /^pi-subagent-tree: the record of \/root\/alpha \(.*agent\.json\) is damaged: agent\.json is not valid JSON/,
      );
      expect(lines[1]).toMatch(
        /^pi-subagent-tree: .*dead\.json is damaged: it is no message notice: the file is a named pipe, not a file — moved aside/,
      );
      expect(runB.stderr).not.toMatch(STACK);
      // The damaged bytes are kept for a person to repair.
      expect(fs.readFileSync(alphaRecord, "utf8")).toHaveLength(120);
      await expectNoSurvivors(h);
    });
  },
);
