/**
 * The `ssh` runner end to end: the real pi as the root (loopback LLM) spawning a
 * child on a runner named in pi's settings, whose far side is a separate host in a network
 * namespace (test/support/ssh-host.ts) running the same pi line against a scripted LLM on this
 * machine's side of the veth. The child runs there (its `hostname` is the namespace's), its
 * commit lands on its `subagent/*` branch in the parent's repository with the notice's
 * `worktree` fields, a live message reaches it mid-turn, losing the connection ends it
 * `runner_lost` with nothing of it left on the far host, a closed port or a refused key ends
 * the turn with ssh's own words, and the shared connection (src/wrapper/remote/ssh-master.ts) is
 * closed once no run uses it. An extension installed on the far host (pi's permission-gate) asks
 * the root's RPC client, over the connection, and its answers decide there.
 *
 * Needs root, `ip`, `unshare`, `sshd`, `ssh`: skipped with the reason otherwise (failing under CI).
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { processRunning } from "../../src/lib/process.js";
import { checkSshMaster, type MasterAnswer } from "../../src/wrapper/remote/ssh-master.js";
import { missingNeeds, skipOrFail } from "../support/needs.js";
import { fakeModels, ONE_LINE_IS_ENOUGH, PI_LINE, PI_PERMISSION_GATE } from "../support/pi-home.js";
import { startRpcRoot } from "../support/rpc-root.js";
import { type ChatRequest, reply, type ScriptedLlm, startScriptedLlm, userTexts } from "../support/scripted-llm.js";
import { SSH_HOST_TOOLS, type SshHost, sshRunnerFor, startSshHost } from "../support/ssh-host.js";
import { diag, noticesOf } from "../support/stress-scenarios.js";
import type { TreeHarness } from "../support/tree-harness.js";
import {
  dialogRecords,
  expectCleanExit,
  expectNoSurvivors,
  type Json,
  Program,
  rootResult,
  spawn,
  useTrees,
  waitForAll,
  waitUntil,
} from "../support/tree-harness-extra.js";
import { type AgentStep, routeByAgent, type TreeScript, toolResults } from "../support/tree-llm.js";
import { committedRepository, dirtyRepository, treeGit } from "../support/tree-repo.js";

const missing = missingNeeds(SSH_HOST_TOOLS, { root: true });
const tree = useTrees();
const SCENARIO_MS = 180_000;
const NOTE = "also write note.txt";
/** The far child's check: where it runs, and a file of the turn's work read there. */
const FAR_CHECK = "hostname; cat remote.txt";

let far: SshHost | undefined;
let farLlm: ScriptedLlm | undefined;
/** The far children's scripts, per test (routeByAgent on the far LLM). */
let farTree: TreeScript | undefined;

beforeAll(async () => {
  if (missing !== undefined) return;
  far = await startSshHost({ pi: { node: PI_LINE.node, piCli: PI_LINE.piCli } });
  farLlm = await startScriptedLlm({ host: far.hostAddress });
  const settings = { defaultProvider: "fake", defaultModel: "fast", quietStartup: true, retry: { enabled: false } };
  await far.writePiSettings({ models: fakeModels(farLlm.url), settings });
}, 60_000);
afterAll(async () => {
  await farLlm?.close();
  await far?.stop();
});

/** A fresh router on the far LLM for one test's far children. */
function farScripts(scripts: Record<string, AgentStep[]>): TreeScript {
  farTree = routeByAgent(farLlm as ScriptedLlm, scripts);
  return farTree;
}
const farRequestsOf = (agent: string): ChatRequest[] => farTree?.requests.get(agent) ?? [];

const runners = (extra: Record<string, unknown> = {}) => ({
  subagents: { runners: { far: sshRunnerFor(far as SshHost, { capacity: 12 }), ...extra } },
});

const farOutput = (agent: string, request: number): string =>
  JSON.stringify(toolResults(farRequestsOf(agent)[request]!));

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}

