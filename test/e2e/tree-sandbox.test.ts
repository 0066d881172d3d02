/**
 * The `sandbox` runner end to end: the real pi loading the extension, scripted
 * models, a real git repository with uncommitted parent changes, and bubblewrap. A child
 * spawned with `runner: "box"` starts from the parent's working state, cannot create or change
 * a file of the parent's checkout or of the package, cannot read a hidden path, a secret
 * variable of the root's environment or another provider's login in pi's auth.json, cannot
 * write auth.json, cannot connect to a host Unix socket (under /run, in $XDG_RUNTIME_DIR) and
 * cannot see a host process (each tried through its bash tool), sees its own PID namespace; its edits land on its `subagent/*`
 * branch with the notice's `worktree` fields; a live message reaches it through `serve`, an
 * interrupt stops it; its spawn_agent is refused with the reason; no process of it is left after its turn.
 *
 * Needs `bwrap`: without it the tests are skipped with a plain line, and fail when CI is set.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { processAlive } from "../../src/lib/process.js";
import { slotHolders } from "../../src/lib/slot-lease.js";
import { ONE_LINE_IS_ENOUGH, PI_LINE, REPO_ROOT } from "../support/pi-home.js";
import { reply, userTexts } from "../support/scripted-llm.js";
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

const HAS_BWRAP = (() => {
  try {
    execFileSync("bwrap", ["--ro-bind", "/", "/", "true"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();
if (!HAS_BWRAP) {
  process.stderr.write(
    `runner tests: SKIPPED test/e2e/tree-sandbox.test.ts: bwrap (Debian package bubblewrap) is missing or cannot make a namespace here${process.env.CI ? " — FAILING, CI is set" : ""}\n`,
  );
}

const tree = useTrees();
const SCENARIO_MS = 150_000;
const NOTE = "also write note.txt";

/** A folder outside /tmp for the hide test (what lies under /tmp is hidden by the sandbox's private /tmp anyway). */
const secretDir = fs.mkdtempSync(path.join(fs.existsSync("/var/tmp") ? "/var/tmp" : os.homedir(), "psa-hidden-"));
fs.writeFileSync(path.join(secretDir, "key"), "TOP-SECRET\n");
/** Host sockets the child tries to reach: one under /run, one in the root's $XDG_RUNTIME_DIR (outside /tmp). */
const runtimeDir = fs.mkdtempSync(path.join(path.dirname(secretDir), "psa-xdg-"));
const hostSockets = [`/run/psa-e2e-${path.basename(secretDir)}.sock`, path.join(runtimeDir, "bus")].filter(
  (file) => !file.startsWith("/run/") || fs.statSync("/run", { throwIfNoEntry: false })?.isDirectory(),
);
const servers: net.Server[] = [];
beforeAll(async () => {
  for (const file of hostSockets) {
    const server = net.createServer((socket) => socket.on("error", () => undefined).end("HOST-SOCKET-ANSWERED\n"));
    await new Promise<void>((resolve, reject) => server.once("error", reject).listen(file, resolve));
    servers.push(server);
  }
});
afterAll(async () => {
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  for (const file of hostSockets) fs.rmSync(file, { force: true });
  fs.rmSync(runtimeDir, { recursive: true, force: true });
  fs.rmSync(secretDir, { recursive: true, force: true });
});
/** Tries each host socket: `CONNECTED <path>` or `REFUSED <path> <code>`. */
const CONNECT_SCRIPT = `for (const f of process.argv.slice(1)) { const s = require("net").connect(f); s.on("connect", () => { console.log("CONNECTED " + f); s.destroy(); }); s.on("error", (e) => console.log("REFUSED " + f + " " + e.code)); }`;
/** The root's environment: a secret the child must not see, a variable the runner names, a runtime dir. */
const rootEnv = { PSA_SECRET_TOKEN: "ENV-SECRET-TOKEN", PSA_NAMED: "NAMED-KEPT", XDG_RUNTIME_DIR: runtimeDir };

/** The parent's repository with uncommitted work (a modified and an untracked file), and a key in ~/.ssh. */
function sandboxRepository(h: TreeHarness): string {
  const repo = dirtyRepository(h, { untracked: true });
  fs.mkdirSync(path.join(h.home.home, ".ssh"), { recursive: true });
  fs.writeFileSync(path.join(h.home.home, ".ssh", "id_test"), "SSH-KEY\n");
  return repo;
}

