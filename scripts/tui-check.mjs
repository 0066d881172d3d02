#!/usr/bin/env node
// Checks the tree in a real terminal, as a person uses it: runs the real pi (devDependency)
// interactively inside a private tmux server, with this package's extension, against a
// scripted loopback LLM (no API key, no network). The root spawns two children, one of which
// spawns a grandchild, and waits for them. Then, as a person would:
//   1. while they work: the widget and status line show the tree once (not again in the
//      wait's progress), and the tool calls render as one compact line each;
//   2. type a message: wait_agent gives way and the model answers it while the children work;
//   3. /agents: the tree, one agent's details (run folder, live transcript), interrupt it;
//   4. the other children end while the root is idle: their notices wake the model, and the
//      widget folds away to the status line;
//   4b. a child's dialog: pi's own examples/extensions/permission-gate.ts, loaded in the root
//      only, guards a child's `rm -rf`; the person sees "/root/epsilon asks:" and answers
//      "Yes" (it runs) and then "No" (it is blocked);
//   5. start one more child and quit with ctrl+d (onExit detach, the interactive default): the
//      last frame says it is left running, and the terminal says how to look, stop or re-attach;
//   6. pi again on the session in a new tmux session: the child is taken back, running; the
//      tmux session is killed (the terminal closed): the child still runs; `subagent-wrapper
//      stop` on the tree ends it interrupted and leaves no process.
// Each step's pane is printed under a `--- <step> ---` header.
//
//   node scripts/tui-check.mjs          exit 0 = every step as expected, 1 = not, 2 = set-up
//                                       problem, 3 = no tmux
// Environment: TMUX_BIN (default: tmux on PATH), TUI_CHECK_TIMEOUT_MS (default 150000),
// PI_SUBAGENTS_TEST_PI_LINE (0.73: check pi 0.73.1 on this Node; default the current pi 1.x).
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startLoopbackLlm } from "../examples/tree-demo/scripted-llm.mjs";
import { ensureLineBin, lineName, linePath, resolveLine } from "./pi-lines.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
// The current pi (1.x) on the Node 22 from node_modules; PI_SUBAGENTS_TEST_PI_LINE=0.73 for pi 0.73.1.
let line;
try {
  line = resolveLine(root, lineName());
  ensureLineBin(line);
} catch (err) {
  console.error(`tui-check: ${err.message}`);
  process.exit(2);
}
const pi = line.piCli;
const timeoutMs = Number(process.env.TUI_CHECK_TIMEOUT_MS) || 150_000;
const MODEL = "loop/fast";

function findTmux() {
  const candidates = process.env.TMUX_BIN
    ? [process.env.TMUX_BIN]
    : (process.env.PATH ?? "").split(path.delimiter).map((dir) => path.join(dir, "tmux"));
  return candidates.find((file) => file && existsSync(file));
}

const tmuxBin = findTmux();
if (!tmuxBin) {
  console.error("tui-check: tmux not found (install it, or set TMUX_BIN)");
  process.exit(3);
}
if (!existsSync(pi) || !existsSync(path.join(root, "dist", "extension", "index.js"))) {
  console.error('tui-check: run "npm install" first (it installs pi and builds dist/)');
  process.exit(2);
}
// Imported once dist/ is known to exist: the one reader of /proc, shared with the package.
const { processesWithEnvSync } = await import("../dist/lib/process.js");

const text = (content) => (typeof content === "string" ? content : JSON.stringify(content ?? ""));
const parse = (value) => {
  try {
    return JSON.parse(value);
  } catch {
    return {};
  }
};
const results = (body) => (body.messages ?? []).filter((m) => m.role === "tool").map((m) => parse(text(m.content)));
const noticeCount = (body) => results(body).reduce((n, r) => n + (r.notices?.length ?? 0), 0);
/** The tools the model called in its last message (what the trailing tool results answer). */
const lastCalls = (body) =>
  ([...(body.messages ?? [])].reverse().find((m) => m.role === "assistant")?.tool_calls ?? []).map(
    (call) => call.function?.name,
  );

const TYPED = "how is it going?";
const ONE_MORE = "start one more";
const GATED = "clean up the scratch folders";

