#!/usr/bin/env node
// This package against the two in-process peers, side by side in one run: `pi-subagents`
// 0.67.0 and `@tintinweb/pi-subagents` 0.14.1, installed by this bench on demand into a cache
// folder (npm install --prefix, never as this package's dependencies; their imports of pi
// resolve to the pi that loads them), each loaded with -e into the same real pi 1.x (the Node 22
// from node_modules), against one scripted loopback LLM. Two scenarios: one child answering at
// once, and four children in parallel whose answers each take FANOUT_ANSWER_MS. Per package:
// wall time of the root pi, CPU of every process it started (user + sys, counted as the
// processes are reaped), peak memory of the whole tree (the sum of each process's PSS, sampled
// every 20 ms, so pi's shared code counts once; and the sum of RSS), and how many model
// requests the root made. Ours delegates with `spawn_agent` and `wait: true` on the batch's last
// spawn; the peers with their blocking (foreground) tool calls. A peer that cannot be installed
// (no network) is a row that says so.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { sampledTree } from "./process-tree.mjs";
import { benchLines, benchPiHome, fmt, median, REPO_ROOT, rounds, row, startBenchLlm } from "./support.mjs";

const FANOUT = 4;
const FANOUT_ANSWER_MS = 1000;

/** The peers as the issue measured them; PI_SUBAGENTS_BENCH_PEERS_DIR moves their cache. */
const PEERS = [
  { id: "pi-subagents", pkg: "pi-subagents", version: "0.67.0" },
  { id: "tintinweb", pkg: "@tintinweb/pi-subagents", version: "0.14.1" },
];
const PEERS_DIR =
  process.env.PI_SUBAGENTS_BENCH_PEERS_DIR ?? path.join(os.homedir(), ".cache", "pi-subagent-tree-bench", "peers");

const installedVersion = (pkg) => {
  try {
    return JSON.parse(fs.readFileSync(path.join(PEERS_DIR, "node_modules", pkg, "package.json"), "utf8")).version;
  } catch {
    return undefined;
  }
};

/**
 * Each peer's folder to load with -e, or why it is missing. Installed once into the cache; no
 * install scripts; peer dependencies (pi itself) left out: pi maps those imports to its own.
 */
function ensurePeers() {
  const missing = PEERS.filter((peer) => installedVersion(peer.pkg) !== peer.version);
  let failure;
  if (missing.length > 0) {
    try {
      fs.mkdirSync(PEERS_DIR, { recursive: true });
      const specs = missing.map((peer) => `${peer.pkg}@${peer.version}`);
      execFileSync(
        "npm",
        [
          "install",
          "--prefix",
          PEERS_DIR,
          "--no-audit",
          "--no-fund",
          "--ignore-scripts",
          "--legacy-peer-deps",
          ...specs,
        ],
        { stdio: ["ignore", "ignore", "pipe"], timeout: 300_000 },
      );
    } catch (err) {
      failure = String(err.stderr ?? err.message)
        .split("\n")
        .find((line) => /ERR!|error/i.test(line))
        ?.trim();
      failure ??= String(err.message).split("\n")[0];
    }
  }
  return PEERS.map((peer) =>
    installedVersion(peer.pkg) === peer.version
      ? { ...peer, extension: path.join(PEERS_DIR, "node_modules", peer.pkg) }
      : { ...peer, missing: failure ?? "not installed" },
  );
}

const userText = (body) =>
  (body.messages ?? [])
    .filter((m) => m.role === "user")
    .map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)))
    .join("\n");
const toolResults = (body) => (body.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content));

/** The root's delegation, as each package's tools take it: `count` children, each given `child task <i>`. */
const DELEGATIONS = {
  ours: (count) =>
    Array.from({ length: count }, (_, i) => [
      "spawn_agent",
      {
        task_name: `task_${i}`,
        fork_turns: "none",
        message: `child task ${i}`,
        ...(i === count - 1 && { wait: true }),
      },
    ]),
  "pi-subagents": (count) =>
    Array.from({ length: count }, (_, i) => [
      "subagent",
      { agent: "delegate", task: `child task ${i}`, async: false, context: "fresh" },
    ]),
  tintinweb: (count) =>
    Array.from({ length: count }, (_, i) => [
      "Agent",
      { prompt: `child task ${i}`, description: `task ${i}`, subagent_type: "general-purpose" },
    ]),
};

/** The scripted LLM for one scenario: children answer after `answerMs`; the root delegates, then ends once it holds every answer. */
function scenarioLlm(state) {
  return (body) => {
    if (/child task \d/.test(userText(body))) return { text: "child done", delayMs: state.answerMs };
    state.rootRequests++;
    const results = toolResults(body);
    if (results.length === 0) return { calls: DELEGATIONS[state.pkg](state.count) };
    // Ours: a wait that came back before every child had ended is waited once more.
    const answered = results.join("\n").match(/child done/g)?.length ?? 0;
    if (state.pkg === "ours" && answered < state.count && state.rootRequests < 10)
      return { calls: [["wait_agent", { timeout_ms: 60000 }]] };
    return { text: "root done" };
  };
}