/** pi's own example gate, loaded in the root only: it ships beside this line's pi. */
const PERMISSION_GATE = (() => {
  for (let dir = path.dirname(PI_LINE.piCli); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, "package.json")))
      return path.join(dir, "examples", "extensions", "permission-gate.ts");
  }
  throw new Error(`no package.json above ${PI_LINE.piCli}`);
})();

const settings = {
  subagents: { runners: { box: { kind: "sandbox", hide: ["~/.ssh", secretDir], env: ["PSA_NAMED"] } } },
};

function snapshot(repo: string): string {
  return execFileSync("sh", ["-c", "find . -path ./.git -prune -o -type f -print | sort | xargs sha256sum"], {
    cwd: repo,
    encoding: "utf8",
  });
}

const outputOf = (h: TreeHarness, agent: string, request: number): string =>
  JSON.stringify(toolResults(h.requestsOf(agent)[request]!));

describe.skipIf(!HAS_BWRAP)("runner: sandbox (real pi, scripted models, bubblewrap)", () => {
  it(
    "a sandboxed child cannot touch the parent's checkout or read hidden paths; its edits land on its branch; a live message reaches it; the root's permission gate guards it",
    async () => {
      let childAsked!: () => void;
      const asked = new Promise<void>((resolve) => (childAsked = resolve));
      const root = new Program([
        spawn({ task_name: "boxed", message: "work in the box", fork_turns: "none", runner: "box" }),
        reply.toolCall(
          "send_message",
          { target: "boxed", message: NOTE },
          { waitFor: asked.then(() => new Promise((resolve) => setTimeout(resolve, 500))) },
        ),
        waitForAll(["/root/boxed"], 60_000),
        reply.toolCall("list_agents", {}),
        reply.text("ROOT DONE"),
      ]);
      const probe = (repo: string, home: string) =>
        [
          "cat a.txt new.txt",
          `echo hacked > ${repo}/a.txt && echo PARENT-WRITTEN || echo PARENT-WRITE-REFUSED`,
          `touch ${repo}/created.txt && echo PARENT-CREATED || echo PARENT-CREATE-REFUSED`,
          `touch ${REPO_ROOT}/sandbox-probe && echo PACKAGE-WRITTEN || echo PACKAGE-WRITE-REFUSED`,
          `cat ${home}/.ssh/id_test && echo SSH-READ || echo SSH-HIDDEN`,
          `cat ${secretDir}/key && echo SECRET-READ || echo SECRET-HIDDEN`,
          `touch ${secretDir}/x && echo SECRET-WRITTEN || echo SECRET-WRITE-REFUSED`,
          "echo PROCS=$(ls /proc | grep -c '^[0-9]')",
          "echo SECRET=[$PSA_SECRET_TOKEN] NAMED=[$PSA_NAMED] RUNTIME=[$XDG_RUNTIME_DIR]",
          `node -e '${CONNECT_SCRIPT}' ${hostSockets.join(" ")}`,
          'cat "$PI_CODING_AGENT_DIR/auth.json"',
          'echo x > "$PI_CODING_AGENT_DIR/auth.json" && echo AUTH-WRITTEN || echo AUTH-WRITE-REFUSED',
          `kill -0 ${process.pid} && echo HOST-PROCESS-SEEN || echo HOST-PROCESS-UNSEEN`,
          'echo boxed > boxed.txt; echo "boxed was here" >> a.txt',
          "sleep 4",
        ].join("; ");
      let h!: TreeHarness;
      h = await tree({
        scripts: {
          "/root": root.steps(),
          "/root/boxed": [
            () => {
              childAsked();
              return reply.toolCall("bash", { command: probe(h.home.cwd, h.home.home) });
            },
            reply.toolCall("bash", { command: "echo noted > note.txt" }),
            // The root's permission gate guards the sandboxed child too (its dialog denied by the settings).
            reply.toolCall("bash", { command: "rm -rf boxed.txt && echo GATE-MISSED" }),
            // Away from the tree's folder, it cannot delegate: one clear tool error.
            reply.toolCall("spawn_agent", { task_name: "sub", message: "x", fork_turns: "none" }),
            reply.text("BOXED DONE"),
          ],
        },
        extraSettings: { subagents: { ...settings.subagents, dialogs: "deny" } },
        env: rootEnv,
      });
      // Another provider's login beside the run's (fake, whose key is in models.json).
      fs.writeFileSync(
        path.join(h.home.dir, "auth.json"),
        JSON.stringify({ other: { type: "api_key", key: "OTHER-LOGIN" } }),
      );
      const repo = sandboxRepository(h);
      const before = snapshot(repo);
      const head = treeGit(h, ["rev-parse", "HEAD"]);

      const rootRun = await h.runRoot("go", { ...ROOT_RUN, args: ["-e", PERMISSION_GATE] });
      expectCleanExit(rootRun);

      const seen = outputOf(h, "/root/boxed", 1);
      expect(seen).toContain("a, uncommitted");
      expect(seen).toContain("new, untracked");
      for (const word of ["PARENT-WRITE-REFUSED", "PARENT-CREATE-REFUSED", "PACKAGE-WRITE-REFUSED", "SSH-HIDDEN"])
        expect(seen).toContain(word);
      expect(seen).toContain("SECRET-HIDDEN");
      expect(seen).toContain("SECRET-WRITE-REFUSED");
      expect(seen).not.toMatch(/PARENT-WRITTEN|PARENT-CREATED|PACKAGE-WRITTEN|SSH-READ|SECRET-READ|TOP-SECRET|SSH-KEY/);
      // Its own PID namespace: a handful of processes, not the machine's.
      const procs = Number(/PROCS=(\d+)/.exec(seen)?.[1]);
      expect(procs).toBeGreaterThan(0);
      expect(procs).toBeLessThan(15);
      expect(fs.existsSync(path.join(REPO_ROOT, "sandbox-probe"))).toBe(false);
      // The environment is an allow-list; no host socket, process or other login is reachable.
      expect(seen).toContain("SECRET=[] NAMED=[NAMED-KEPT] RUNTIME=[]");
      expect(seen).not.toMatch(/ENV-SECRET-TOKEN|CONNECTED|OTHER-LOGIN|AUTH-WRITTEN|HOST-PROCESS-SEEN/);
      for (const file of hostSockets) expect(seen).toMatch(new RegExp(`REFUSED ${file} E[A-Z]+`));
      expect(seen).toContain("AUTH-WRITE-REFUSED");
      expect(seen).toContain("HOST-PROCESS-UNSEEN");
      expect(JSON.parse(fs.readFileSync(path.join(h.home.dir, "auth.json"), "utf8")).other.key).toBe("OTHER-LOGIN");

      // The live message went through serve, before the child's next request.
      expect(
        userTexts(h.requestsOf("/root/boxed")[1]!).some((text) => text.includes(NOTE)),
        diag(h),
      ).toBe(true);

      expect(outputOf(h, "/root/boxed", 3)).toContain("Blocked by user");
      expect(outputOf(h, "/root/boxed", 3)).not.toContain("GATE-MISSED");
      const dialogs = fs.readFileSync(path.join(h.treeDir(), "dialogs.jsonl"), "utf8");
      expect(dialogs).toContain('"/root/boxed"');
      expect(dialogs).toContain('"deny"');
      expect(outputOf(h, "/root/boxed", 4)).toContain(
        "spawn_agent does not work on runner box (sandbox): this agent runs away from the agent tree's folder",
      );
      expect(fs.existsSync(path.join(h.treeDir(), "agents", "boxed", "sub"))).toBe(false);
      // Its turn held one of the runner's slots in the tree directory, free again once it ended.
      const slots = path.join(h.treeDir(), "runners", "box");
      expect(fs.readdirSync(slots).filter((name) => name.startsWith("slot."))).toEqual(["slot.1.1"]);
      expect(slotHolders(slots).size).toBe(0);

      // The parent's checkout is as it was; the child's work is on its branch.
      expect(snapshot(repo)).toBe(before);
      expect(treeGit(h, ["rev-parse", "HEAD"])).toBe(head);
      const notice = noticesOf(h).find((n) => n.agent_name === "/root/boxed")!;
      expect(notice, diag(h)).toMatchObject({ type: "completed", runner: { name: "box", kind: "sandbox" } });
      const worktree = notice.worktree as Json;
      // Against the base (which holds the parent's uncommitted work): only what the child changed.
      expect(worktree.changed_files).toEqual(["a.txt", "boxed.txt", "note.txt"]);
      expect(worktree.head_commit).not.toBe(worktree.base_commit);
      expect(treeGit(h, ["show", `${worktree.head_commit}:boxed.txt`])).toBe("boxed\n");
      expect(treeGit(h, ["show", `${worktree.head_commit}:a.txt`])).toBe("a, uncommitted\nboxed was here\n");

      // The run directory is a local run's.
      const runDir = path.join(h.treeDir(), "agents", "boxed", "runs", "0001-spawn");
      for (const file of ["meta.json", "events.jsonl", "result.json", "stdout.log", "stderr.log", "transcript.md"])
        expect(fs.existsSync(path.join(runDir, file)), file).toBe(true);
      const result = JSON.parse(fs.readFileSync(path.join(runDir, "result.json"), "utf8")) as Json;
      expect(result).toMatchObject({ status: "completed", runner: { name: "box", kind: "sandbox" } });
      const listed = (rootResult(h, "list_agents").agents as Json[]).find((a) => a.agent_name === "/root/boxed");
      expect(listed).toMatchObject({ runner: "box" });
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  // The runner's own stop path, the same on either line (the first case keeps the sandbox on both): pi 1.x only in npm test (ONE_LINE_IS_ENOUGH).
  it.skipIf(ONE_LINE_IS_ENOUGH)(
    "an interrupt reaches the sandboxed child (its sleep ends, nothing of it is left) and a follow-up resumes its conversation",
    async () => {
      let phase = 0;
      let sleepPids: number[] = [];
      const h: TreeHarness = await tree({
        scripts: {
          "/root/slow": [reply.toolCall("bash", { command: "echo begun > begun.txt; sleep 60" }), reply.text("BACK")],
        },
        extraSettings: settings,
      });
      const drive = () => {
        switch (phase) {
          case 0:
            phase = 1;
            return spawn({ task_name: "slow", message: "Run sleep 60", fork_turns: "none", runner: "box" });
          case 1:
            sleepPids = scenarioProcs(h, "sleep 60");
            if (sleepPids.length === 0) return reply.toolCall("wait_agent", { timeout_ms: 250 });
            phase = 2;
            return reply.toolCall("interrupt_agent", { target: "slow" });
          case 2:
            phase = 3;
            return reply.toolCall("followup_task", { target: "slow", message: "Are you back?" });
          case 3:
          case 4:
            // The interrupted turn's notice first, then the follow-up's.
            phase += 1;
            return reply.toolCall("wait_agent", { timeout_ms: 60_000 });
          default:
            return reply.text("ROOT DONE");
        }
      };
      h.tree.add("/root", ...Array.from({ length: 400 }, () => drive));
      sandboxRepository(h);
      expectCleanExit(await h.runRoot("go", ROOT_RUN));
      expect(phase, diag(h)).toBe(5);
      expect(sleepPids.length).toBeGreaterThan(0);
      for (const pid of sleepPids) expect(processAlive(pid)).toBe(false);
      const notices = noticesOf(h).filter((n) => n.agent_name === "/root/slow");
      expect(
        notices.map((n) => n.type),
        diag(h),
      ).toEqual(["interrupted", "completed"]);
      expect(notices[1]!.report).toBe("BACK");
      // The follow-up continued the same conversation: its request holds the first turn's bash call.
      const followup = h.requestsOf("/root/slow").at(-1)!;
      expect(JSON.stringify(followup.messages)).toContain("sleep 60");
      // What the interrupted turn wrote came back too (commits that came back stay).
      const worktree = notices[0]!.worktree as Json;
      expect(worktree.changed_files).toContain("begun.txt");
      // The follow-up sent only what the workspace the sandbox kept (in the agent's folder) lacked.
      const runs = path.join(h.treeDir(), "agents", "slow", "runs");
      const logOf = (run: string) => fs.readFileSync(path.join(runs, run, "wrapper.log"), "utf8");
      expect(logOf("0001-spawn")).toMatch(/runner box \(sandbox\): workspace bundle \d+ bytes\n/);
      expect(logOf("0002-followup")).toMatch(
        /workspace bundle \d+ bytes, without what the far side kept of the last turn/,
      );
      expect(fs.existsSync(path.join(h.treeDir(), "agents", "slow", "runner-workspace"))).toBe(true);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  it(
    "an unknown runner and a runner outside git are spawn errors",
    async () => {
      const root = new Program([
        spawn({ task_name: "nowhere", message: "x", fork_turns: "none", runner: "gpu" }),
        spawn({ task_name: "nogit", message: "x", fork_turns: "none", runner: "box" }),
        reply.text("ROOT DONE"),
      ]);
      const h = await tree({ scripts: { "/root": root.steps() }, extraSettings: settings });
      expectCleanExit(await h.runRoot("go", ROOT_RUN));
      const texts = JSON.stringify(h.requestsOf("/root").map((req) => toolResults(req)));
      expect(texts).toContain("unknown runner: gpu (known: local, box)");
      expect(texts).toContain("runner box needs a git repository");
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );
});

describe.runIf(!HAS_BWRAP && Boolean(process.env.CI))("runner: sandbox under CI", () => {
  it("needs bwrap (install the Debian package bubblewrap; .ci/run does)", () => {
    expect.fail("bwrap is missing or cannot make a namespace: the sandbox runner's tests cannot run");
  });
});
