/**
 * The `slurm` runner end to end: the real pi loading the extension, scripted
 * models, a real git repository, and a one-node Slurm on loopback (test/support/slurm-cluster.ts,
 * started here and stopped by pid). A child spawned with `runner: "hpc"` runs through `srun`:
 * its bash sees the job's SLURM_JOB_ID and the job name the wrapper gave it; a live message
 * reaches it mid-turn; its commit lands on its `subagent/*` branch with the notice's `worktree`
 * fields; the notice and result.json say `runner: {name: "hpc", kind: "slurm"}`. An interrupt
 * ends the job (its sleep is gone), a follow-up resumes the conversation in a new job, and
 * afterwards `squeue` is empty and no process of the tree is left.
 *
 * The job runs on this machine (slurmd runs it here), so it reaches the scripted LLM on
 * loopback. It is hermetic because srun hands its whole environment to the job (Slurm's
 * default `--export=ALL`): HOME, PI_CODING_AGENT_DIR (this test's pi settings, pointing at the
 * scripted LLM), TMPDIR (serve's scratch space, inside the test's home), PATH (this line's node
 * and pi) and SLURM_CONF (this cluster) reach the far side's serve and its pi as they are here.
 *
 * Needs root and Slurm (munged, slurmctld, slurmd, srun, squeue, scancel): skipped with a
 * plain line without them, failed when CI is set.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { processRunning } from "../../src/lib/process.js";
import { missingNeeds, skipOrFail } from "../support/needs.js";
import { ONE_LINE_IS_ENOUGH } from "../support/pi-home.js";
import { reply, userTexts } from "../support/scripted-llm.js";
import { SLURM_TOOLS, type SlurmCluster, startSlurmCluster } from "../support/slurm-cluster.js";
import { diag, noticesOf, ROOT_RUN, scenarioProcs } from "../support/stress-scenarios.js";
import type { TreeHarness } from "../support/tree-harness.js";
import {
  expectCleanExit,
  expectNoSurvivors,
  type Json,
  Program,
  rootResult,
  spawn,
  useTrees,
  waitForAll,
} from "../support/tree-harness-extra.js";
import { toolResults } from "../support/tree-llm.js";
import { dirtyRepository, treeGit } from "../support/tree-repo.js";
import { WRAPPER_BIN } from "../support/wrapper-harness.js";

const missing = missingNeeds(SLURM_TOOLS, { root: true });
const tree = useTrees();
const SCENARIO_MS = 150_000;
const NOTE = "also write note.txt";

/** The far side's serve: this package's CLI under this line's node (the job runs on this machine). */
const settings = {
  subagents: { runners: { hpc: { kind: "slurm", remote_command: [process.execPath, WRAPPER_BIN], capacity: 2 } } },
};

const outputOf = (h: TreeHarness, agent: string, request: number): string =>
  JSON.stringify(toolResults(h.requestsOf(agent)[request]!));