/** The root answers what it was last sent: the person's words, a wake, or its tools' results. */
function rootStep(body) {
  const last = (body.messages ?? []).at(-1);
  if (last?.role === "user") {
    const said = text(last.content);
    if (said.includes(TYPED)) return { text: "ANSWER WHILE CHILDREN WORK" };
    if (said.includes("While you were idle")) return { text: "WOKEN: the children reported" };
    if (said.includes(GATED))
      return { calls: [["spawn_agent", { task_name: "epsilon", fork_turns: "none", message: "Remove them." }]] };
    if (said.includes(ONE_MORE))
      return {
        calls: [["spawn_agent", { task_name: "delta", fork_turns: "none", message: "Work for a long while." }]],
      };
    return {
      text: "Starting the workers.",
      calls: [
        ["spawn_agent", { task_name: "alpha", fork_turns: "none", message: "Work for a long while, then report." }],
        [
          "spawn_agent",
          { task_name: "beta", fork_turns: "none", message: "Have a helper work for a while, then report." },
        ],
      ],
    };
  }
  if (lastCalls(body).includes("spawn_agent")) {
    if (lastCalls(body).length > 1) return { calls: [["wait_agent", { timeout_ms: 60_000 }]] };
    const person = [...(body.messages ?? [])].reverse().find((m) => m.role === "user");
    return { text: text(person?.content).includes(GATED) ? "EPSILON STARTED" : "DELTA STARTED" };
  }
  return { text: "ROOT IDLE" };
}

const SCRIPT = {
  "/root": rootStep,
  "/root/alpha": [() => ({ calls: [["bash", { command: "sleep 60" }]] }), () => ({ text: "alpha finished" })],
  "/root/beta": [
    () => ({
      calls: [["spawn_agent", { task_name: "gamma", fork_turns: "none", message: "Work for a while, then report." }]],
    }),
    (body) =>
      noticeCount(body) < 1
        ? { calls: [["wait_agent", { timeout_ms: 60_000 }]] }
        : { text: "beta finished with gamma's help" },
  ],
  "/root/beta/gamma": [() => ({ calls: [["bash", { command: "sleep 14" }]] }), () => ({ text: "gamma finished" })],
  "/root/delta": [() => ({ calls: [["bash", { command: "sleep 60" }]] }), () => ({ text: "delta finished" })],
  "/root/epsilon": [
    () => ({ calls: [["bash", { command: `rm -rf ${scratch("yes")} && echo REMOVED` }]] }),
    () => ({ calls: [["bash", { command: `rm -rf ${scratch("no")} && echo REMOVED` }]] }),
    () => ({ text: "epsilon finished" }),
  ],
};
// beta's wait may time out and ask again: its second step repeats until gamma's notice came.
for (let i = 0; i < 20; i++) SCRIPT["/root/beta"].push(SCRIPT["/root/beta"][1]);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const home = mkdtempSync(path.join(os.tmpdir(), "pi-tui-check-"));
/** The folders epsilon's `rm -rf` is asked about: "Yes" removes the first, "No" keeps the second. */
const scratch = (answer) => path.join(home, "work", `scratch-${answer}`);

/** pi's own example gate of this line (it ships beside dist/): loaded in the root only. */
function permissionGate() {
  for (let dir = path.dirname(pi); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, "package.json")))
      return path.join(dir, "examples", "extensions", "permission-gate.ts");
  }
  throw new Error(`no package.json above ${pi}`);
}
const agentDir = path.join(home, "agent");
const treesDir = path.join(home, "trees");
const socket = path.join(home, "tmux.sock");
const sessionFile = path.join(home, "root-session.jsonl");
for (const dir of [agentDir, treesDir, path.join(home, "tmp"), path.join(home, "work"), scratch("yes"), scratch("no")])
  mkdirSync(dir);

const llm = await startLoopbackLlm(SCRIPT);
const [provider, modelId] = MODEL.split("/");
writeFileSync(
  path.join(agentDir, "models.json"),
  JSON.stringify({
    providers: {
      [provider]: {
        baseUrl: llm.url,
        api: "openai-completions",
        apiKey: "not-needed",
        compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
        // Prices per million tokens, so the display has a cost to show.
        models: [
          {
            id: modelId,
            reasoning: true,
            contextWindow: 128000,
            cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
          },
        ],
      },
    },
  }),
);
writeFileSync(
  path.join(agentDir, "settings.json"),
  // Not quiet: the start-up listing names the loaded extensions.
  JSON.stringify({
    defaultProvider: provider,
    defaultModel: modelId,
    quietStartup: false,
    enableInstallTelemetry: false,
    retry: { enabled: false },
  }),
);

const marker = `PI_CODING_AGENT_DIR=${agentDir}`;
const env = {
  // pi, and the wrapper's children, start with `#!/usr/bin/env node`: this line's node first.
  PATH: linePath(line, process.env.PATH),
  LANG: "C.UTF-8",
  TERM: "xterm-256color",
  HOME: path.join(home, "work"),
  TMPDIR: path.join(home, "tmp"),
  PI_CODING_AGENT_DIR: agentDir,
  PI_OFFLINE: "1",
  PI_SKIP_VERSION_CHECK: "1",
  PI_TELEMETRY: "0",
  PI_SUBAGENTS_DIR: treesDir,
};

