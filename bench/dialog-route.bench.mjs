#!/usr/bin/env node
// A child's dialog → the root's dialog shown: pi's own examples/extensions/permission-gate.ts
// loaded in the root only (`pi --mode rpc -e <this package> -e permission-gate.ts`), a child
// that runs `rm -rf`, and the time from the loopback LLM handing the child that bash call to
// the root's RPC stdout showing the gate's "Allow?" headed "/root/<child> asks:". Baseline: the
// same gate's dialog for the root's own `rm -rf`, in the same session (the path without the
// tree). The real pi on each installed line; one root session a round, medians.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { benchLines, benchPiHome, fmt, median, now, REPO_ROOT, rounds, row, startBenchLlm } from "./support.mjs";

const CHILD_TASK = "BENCH-CHILD: remove the scratch folder";

/** The folder holding this line's pi package (its examples ship beside dist/). */
function permissionGate(line) {
  for (let dir = path.dirname(line.piCli); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, "package.json")))
      return path.join(dir, "examples", "extensions", "permission-gate.ts");
  }
  throw new Error(`no package.json above ${line.piCli}`);
}

const text = (message) =>
  typeof message.content === "string" ? message.content : (message.content ?? []).map((p) => p.text ?? "").join("");

/** One root session: the child's dialog and then the root's own, each answered "No". */
async function oneRound(line, env, cwd, state) {
  const scratch = path.join(cwd, `scratch-${state.round}`);
  mkdirSync(scratch, { recursive: true });
  state.command = `rm -rf ${scratch}`;
  const root = spawn("pi", ["--mode", "rpc", "-np", "-e", REPO_ROOT, "-e", permissionGate(line)], {
    cwd,
    env,
    stdio: ["pipe", "pipe", "pipe"],
    detached: true,
  });
  let stderr = "";
  root.stderr.setEncoding("utf8").on("data", (chunk) => {
    stderr = (stderr + chunk).slice(-2000);
  });
  const exited = new Promise((resolve) => root.once("exit", resolve));
  const send = (command) => root.stdin.write(`${JSON.stringify(command)}\n`);
  const shown = {};
  const done = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${line.label}: no end in 90 s; stderr: ${stderr}`)), 90_000);
    readline.createInterface({ input: root.stdout }).on("line", (raw) => {
      let event;
      try {
        event = JSON.parse(raw);
      } catch {
        return;
      }
      if (event.type === "extension_ui_request" && event.method === "select") {
        const title = String(event.title ?? "");
        if (title.startsWith("/root/gate asks:")) shown.child ??= now();
        else if (title.includes(state.command)) shown.root ??= now();
        send({ type: "extension_ui_response", id: event.id, value: "No" });
      }
      if (event.type === "agent_end" && state.rootDone) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  try {
    send({ type: "prompt", message: "clean up" });
    await done;
  } finally {
    root.stdin.end();
    const killer = setTimeout(() => process.kill(-root.pid, "SIGKILL"), 10_000);
    await exited;
    clearTimeout(killer);
  }
  if (!shown.child || !shown.root || !state.childAskedAt || !state.rootAskedAt)
    throw new Error(`${line.label}: a dialog was not shown; stderr: ${stderr}`);
  return { child: shown.child - state.childAskedAt, root: shown.root - state.rootAskedAt };
}

async function measure(line) {
  const state = { round: 0, command: "", childAskedAt: 0, rootAskedAt: 0, rootDone: false };
  const llm = await startBenchLlm((body) => {
    const messages = body.messages ?? [];
    const users = messages.filter((m) => m.role === "user").map(text);
    const last = messages.at(-1);
    const lastText = last ? text(last) : "";
    if (users.some((u) => u.includes(CHILD_TASK))) {
      if (last?.role === "tool") return { text: "could not remove it" };
      state.childAskedAt = now();
      return { calls: [["bash", { command: state.command }]] };
    }
    if (last?.role === "user")
      return { calls: [["spawn_agent", { task_name: "gate", fork_turns: "none", message: CHILD_TASK }]] };
    // The root: wait for the child, then its own rm -rf, then the answer.
    if (lastText.includes("Blocked by user") && state.rootAskedAt) {
      state.rootDone = true;
      return { text: "ROOT DONE" };
    }
    if (/"completed"|completed/.test(lastText) && !state.rootAskedAt) {
      state.rootAskedAt = now();
      return { calls: [["bash", { command: state.command }]] };
    }
    return { calls: [["wait_agent", { timeout_ms: 60_000 }]] };
  });
  const { home, env, cleanup } = benchPiHome(llm.url, line);
  const runEnv = { ...env, PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0" };
  const cwd = path.join(home, "work");
  mkdirSync(cwd);
  const samples = { child: [], root: [] };
  try {
    for (let round = 0; round < rounds(5); round++) {
      Object.assign(state, { round, childAskedAt: 0, rootAskedAt: 0, rootDone: false });
      const m = await oneRound(line, runEnv, cwd, state);
      samples.child.push(m.child);
      samples.root.push(m.root);
    }
  } finally {
    await llm.close();
    cleanup();
  }
  return { child: median(samples.child), root: median(samples.root) };
}

export async function run() {
  const points = [];
  for (const line of benchLines()) {
    const { child, root } = await measure(line);
    points.push({
      input: line.label,
      value: fmt.ms(child),
      baseline: fmt.ms(root),
      ratio: `${child - root >= 0 ? "+" : ""}${(child - root).toFixed(0)} ms`,
      pass: child <= 100,
      raw: child,
    });
  }
  return [
    row({
      id: "dialog-route",
      what: "a child's dialog → the root's dialog shown (baseline: the same gate's dialog for the root's own command)",
      target: "median ≤ 100 ms",
      points,
      note: `The real pi on each installed line, as a root in RPC mode with this package and pi's own examples/extensions/permission-gate.ts (\`-e\`, the root only), against a loopback LLM in the bench process: the root spawns a child whose first request gets \`rm -rf <dir>\`; the child loads the root's gate, whose "Allow?" travels as an \`extension_ui_request\` to the child's wrapper, into the run's dialogs folder, and to the root, which shows it headed \`/root/gate asks:\`. Measured: from the LLM handing the child the bash call to that dialog on the root's stdout (so pi's own parsing and the gate's hook in the child are inside the figure); baseline: the same, for the root's own \`rm -rf\` later in the session. Both answered "No". Medians of ${rounds(5)} root sessions.`,
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