describe("runner: slurm (real pi, scripted models, a one-node Slurm)", () => {
  let slurm: SlurmCluster | undefined;
  beforeAll(async () => {
    if (missing === undefined) slurm = await startSlurmCluster();
  }, 40_000);
  afterAll(async () => {
    await slurm?.stop();
  });
  const clusterEnv = () => ({ SLURM_CONF: (slurm as SlurmCluster).env.SLURM_CONF as string });

  it(
    "a child runs through srun (its bash sees the job), a live message reaches it, its commit lands on its branch, the queue is empty after",
    async (ctx) => {
      skipOrFail(ctx, missing);
      let childAsked!: () => void;
      const asked = new Promise<void>((resolve) => (childAsked = resolve));
      const root = new Program([
        spawn({ task_name: "far", message: "work on the cluster", fork_turns: "none", runner: "hpc" }),
        reply.toolCall(
          "send_message",
          { target: "far", message: NOTE },
          { waitFor: asked.then(() => new Promise((resolve) => setTimeout(resolve, 500))) },
        ),
        waitForAll(["/root/far"], 90_000),
        reply.toolCall("list_agents", {}),
        reply.text("ROOT DONE"),
      ]);
      const probe = [
        "cat a.txt",
        'echo "JOB=$SLURM_JOB_ID NAME=$SLURM_JOB_NAME"',
        "echo far > far.txt",
        "sleep 4",
      ].join("; ");
      const h = await tree({
        scripts: {
          "/root": root.steps(),
          "/root/far": [
            () => {
              childAsked();
              return reply.toolCall("bash", { command: probe });
            },
            reply.toolCall("bash", { command: "echo noted > note.txt" }),
            reply.text("FAR DONE"),
          ],
        },
        extraSettings: settings,
        env: clusterEnv(),
      });
      dirtyRepository(h);
      const head = treeGit(h, ["rev-parse", "HEAD"]);

      const rootRun = await h.runRoot("go", ROOT_RUN);
      expectCleanExit(rootRun);

      const seen = outputOf(h, "/root/far", 1);
      expect(seen, diag(h)).toContain("a, uncommitted");
      // Its bash ran inside the job the wrapper named.
      const job = /JOB=(\d+) NAME=([A-Za-z0-9_.-]+)/.exec(seen);
      expect(job, seen).not.toBeNull();
      // pst-<run id: the child's nickname and its run>-<hash of the run folder>.
      expect(job![2]).toMatch(/^pst-[A-Za-z]+-0001-spawn-[0-9a-f]{8}$/);

      // The live message went through srun and serve, before the child's next request.
      expect(
        userTexts(h.requestsOf("/root/far")[1]!).some((text) => text.includes(NOTE)),
        diag(h),
      ).toBe(true);

      // The parent's checkout is as it was; the child's work is on its branch.
      expect(treeGit(h, ["rev-parse", "HEAD"])).toBe(head);
      const notice = noticesOf(h).find((n) => n.agent_name === "/root/far")!;
      expect(notice, diag(h)).toMatchObject({
        type: "completed",
        report: "FAR DONE",
        runner: { name: "hpc", kind: "slurm" },
      });
      const worktree = notice.worktree as Json;
      expect(worktree.changed_files).toEqual(["far.txt", "note.txt"]);
      expect(worktree.head_commit).not.toBe(worktree.base_commit);
      expect(String(worktree.branch)).toMatch(/^subagent\//);
      expect(treeGit(h, ["rev-parse", String(worktree.branch)]).trim()).toBe(worktree.head_commit);
      expect(treeGit(h, ["show", `${worktree.head_commit}:far.txt`])).toBe("far\n");
      expect(treeGit(h, ["show", `${worktree.head_commit}:note.txt`])).toBe("noted\n");

      const runDir = path.join(h.treeDir(), "agents", "far", "runs", "0001-spawn");
      const result = JSON.parse(fs.readFileSync(path.join(runDir, "result.json"), "utf8")) as Json;
      expect(result).toMatchObject({ status: "completed", runner: { name: "hpc", kind: "slurm" } });
      // srun ended its job by itself: the last resort had nothing to do.
      expect(fs.readFileSync(path.join(runDir, "stderr.log"), "utf8")).not.toContain("slurm job");
      const listed = (rootResult(h, "list_agents").agents as Json[]).find((a) => a.agent_name === "/root/far");
      expect(listed).toMatchObject({ runner: "hpc" });

      expect(await (slurm as SlurmCluster).drained(10_000)).toEqual([]);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  it.skipIf(ONE_LINE_IS_ENOUGH)(
    "an interrupt ends the child's job (its sleep is gone, the turn interrupted), a follow-up resumes it as a new job, and squeue is empty afterwards",
    async (ctx) => {
      skipOrFail(ctx, missing);
      let phase = 0;
      let sleepPids: number[] = [];
      let queued: string[] = [];
      const cluster = slurm as SlurmCluster;
      const h: TreeHarness = await tree({
        scripts: {
          "/root/slow": [reply.toolCall("bash", { command: "echo begun > begun.txt; sleep 60" }), reply.text("BACK")],
        },
        extraSettings: settings,
        env: clusterEnv(),
      });
      const drive = () => {
        switch (phase) {
          case 0:
            phase = 1;
            return spawn({ task_name: "slow", message: "Run sleep 60", fork_turns: "none", runner: "hpc" });
          case 1:
            sleepPids = scenarioProcs(h, "sleep 60");
            if (sleepPids.length === 0) return reply.toolCall("wait_agent", { timeout_ms: 250 });
            queued = execFileSync("squeue", ["-h", "-o", "%i %j"], { env: cluster.env, encoding: "utf8" })
              .split("\n")
              .filter((line) => line.trim() !== "");
            phase = 2;
            return reply.toolCall("interrupt_agent", { target: "slow" });
          case 2:
            phase = 3;
            return reply.toolCall("followup_task", { target: "slow", message: "Are you back?" });
          case 3:
          case 4:
            // The interrupted turn's notice first, then the follow-up's (a second job).
            phase += 1;
            return reply.toolCall("wait_agent", { timeout_ms: 60_000 });
          default:
            return reply.text("ROOT DONE");
        }
      };
      h.tree.add("/root", ...Array.from({ length: 400 }, () => drive));
      dirtyRepository(h);
      expectCleanExit(await h.runRoot("go", ROOT_RUN));
      expect(phase, diag(h)).toBe(5);
      expect(sleepPids.length).toBeGreaterThan(0);
      // The job ran under the name the wrapper gave it.
      expect(queued).toHaveLength(1);
      expect(queued[0]).toMatch(/^\d+ pst-[A-Za-z]+-0001-spawn-[0-9a-f]{8}$/);
      // Ended (a zombie left to a slow init has ended too: only its entry waits to be reaped).
      for (const pid of sleepPids) expect(processRunning(pid)).toBe(false);
      const notices = noticesOf(h).filter((n) => n.agent_name === "/root/slow");
      expect(
        notices.map((n) => n.type),
        diag(h),
      ).toEqual(["interrupted", "completed"]);
      expect(notices[0]).toMatchObject({ runner: { name: "hpc", kind: "slurm" } });
      expect(notices[1]).toMatchObject({ report: "BACK", runner: { name: "hpc", kind: "slurm" } });
      // The follow-up continued the same conversation on the cluster: its request holds the first turn's bash call.
      expect(JSON.stringify(h.requestsOf("/root/slow").at(-1)!.messages)).toContain("sleep 60");
      // What the interrupted turn wrote came back too.
      expect((notices[0]!.worktree as Json).changed_files).toContain("begun.txt");
      expect(await cluster.drained(10_000)).toEqual([]);
      expect(cluster.stepPids()).toEqual([]);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );
});