const tmux = (...args) => spawnSync(tmuxBin, ["-S", socket, ...args], { env, encoding: "utf8" });
const capture = (target = "check") => tmux("capture-pane", "-p", "-t", target).stdout ?? "";
/** The whole pane history (the start-up listing scrolls away). */
const history = () => tmux("capture-pane", "-p", "-S", "-2000", "-t", "check").stdout ?? "";
const type = async (words) => {
  tmux("send-keys", "-t", "check", "-l", words);
  await sleep(400); // let the editor (and its command completion) take the text first
  tmux("send-keys", "-t", "check", "Enter");
};
const press = (key) => tmux("send-keys", "-t", "check", key);

/** Every agent record of the tree, in spawn order (the truth the display must show). */
function records() {
  const out = [];
  const walk = (dir) => {
    for (const entry of existsSync(dir) ? readdirSync(dir, { withFileTypes: true }) : []) {
      if (!entry.isDirectory() || ["runs", "reports", "inbox"].includes(entry.name)) continue;
      const file = path.join(dir, entry.name, "agent.json");
      if (existsSync(file)) {
        try {
          out.push(JSON.parse(readFileSync(file, "utf8")));
        } catch {
          // being replaced right now
        }
      }
      walk(path.join(dir, entry.name));
    }
  };
  for (const tree of existsSync(treesDir) ? readdirSync(treesDir) : []) walk(path.join(treesDir, tree, "agents"));
  return out.sort((a, b) => a.spawnSeq - b.spawnSeq);
}
const recordOf = (taskName) => records().find((r) => r.taskName === taskName);

/** The widget line of one agent (`├─ alpha (Euclid) · running · loop/fast · 3s · …`). */
const widgetLineOf = (pane, record) =>
  pane.split("\n").find((line) => /^\s*[├└]─ /.test(line) && line.includes(`${record.taskName} (${record.nickname})`));
const treeLinesIn = (pane, taskName) =>
  pane.split("\n").filter((line) => new RegExp(`^\\s*[├└]─ ${taskName} \\(`).test(line));

/** Processes of this check still alive (their environment holds our marker). Linux /proc only. */
const survivors = () => processesWithEnvSync(marker);

const failures = [];
const panes = {};
const deadline = Date.now() + timeoutMs;
/** Polls the pane until `check(pane)` holds; records the pane under `name`, or a failure. */
async function step(name, failure, check, pollMs = 300, target = "check") {
  let pane = "";
  while (Date.now() < deadline) {
    pane = capture(target);
    if (check(pane)) {
      panes[name] = pane;
      return true;
    }
    await sleep(pollMs);
  }
  // What the screen showed last, to see why (the test prints every pane).
  panes[name] = `(never matched; the last capture:)\n${pane}`;
  failures.push(failure);
  return false;
}

/**
 * 6. pi again on the session, in a tmux session of its own: delta is taken back, running;
 * then the tmux session is killed (the terminal closed: pi gets SIGHUP) — delta still runs;
 * `subagent-wrapper stop <tree>` ends it `interrupted`.
 */
async function reattachAndCloseTerminal() {
  const again = tmux(
    "new-session",
    "-d",
    "-s",
    "again",
    "-x",
    "160",
    "-y",
    "50",
    "-c",
    path.join(home, "work"),
    pi,
    "--session",
    sessionFile,
    "-e",
    root,
  );
  if (again.status !== 0) return void failures.push(`tmux new-session failed: ${again.stderr.trim()}`);
  await step(
    "re-attached",
    "the restarted pi never showed the child running",
    (pane) => {
      const delta = recordOf("delta");
      return delta !== undefined && widgetLineOf(pane, delta)?.includes("running") === true;
    },
    300,
    "again",
  );
  tmux("kill-session", "-t", "again");
  await sleep(2000);
  if (recordOf("delta")?.status !== "running")
    failures.push("the child did not keep running after its terminal closed");
  const tree = readdirSync(treesDir).map((name) => path.join(treesDir, name))[0];
  const stopped = spawnSync(process.execPath, [path.join(root, "bin", "subagent-wrapper"), "stop", tree], {
    env,
    encoding: "utf8",
  });
  if (stopped.status !== 0) failures.push(`subagent-wrapper stop failed (${stopped.status}): ${stopped.stderr.trim()}`);
}