/** SSH_E2E_DEBUG=<folder>: the tree directory is copied there (what a failed run left). */
function keepForDebugging(h: TreeHarness): void {
  const to = process.env.SSH_E2E_DEBUG;
  if (to) fs.cpSync(h.treeDir(), path.join(to, path.basename(h.treeDir())), { recursive: true });
}

/** The shared connections' sockets of a tree's wrappers (their TMPDIR is the pi home's). */
const socketDir = (h: TreeHarness): string =>
  path.join(h.home.env.TMPDIR as string, `pst-ssh-${process.getuid?.() ?? 0}`);
/** ssh's `%C`: a 40-hex-digit hash. */
const SOCKET_NAME = /^[0-9a-f]{40}$/;

/** The session id of a process (field 6 of /proc/<pid>/stat). */
function sessionOf(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[3]);
}

/** The far host's processes (its network namespace), sshd's listener left out. */
const farPids = () => (far as SshHost).farPids();

describe("runner: ssh (real pi on both sides, a far host in a network namespace)", () => {
  it(
    "a child runs on the far host; its commit lands on its branch; a live message reaches it; the shared connection is closed after",
    async (ctx) => {
      skipOrFail(ctx, missing);
      const host = far as SshHost;
      let childAsked!: () => void;
      const asked = new Promise<void>((resolve) => (childAsked = resolve));
      let h!: TreeHarness;
      let during: { entries: string[]; users: string[]; check: Promise<MasterAnswer> } | undefined;
      farScripts({
        "/root/remote": [
          () => {
            // The turn runs over the shared connection: one socket, this run its one user.
            const dir = socketDir(h);
            const entries = fs.readdirSync(dir).sort();
            const users = entries.filter((name) => name.endsWith(".users"));
            during = {
              entries,
              users: users.flatMap((name) => fs.readdirSync(path.join(dir, name))),
              check: checkSshMaster(sshRunnerFor(host), { controlPath: `${dir}/%C` }),
            };
            childAsked();
            return reply.toolCall("bash", {
              command: "hostname; cat a.txt; echo remote > remote.txt; echo 'remote was here' >> a.txt; sleep 3",
            });
          },
          reply.toolCall("bash", { command: "echo noted > note.txt" }),
          reply.text("REMOTE DONE"),
        ],
      });
      const root = new Program([
        // Its check runs on the far host too, in the workspace its turn left there.
        spawn({
          task_name: "remote",
          message: "work far away",
          fork_turns: "none",
          runner: "far",
          verify: { run: [FAR_CHECK] },
        }),
        reply.toolCall(
          "send_message",
          { target: "remote", message: NOTE },
          { waitFor: asked.then(() => new Promise((resolve) => setTimeout(resolve, 500))) },
        ),
        waitForAll(["/root/remote"], 90_000),
        reply.toolCall("list_agents", {}),
        reply.text("ROOT DONE"),
      ]);
      h = await tree({ scripts: { "/root": root.steps() }, extraSettings: runners() });
      const repo = dirtyRepository(h);
      const head = treeGit(h, ["rev-parse", "HEAD"]);

      const rootRun = await h.runRoot("go", { timeoutMs: 60_000 });
      keepForDebugging(h);
      expectCleanExit(rootRun);

      // It ran on the far host, from the parent's working state.
      const seen = farOutput("/root/remote", 1);
      expect(seen, diag(h)).toContain(host.hostname);
      expect(seen).toContain("a, uncommitted");
      // The live message went over the connection before the child's next request.
      expect(userTexts(farRequestsOf("/root/remote")[1]!).some((text) => text.includes(NOTE))).toBe(true);

      // The parent's checkout is as it was; the child's work is on its branch.
      expect(treeGit(h, ["rev-parse", "HEAD"])).toBe(head);
      expect(fs.readFileSync(path.join(repo, "a.txt"), "utf8")).toBe("a, uncommitted\n");
      const notice = noticesOf(h).find((n) => n.agent_name === "/root/remote")!;
      expect(notice, diag(h)).toMatchObject({
        type: "completed",
        report: "REMOTE DONE",
        runner: { name: "far", kind: "ssh", host: host.destination },
        verification: { status: "passed", repairs: 0, checks: [{ name: FAR_CHECK, kind: "run", exit_code: 0 }] },
      });

      const worktree = notice.worktree as Json;
      expect(worktree.branch).toMatch(/^subagent\//);
      expect(worktree.changed_files).toEqual(["a.txt", "note.txt", "remote.txt"]);
      expect(treeGit(h, ["rev-parse", worktree.branch as string]).trim()).toBe(worktree.head_commit);
      expect(treeGit(h, ["show", `${worktree.head_commit}:remote.txt`])).toBe("remote\n");
      expect(treeGit(h, ["show", `${worktree.head_commit}:a.txt`])).toBe("a, uncommitted\nremote was here\n");

      const runDir = path.join(h.treeDir(), "agents", "remote", "runs", "0001-spawn");
      const result = JSON.parse(fs.readFileSync(path.join(runDir, "result.json"), "utf8")) as Json;
      expect(result).toMatchObject({
        status: "completed",
        runner: { name: "far", kind: "ssh", host: host.destination },
      });
      // The check ran on the far host, where the turn's files are (remote.txt is there).
      const [farCheck] = (result.verification as { checks: Json[] }).checks;
      expect(farCheck?.output_tail).toBe(`${host.hostname}\nremote`);
      const listed = (rootResult(h, "list_agents").agents as Json[]).find((a) => a.agent_name === "/root/remote");
      expect(listed).toMatchObject({ runner: "far" });
      // One master served the turn, in a session of its own (no run's stop reaches it)…
      expect(during?.entries.filter((name) => SOCKET_NAME.test(name))).toHaveLength(1);
      expect(during?.users).toHaveLength(1);
      const check = await (during as { check: Promise<MasterAnswer> }).check;
      expect(check.ok, check.message).toBe(true);
      const masterPid = Number(/pid=(\d+)/.exec(check.message)?.[1]);
      expect(sessionOf(masterPid)).toBe(masterPid);
      // …and was closed by the last run that used it: no socket, no users, no process of the
      // tree left here (the master carries the tree's environment, so it would be one).
      expect(fs.readdirSync(socketDir(h)).filter((name) => !name.startsWith("."))).toEqual([]);
      expect(await until(() => !processRunning(masterPid), 5_000)).toBe(true);
      await expectNoSurvivors(h);
      // …and nothing is left on the far host: no serve, no pi, no sshd session.
      expect(await until(async () => (await farPids()).length === 0, 10_000), String(await farPids())).toBe(true);
    },
    SCENARIO_MS,
  );
});

describe("runner: ssh, a dialog of an extension installed on the far host", () => {
  it(
    "pi's permission-gate in the far agent dir asks the RPC client of the root, headed with the far child's path: Yes runs its rm there, No blocks it; dialogs.jsonl records both",
    async (ctx) => {
      skipOrFail(ctx, missing);
      const host = far as SshHost;
      // Two folders on the far host, in its user's home: the child removes both, the gate asks twice.
      const victims = path.join(host.home, `victims-${path.basename(host.root)}`);
      const removed = path.join(victims, "removed");
      const kept = path.join(victims, "kept");
      for (const dir of [removed, kept]) {
        fs.mkdirSync(dir, { recursive: true });
        fs.writeFileSync(path.join(dir, "file.txt"), "keep me");
      }
      execFileSync("chown", ["-R", `${host.user}:${host.user}`, victims]);
      const removeCommand = `rm -rf ${removed} && echo REMOVED`;
      const keepCommand = `rm -rf ${kept} && echo REMOVED`;
      const gate = await host.installExtension(PI_PERMISSION_GATE);
      try {
        farScripts({
          "/root/gated": [
            reply.toolCall("bash", { command: removeCommand }),
            reply.toolCall("bash", { command: keepCommand }),
            reply.text("GATED DONE"),
          ],
        });
        const root = new Program([
          spawn({ task_name: "gated", message: "clean up far away", fork_turns: "none", runner: "far" }),
          waitForAll(["/root/gated"], 90_000),
          reply.text("ROOT DONE"),
        ]);
        const h = await tree({ scripts: { "/root": root.steps() }, extraSettings: runners() });
        committedRepository(h);
        const rpc = startRpcRoot(h);
        const titles: string[] = [];
        try {
          rpc.send({ type: "prompt", message: "go" });
          for (const [command, answer] of [
            [removeCommand, "Yes"],
            [keepCommand, "No"],
          ] as const) {
            const dialog = await rpc.rpc.waitFor(
              (line) =>
                line.type === "extension_ui_request" &&
                line.method === "select" &&
                /asks:/.test(line.title) &&
                String(line.title).includes(command),
              90_000,
            );
            titles.push(String(dialog.title));
            expect(dialog.options).toEqual(["Yes", "No"]);
            rpc.send({ type: "extension_ui_response", id: dialog.id, value: answer });
          }
          await rpc.rpc.waitFor((line) => line.type === "agent_end", 90_000);
        } finally {
          await rpc.close();
          keepForDebugging(h);
        }
        for (const title of titles) expect(title).toMatch(/^\/root\/gated asks: .*Dangerous command/s);
        // "Yes" let the far child's rm run there; "No" blocked the second, its folder is still there.
        expect(fs.existsSync(removed), diag(h)).toBe(false);
        expect(farOutput("/root/gated", 1)).toContain("REMOVED");
        expect(fs.existsSync(path.join(kept, "file.txt"))).toBe(true);
        expect(farOutput("/root/gated", 2)).toContain("Blocked by user");
        const records = dialogRecords(h);
        expect(records).toEqual([
          expect.objectContaining({
            agent: "/root/gated",
            seq: 1,
            method: "select",
            value: "Yes",
            answeredBy: "person",
          }),
          expect.objectContaining({
            agent: "/root/gated",
            seq: 2,
            method: "select",
            value: "No",
            answeredBy: "person",
          }),
        ]);
        expect(String(records[0]?.title)).toContain(removeCommand);
        expect(String(records[1]?.title)).toContain(keepCommand);
        await expectNoSurvivors(h);
      } finally {
        fs.rmSync(gate, { force: true });
        fs.rmSync(victims, { recursive: true, force: true });
      }
    },
    SCENARIO_MS,
  );
});

describe.skipIf(ONE_LINE_IS_ENOUGH)("runner: ssh, when the connection or the host fails", () => {
  it(
    "a killed ssh client ends the turn errored with runner_lost; nothing of it is left on the far host 10 s later; a follow-up resumes its conversation",
    async (ctx) => {
      skipOrFail(ctx, missing);
      let h!: TreeHarness;
      let sleeping!: () => void;
      const asleep = new Promise<void>((resolve) => (sleeping = resolve));
      const seen = { farPids: [] as number[], client: 0, killedAt: 0, goneAfterMs: -1 };
      farScripts({
        "/root/doomed": [
          () => {
            // Once its bash runs: the turn's processes on the far host, then the run's ssh client killed.
            void (async () => {
              await new Promise((resolve) => setTimeout(resolve, 1500));
              seen.farPids = await farPids();
              seen.client = (await h.runPids())[0] ?? 0;
              seen.killedAt = Date.now();
              if (seen.client > 0) process.kill(seen.client, "SIGKILL");
              sleeping();
              // The far side sees its stdin end: serve stops pi and its sleep; the master is closed.
              const left = async () => (await farPids()).filter((pid) => seen.farPids.includes(pid));
              if (await until(async () => (await left()).length === 0, 10_000))
                seen.goneAfterMs = Date.now() - seen.killedAt;
            })();
            return reply.toolCall("bash", { command: "echo begun > begun.txt; sleep 60" });
          },
          reply.text("RESUMED"),
        ],
      });
      const root = new Program([
        spawn({ task_name: "doomed", message: "sleep far away", fork_turns: "none", runner: "far" }),
        reply.toolCall("wait_agent", { timeout_ms: 60_000 }, { waitFor: asleep }),
        waitForAll(["/root/doomed"], 60_000),
        reply.toolCall("followup_task", { target: "doomed", message: "go on" }),
        waitUntil((notices) => notices.filter((n) => n.agent_name === "/root/doomed").length === 2, 60_000),
        reply.text("ROOT DONE"),
      ]);
      h = await tree({ scripts: { "/root": root.steps() }, extraSettings: runners() });
      dirtyRepository(h);
      const rootRun = await h.runRoot("go", { timeoutMs: 120_000 });
      keepForDebugging(h);
      expectCleanExit(rootRun);
      expect(seen.client).toBeGreaterThan(0);
      expect(seen.farPids.length).toBeGreaterThan(0);
      const [notice, resumed] = noticesOf(h).filter((n) => n.agent_name === "/root/doomed");
      expect(notice, diag(h)).toMatchObject({ type: "errored", runner: { name: "far", kind: "ssh" } });
      expect(JSON.stringify(notice)).toMatch(/runner_lost: runner far \(ssh\): the connection was lost mid-turn/);
      expect(seen.goneAfterMs, "far processes of the lost turn still there 10 s after").toBeGreaterThanOrEqual(0);
      console.log(`ssh runner_lost: the lost turn's far processes were gone ${seen.goneAfterMs} ms after the kill`);
      // Resumable: a follow-up runs the agent again on the runner (a new connection and master).
      expect(resumed, diag(h)).toMatchObject({ type: "completed", report: "RESUMED", runner: { name: "far" } });
      expect(userTexts(farRequestsOf("/root/doomed")[1]!).some((text) => text.includes("go on"))).toBe(true);
      // …and resumes the lost turn's conversation (its session streamed back while it ran): the
      // follow-up's first request carries the first turn's task and its tool call, not a fresh start.
      const followUp = farRequestsOf("/root/doomed")[1]!;
      expect(
        userTexts(followUp).some((text) => text.includes("sleep far away")),
        JSON.stringify(followUp),
      ).toBe(true);
      const calls = followUp.messages.filter((m) => m.role === "assistant").map((m) => JSON.stringify(m.tool_calls));
      expect(
        calls.some((call) => call.includes("sleep 60")),
        JSON.stringify(followUp.messages),
      ).toBe(true);
      const runDir = path.join(h.treeDir(), "agents", "doomed", "runs", "0001-spawn");
      // The local session file's header names the agent's own folder, not the far side's scratch.
      const meta = JSON.parse(fs.readFileSync(path.join(runDir, "meta.json"), "utf8")) as {
        cwd: string;
        sessionPath: string;
      };
      const header = JSON.parse(fs.readFileSync(meta.sessionPath, "utf8").split("\n")[0]!) as { cwd: string };
      expect(header.cwd).toBe(meta.cwd);
      const result = JSON.parse(fs.readFileSync(path.join(runDir, "result.json"), "utf8")) as Json;
      const endedAfter = Date.parse(result.endedAt as string) - seen.killedAt;
      console.log(`ssh runner_lost: the run ended ${endedAfter} ms after its ssh client was killed`);
      expect(endedAfter).toBeLessThan(10_000);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  it(
    "a closed port and a key the host refuses end the turn errored with ssh's own words, within seconds",
    async (ctx) => {
      skipOrFail(ctx, missing);
      const host = far as SshHost;
      const otherKey = path.join(fs.mkdtempSync("/var/tmp/pst-key-"), "other");
      execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", otherKey]);
      try {
        const extra = {
          closed: sshRunnerFor(host, { port: host.port + 1, capacity: 2 }),
          refused: sshRunnerFor(host, { identity: otherKey, capacity: 2 }),
        };
        const root = new Program([
          reply.toolCalls([
            { name: "spawn_agent", args: { task_name: "closed", message: "x", fork_turns: "none", runner: "closed" } },
            {
              name: "spawn_agent",
              args: { task_name: "refused", message: "x", fork_turns: "none", runner: "refused" },
            },
          ]),
          waitForAll(["/root/closed", "/root/refused"], 60_000),
          reply.text("ROOT DONE"),
        ]);
        const h = await tree({ scripts: { "/root": root.steps() }, extraSettings: runners(extra) });
        dirtyRepository(h);
        const rootRun = await h.runRoot("go", { timeoutMs: 90_000 });
        keepForDebugging(h);
        expectCleanExit(rootRun);
        const notices = noticesOf(h);
        const closed = notices.find((n) => n.agent_name === "/root/closed")!;
        const refused = notices.find((n) => n.agent_name === "/root/refused")!;
        expect(closed, diag(h)).toMatchObject({ type: "errored", runner: { name: "closed", kind: "ssh" } });
        expect(JSON.stringify(closed)).toMatch(
          /runner closed \(ssh\) could not start: ssh: connect to host .* Connection refused \(exit code 255\)/,
        );
        expect(refused, diag(h)).toMatchObject({ type: "errored", runner: { name: "refused", kind: "ssh" } });
        expect(JSON.stringify(refused)).toMatch(
          /runner refused \(ssh\) could not start: .*Permission denied \(publickey\)\. \(exit code 255\)/,
        );
        const durations = ["closed", "refused"].map((name) => {
          const runDir = path.join(h.treeDir(), "agents", name, "runs", "0001-spawn");
          return (JSON.parse(fs.readFileSync(path.join(runDir, "result.json"), "utf8")) as Json).durationMs as number;
        });
        console.log(`ssh refusals as turns: closed port ${durations[0]} ms, refused key ${durations[1]} ms`);
        expect(Math.max(...durations)).toBeLessThan(10_000);
        await expectNoSurvivors(h);
      } finally {
        fs.rmSync(path.dirname(otherKey), { recursive: true, force: true });
      }
    },
    SCENARIO_MS,
  );
});

describe.skipIf(ONE_LINE_IS_ENOUGH)("runner: ssh, stops and many children", () => {
  it(
    "an interrupt and a close reach the far child: its processes there end each time, a follow-up resumes its conversation",
    async (ctx) => {
      skipOrFail(ctx, missing);
      let h!: TreeHarness;
      let phase = 0;
      /** Far pids seen while each sleep ran. */
      const during: number[][] = [];
      let farBusy = false;
      const sleepStep = () => {
        void (async () => {
          await new Promise((resolve) => setTimeout(resolve, 1500));
          during.push(await farPids());
          farBusy = true;
        })();
        return reply.toolCall("bash", { command: "echo begun >> begun.txt; sleep 60" });
      };
      farScripts({ "/root/slow": [sleepStep, reply.text("BACK"), sleepStep, reply.text("never")] });
      const drive = () => {
        switch (phase) {
          case 0:
            phase = 1;
            return spawn({ task_name: "slow", message: "Run sleep 60", fork_turns: "none", runner: "far" });
          case 1:
          case 5:
            if (!farBusy) return reply.toolCall("wait_agent", { timeout_ms: 250 });
            farBusy = false;
            phase += 1;
            return reply.toolCall(phase === 2 ? "interrupt_agent" : "close_agent", { target: "slow" });
          case 2:
            phase = 3;
            return reply.toolCall("wait_agent", { timeout_ms: 60_000 });
          case 3:
            phase = 4;
            return reply.toolCall("followup_task", { target: "slow", message: "Are you back?" });
          case 4:
            // The follow-up's answer, then a second turn that sleeps again (a follow-up of its own).
            if (!noticesOf(h).some((n) => n.type === "completed"))
              return reply.toolCall("wait_agent", { timeout_ms: 60_000 });
            phase = 5;
            return reply.toolCall("followup_task", { target: "slow", message: "Sleep again" });
          case 6:
            phase = 7;
            return reply.toolCall("wait_agent", { timeout_ms: 10_000 });
          default:
            return reply.text("ROOT DONE");
        }
      };
      h = await tree({ scripts: {}, extraSettings: runners() });
      h.tree.add("/root", ...Array.from({ length: 400 }, () => drive));
      dirtyRepository(h);
      const rootRun = await h.runRoot("go", { timeoutMs: 150_000 });
      keepForDebugging(h);
      expectCleanExit(rootRun);
      expect(phase, diag(h)).toBe(7);
      const notices = noticesOf(h).filter((n) => n.agent_name === "/root/slow");
      expect(
        notices.map((n) => n.type),
        diag(h),
      ).toEqual(["interrupted", "completed", "shutdown"]);
      expect(notices[1]!.report).toBe("BACK");
      // The follow-up continued the same conversation (its request holds the first turn's bash call).
      expect(JSON.stringify(farRequestsOf("/root/slow")[2]!.messages)).toContain("sleep 60");
      // What the interrupted turn wrote came back too.
      expect((notices[0]!.worktree as Json).changed_files).toContain("begun.txt");
      expect(during).toHaveLength(2);
      for (const pids of during) expect(pids.length).toBeGreaterThan(0);
      const left = async () => (await farPids()).filter((pid) => during.flat().includes(pid));
      expect(await until(async () => (await left()).length === 0, 10_000), String(await left())).toBe(true);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  it(
    "12 children on an ssh runner of capacity 12 run at once (the local limit of 3 does not apply to them)",
    async (ctx) => {
      skipOrFail(ctx, missing);
      const names = Array.from({ length: 12 }, (_, i) => `w${i + 1}`);
      let arrived = 0;
      let inFlightWhenAnswered = 0;
      let allThere!: () => void;
      const together = new Promise<void>((resolve) => (allThere = resolve));
      // No child gets an answer before all 12 have asked (or 90 s have passed: then the count says why).
      const gate = Promise.race([together, new Promise((resolve) => setTimeout(resolve, 90_000).unref())]).then(() => {
        inFlightWhenAnswered = arrived;
      });
      const scripts: Record<string, AgentStep[]> = {};
      for (const name of names) {
        scripts[`/root/${name}`] = [
          () => {
            arrived += 1;
            if (arrived === names.length) allThere();
            return reply.text(`${name} DONE`, { waitFor: gate });
          },
        ];
      }
      farScripts(scripts);
      const root = new Program([
        reply.toolCalls(
          names.map((name) => ({
            name: "spawn_agent",
            args: { task_name: name, message: "answer", fork_turns: "none", runner: "far" },
          })),
        ),
        waitForAll(
          names.map((name) => `/root/${name}`),
          120_000,
        ),
        reply.text("ROOT DONE"),
      ]);
      const h = await tree({ scripts: { "/root": root.steps() }, extraSettings: runners() });
      dirtyRepository(h);
      const started = Date.now();
      const rootRun = await h.runRoot("go", { timeoutMs: 170_000 });
      keepForDebugging(h);
      expectCleanExit(rootRun);
      console.log(`ssh fan-out: 12 children in flight together, whole root run ${Date.now() - started} ms`);
      expect(inFlightWhenAnswered, diag(h)).toBe(12);
      const notices = noticesOf(h);
      for (const name of names) {
        expect(notices.find((n) => n.agent_name === `/root/${name}`)).toMatchObject({
          type: "completed",
          report: `${name} DONE`,
        });
      }
      await expectNoSurvivors(h);
      expect(await until(async () => (await farPids()).length === 0, 10_000), String(await farPids())).toBe(true);
    },
    SCENARIO_MS + 60_000,
  );
});