export async function run() {
  const peers = ensurePeers();
  const state = { pkg: "ours", count: 1, answerMs: 0, rootRequests: 0 };
  const llm = await startBenchLlm(scenarioLlm(state));
  // The peers need pi 1.x: the current line only.
  const [line] = benchLines().filter((l) => l.name === "current");
  if (!line) return [];
  const home = benchPiHome(llm.url, line);
  const packages = [{ id: "ours", extension: REPO_ROOT }, ...peers.filter((peer) => !peer.missing)];
  const scenarios = [
    { name: "one child", count: 1, answerMs: 0 },
    {
      name: `${FANOUT} children in parallel (each answer ${FANOUT_ANSWER_MS / 1000} s)`,
      count: FANOUT,
      answerMs: FANOUT_ANSWER_MS,
    },
  ];
  const samples = new Map();
  const failures = new Map();
  try {
    for (const scenario of scenarios) {
      for (let round = 0; round < rounds(3) + 1; round++) {
        // Interleaved: every package in each round, so a burst of load hits all of them alike.
        for (const pkg of packages) {
          const key = `${scenario.name}|${pkg.id}`;
          if (failures.has(key)) continue;
          Object.assign(state, { pkg: pkg.id, count: scenario.count, answerMs: scenario.answerMs, rootRequests: 0 });
          const args = ["--mode", "json", "-np", "--no-session", "-e", pkg.extension, "delegate"];
          const measured = await sampledTree(line.piCli, args, { cwd: home.home, env: home.env });
          if (measured.code !== 0) {
            failures.set(key, `pi exited ${measured.code}: ${measured.stderr.trim().split("\n").slice(-1)[0] ?? ""}`);
            continue;
          }
          // The first round warms the caches (pi's compile cache, jiti's) for every package alike.
          if (round === 0) continue;
          if (!samples.has(key)) samples.set(key, []);
          samples.get(key).push({ ...measured, rootRequests: state.rootRequests });
        }
      }
    }
  } finally {
    await llm.close();
    home.cleanup();
  }
  return scenarios.map((scenario) => {
    const of = (id, field) => median((samples.get(`${scenario.name}|${id}`) ?? []).map((s) => s[field]));
    const measuredIds = packages.map((p) => p.id).filter((id) => samples.has(`${scenario.name}|${id}`));
    const peerIds = measuredIds.filter((id) => id !== "ours");
    const fasterPeer = peerIds.sort((a, b) => of(a, "wallMs") - of(b, "wallMs"))[0];
    const describe = (id) =>
      `${fmt.s(of(id, "wallMs"))} / CPU ${fmt.s(of(id, "cpuMs"))} / PSS ${fmt.mib(of(id, "pss"))} (RSS ${fmt.mib(of(id, "rss"))}) / ${of(id, "rootRequests")} root requests`;
    const points = [];
    if (measuredIds.includes("ours")) {
      const wall = of("ours", "wallMs");
      const peerWall = fasterPeer ? of(fasterPeer, "wallMs") : undefined;
      points.push({
        input: "pi-subagent-tree",
        value: describe("ours"),
        baseline: fasterPeer ? `${fasterPeer}: ${fmt.s(peerWall)}` : "no peer measured",
        ratio: peerWall ? fmt.x(wall / peerWall) : "—",
        ...(peerWall && { pass: wall <= 1.3 * peerWall }),
      });
    }
    for (const peer of peers) {
      const failure = failures.get(`${scenario.name}|${peer.id}`) ?? peer.missing;
      points.push({
        input: `${peer.pkg} ${peer.version}`,
        value: failure ? `not measured: ${failure}` : describe(peer.id),
        baseline: "—",
        ratio: "—",
      });
    }
    const ours = samples.get(`${scenario.name}|ours`)?.at(-1);
    const roles = ours
      ? Object.entries(ours.roles)
          .map(([role, m]) => `${role} ${fmt.mib(m.pss)}`)
          .join(", ")
      : "";
    return row({
      id: `peers-${scenario.count}`,
      what: `against the in-process peers: ${scenario.name}, wall / CPU / peak memory / root model requests (${line.label})`,
      target: "wall ≤ 1.3× the faster peer",
      points,
      note: `The same real pi (${line.label}) and scripted LLM for each package, interleaved round by round, medians of ${Math.max(0, ...measuredIds.map((id) => samples.get(`${scenario.name}|${id}`).length))} after one warm-up round each. The root delegates ${scenario.count === 1 ? "one task" : `${scenario.count} tasks in one model response (pi runs the tool calls in parallel)`}: ours with spawn_agent (wait: true on the last), pi-subagents with \`subagent\` (agent delegate, async: false, context fresh), tintinweb with \`Agent\` (general-purpose, in the foreground); each child answers ${scenario.answerMs ? `after ${scenario.answerMs} ms` : "at once"}. CPU: user + sys of the root pi and everything it started (GNU time); memory: the peak over time of the sum of every process's PSS (/proc/<pid>/smaps_rollup, every 20 ms; a shared page is divided among every process on the machine that maps it, so other pi processes running meanwhile lower it for every package alike), with the sum of RSS beside it; root requests: the root's model requests for the whole delegation. Ours runs each child as its own wrapper and pi process: per process PSS in the last round ${roles || "—"}. The gap that remains buys what in-process children cannot have: a child survives its parent (durable trees, restore), runs in a sandbox or on another machine (runners), is stopped and limited as a process, and cannot take the parent down with it. Peers installed on demand into ${PEERS_DIR.replace(os.homedir(), "~")}.`,
    });
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