let piPid;
try {
  const started = tmux(
    "new-session",
    "-d",
    "-s",
    "check",
    "-x",
    "160",
    "-y",
    "50",
    "-c",
    path.join(home, "work"),
    pi,
    "--session",
    sessionFile,
    "-e",
    root,
    "-e",
    permissionGate(),
    "Start the workers and wait for them.",
    ";",
    "set-option",
    "-t",
    "check",
    "remain-on-exit",
    "on",
  );
  if (started.status !== 0) throw new Error(`tmux new-session failed: ${started.stderr.trim()}`);
  piPid = Number(tmux("list-panes", "-t", "check", "-F", "#{pane_pid}").stdout.trim());

  // 1. While the children work: the tree is in the widget once, every running agent with its
  //    nickname, status, model and elapsed time; calls and results are one compact line each.
  const ok1 = await step(
    "while the children work",
    "never saw the running tree drawn once with compact tool lines",
    (pane) => {
      const running = records().filter((r) => r.status === "running" && r.parent === "/root");
      if (running.length < 2) return false;
      const lines = running.map((r) => widgetLineOf(pane, r));
      return (
        lines.every(
          (line, i) => line?.includes("running") && line.includes(running[i].model) && /· [1-9]\d*s ·/.test(line),
        ) &&
        /agents: \d+ running/.test(pane) &&
        pane.includes("subagents · ") &&
        /waiting \d+s for notices · \d+ running/.test(pane)
      );
    },
  );
  if (ok1) {
    const pane = panes["while the children work"];
    if (treeLinesIn(pane, "alpha").length !== 1)
      failures.push("alpha's tree line is drawn more than once (progress and widget)");
    if (!/^ spawn_agent alpha fork none "Work for a long while, then report\."\s*$/m.test(pane))
      failures.push("spawn_agent's call is not one compact line");
    if (!/^ \/root\/alpha \(\w+\) · running · default · loop\/fast · medium\s*$/m.test(pane))
      failures.push("spawn_agent's result is not one compact line");
    if (/"agent_name":/.test(pane)) failures.push("raw JSON shows in the chat");
    if (!/\[Extensions\][\s\S]*\n\s+(?:permission-gate\.ts, )?pi-subagent-tree\n/.test(history()))
      failures.push("pi's start-up listing does not name the extension pi-subagent-tree");
  }

  // 2. Type while a child runs: wait_agent gives way and the model answers at once.
  if (ok1) {
    await type(TYPED);
    await step(
      "after typing while the children work",
      "typing during wait_agent did not give way",
      (pane) =>
        pane.includes("gave way to your message") &&
        pane.includes("ANSWER WHILE CHILDREN WORK") &&
        recordOf("alpha")?.status === "running",
    );
  }

  // 3. /agents: the tree, then alpha's details, then interrupt it from the menu.
  if (panes["after typing while the children work"]) {
    await type("/agents");
    const listed = await step(
      "/agents",
      "/agents did not list the tree",
      (pane) =>
        pane.includes("pick one to see it and act on it") && pane.includes("stop every running and queued turn"),
    );
    if (listed) {
      press("Enter"); // alpha is first
      const shown = await step(
        "/agents: alpha",
        "/agents did not show alpha's details",
        (pane) =>
          /alpha \(\w+\) · \/root\/alpha/.test(pane) &&
          pane.includes("subagent-wrapper inspect") &&
          pane.includes("live transcript"),
      );
      if (shown) {
        press("Down"); // follow up → message
        await sleep(200);
        press("Down"); // message → interrupt
        await sleep(200);
        press("Enter");
        await step(
          "/agents: alpha interrupted",
          "interrupting alpha from /agents did not stop it",
          (pane) => recordOf("alpha")?.status === "interrupted" && /interrupted/.test(pane),
        );
      }
    }
  }

  // 4. beta and gamma end while the root is idle: the notices wake the model, and with every
  //    agent ended the widget folds away to the status line.
  if (panes["/agents: alpha interrupted"]) {
    await step(
      "woken, the widget folded",
      "the ended children did not wake the root, or the widget did not fold away",
      (pane) => {
        const all = records();
        return (
          pane.includes("woke the model") &&
          pane.includes("WOKEN: the children reported") &&
          all.length === 3 &&
          all.every((r) => r.status !== "running" && r.status !== "pending_init") &&
          /agents: 2 completed, 1 interrupted · .* tok · \$\d+\.\d{4}/.test(pane) &&
          !pane.includes("subagents · ")
        );
      },
    );
  }

  // 4b. A child's dialog reaches the person: the root's permission gate guards epsilon's
  //     `rm -rf`; its "Allow?" is headed with the child's path. "Yes" runs it, "No" blocks it.
  if (panes["woken, the widget folded"]) {
    await type(GATED);
    const asked = (answer) => (pane) =>
      pane.includes("/root/epsilon asks:") && pane.includes(`rm -rf ${scratch(answer)}`);
    // The status line counts the dialog at its next draw, which a loaded machine may show a
    // moment after the dialog itself: the pane is taken once both are there.
    const counted = (pane) => asked("yes")(pane) && /1 dialog waiting/.test(pane);
    if (
      await step(
        "a child's dialog",
        'the child\'s "Allow?" never reached the person, counted on the status line',
        counted,
      )
    ) {
      press("Enter"); // "Yes", the first option
      const second = await step(
        "a child's second dialog",
        'the child\'s second "Allow?" never came after "Yes"',
        (pane) => asked("no")(pane) && !existsSync(scratch("yes")),
      );
      if (second) {
        press("Down");
        await sleep(200);
        press("Enter"); // "No"
        await step(
          "after the child's dialogs",
          "the child did not end after its dialogs, or its end did not wake the root",
          (pane) =>
            recordOf("epsilon")?.status === "completed" &&
            history().split("WOKEN: the children reported").length > 2 &&
            !pane.includes("subagents · "),
        );
        if (!existsSync(scratch("no"))) failures.push('"No" did not block the child\'s rm -rf');
      }
    }
  }

  // 5. One more child, then ctrl+d: the last frame says it is left running (onExit detach);
  //    the terminal says how to look, stop or re-attach.
  if (panes["after the child's dialogs"]) {
    await type(ONE_MORE);
    const busy = await step("one more child", "the new child never showed running", (pane) => {
      const delta = recordOf("delta");
      return (
        delta?.status === "running" &&
        widgetLineOf(pane, delta)?.includes("running") === true &&
        pane.includes("DELTA STARTED")
      );
    });
    if (busy) {
      press("C-d");
      await step(
        "after ctrl+d",
        "pi did not say, on exit, what it left running and how to stop or re-attach",
        (pane) =>
          pane.includes("pi-subagent-tree: left 1 running agent (/root/delta)") &&
          pane.includes(`re-attach: pi --session ${sessionFile}`) &&
          pane.includes("stop:      subagent-wrapper stop"),
      );
      const last = panes["after ctrl+d"];
      if (last && !last.includes("agents: leaving 1 running"))
        failures.push("the last frame's status line does not say the child is left running");
      if (recordOf("delta")?.status !== "running") failures.push("the child did not keep running after ctrl+d");
      await reattachAndCloseTerminal();
    }
  }
} catch (err) {
  failures.push(err instanceof Error ? err.message : String(err));
} finally {
  // Quit pi as a user would (ctrl+d on an empty editor) if it still runs, then end what is left by pid.
  if (piPid && survivors().includes(piPid)) press("C-d");
  for (let i = 0; i < 50 && piPid && survivors().includes(piPid); i++) await sleep(200);
  if (piPid && survivors().includes(piPid)) {
    failures.push("pi did not exit on ctrl+d within 10 s");
    try {
      process.kill(piPid, "SIGTERM");
    } catch {
      // gone
    }
  }
  tmux("kill-server");
  await llm.close();
}
for (let i = 0; i < 50 && survivors().length > 0; i++) await sleep(200);
const left = survivors();
if (left.length > 0) {
  failures.push(`processes left behind: ${left.join(", ")}`);
  for (const pid of left) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
}
if (process.env.TUI_KEEP) console.log("KEPT", home);
else rmSync(home, { recursive: true, force: true });

for (const name of [
  "while the children work",
  "after typing while the children work",
  "/agents",
  "/agents: alpha",
  "/agents: alpha interrupted",
  "woken, the widget folded",
  "a child's dialog",
  "a child's second dialog",
  "after the child's dialogs",
  "one more child",
  "after ctrl+d",
  "re-attached",
]) {
  console.log(`--- ${name} ---`);
  console.log(panes[name]?.trimEnd() || "(not captured)");
}
if (failures.length > 0) {
  for (const failure of failures) console.error(`tui-check: FAIL ${failure}`);
  process.exit(1);
}
console.log(
  "tui-check: OK — the tree drawn once, compact tool lines, a wait that gives way, /agents, the idle wake, the folded widget, a child's dialog answered by the person, and an honest exit that leaves the child running, re-attach, and a closed terminal that takes no work with it",
);
