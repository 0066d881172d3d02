#!/usr/bin/env node
// The README's first command: the real pi (devDependency) with this package's extension,
// driven by a bundled scripted LLM on 127.0.0.1 (no API key). The root spawns a scout and
// a lead, the lead spawns a nested checker, everyone waits for their children, and this
// prints the tree with each agent's status and report. It runs the current pi (1.x) on the
// Node 22 from node_modules; PI_SUBAGENTS_TEST_PI_LINE=0.73 runs pi 0.73.1 on this machine's
// Node instead (scripts/pi-lines.mjs).
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startDemoLlm } from "../examples/tree-demo/scripted-llm.mjs";
import { ensureLineBin, lineName, linePath, resolveLine } from "./pi-lines.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
// Where the tree directory and the root's session go (kept for you to inspect).
const out = process.env.DEMO_OUTPUT_DIR
  ? path.resolve(process.env.DEMO_OUTPUT_DIR)
  : path.join(root, "example-output", "tree-demo");
let line;
try {
  line = resolveLine(root, lineName());
  ensureLineBin(line);
} catch (err) {
  console.error(`demo: ${err.message}`);
  process.exit(2);
}
if (!existsSync(path.join(root, "dist", "extension", "index.js"))) {
  console.error('demo: run "npm install" first (it installs pi and builds dist/)');
  process.exit(2);
}

const llm = await startDemoLlm();
const home = mkdtempSync(path.join(os.tmpdir(), "pi-subagent-tree-demo-"));
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const agentDir = path.join(home, "agent");
mkdirSync(agentDir);
mkdirSync(path.join(home, "tmp"));
writeFileSync(
  path.join(agentDir, "models.json"),
  JSON.stringify({
    providers: {
      demo: {
        baseUrl: llm.url,
        api: "openai-completions",
        apiKey: "not-needed",
        compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
        models: [{ id: "fast", reasoning: true, contextWindow: 128000 }],
      },
    },
  }),
);
writeFileSync(
  path.join(agentDir, "settings.json"),
  JSON.stringify({ defaultProvider: "demo", defaultModel: "fast", quietStartup: true, retry: { enabled: false } }),
);

const env = {
  ...process.env,
  // pi, and the wrapper's children, start with `#!/usr/bin/env node`: this line's node first.
  PATH: linePath(line, process.env.PATH),
  HOME: home,
  TMPDIR: path.join(home, "tmp"),
  PI_CODING_AGENT_DIR: agentDir,
  PI_OFFLINE: "1",
  PI_SUBAGENTS_DIR: path.join(out, "trees"),
};
for (const key of Object.keys(env)) if (key.endsWith("_API_KEY")) delete env[key];

console.log(
  '$ pi --mode json -e . "Survey this repository with a small team of agents."   (scripted loopback LLM, no API key)\n',
);
const started = Date.now();
const code = await new Promise((resolve) => {
  const child = spawn(
    line.node,
    [
      line.piCli,
      "--mode",
      "json",
      "-np",
      "--session",
      path.join(out, "root-session.jsonl"),
      "-e",
      root,
      "Survey this repository with a small team of agents.",
    ],
    {
      cwd: root,
      env,
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  let buffer = "";
  child.stdout.on("data", (chunk) => {
    buffer += chunk;
    for (let newline = buffer.indexOf("\n"); newline !== -1; newline = buffer.indexOf("\n")) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      if (!line.startsWith('{"type":"tool_execution_start"')) continue;
      const event = JSON.parse(line);
      console.log(`  root → ${event.toolName} ${JSON.stringify(event.args).slice(0, 100)}`);
    }
  });
  const timer = setTimeout(() => child.kill("SIGTERM"), 120_000);
  child.on("exit", (exitCode) => {
    clearTimeout(timer);
    resolve(exitCode);
  });
});
await llm.close();
// A spare pi ended with the root may still be writing Node's compile cache here for a moment
// on a loaded machine: the removal retries (linear back-off, ~11 s at most).
let removal = "";
try {
  rmSync(home, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
} catch (err) {
  removal = `its temp home ${home} could not be removed (${err.code ?? err.message})`;
}

const treeDir = path.join(out, "trees", readdirSync(path.join(out, "trees"))[0] ?? "");
const records = [];
const walk = (dir) => {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory() || ["runs", "reports", "inbox"].includes(entry.name)) continue;
    const file = path.join(dir, entry.name, "agent.json");
    if (existsSync(file)) records.push({ ...JSON.parse(readFileSync(file, "utf8")), dir: path.join(dir, entry.name) });
    walk(path.join(dir, entry.name));
  }
};
walk(path.join(treeDir, "agents"));
records.sort((a, b) => a.spawnSeq - b.spawnSeq);

const latestReport = (dir) => {
  const files = existsSync(path.join(dir, "reports")) ? readdirSync(path.join(dir, "reports")).sort() : [];
  return files.length ? JSON.parse(readFileSync(path.join(dir, "reports", files.at(-1)), "utf8")).text : "";
};
console.log(`\nagent tree (${((Date.now() - started) / 1000).toFixed(1)} s, pi exit ${code}):\n/root`);
// Siblings get ├─ but the last, which gets └─; a parent's line continues with │ past its children.
const childrenOf = (parent) => records.filter((record) => record.parent === parent);
const draw = (parent, pad) => {
  const children = childrenOf(parent);
  children.forEach((record, index) => {
    const last = index === children.length - 1;
    const below = `${pad}${last ? "   " : "│  "}`;
    console.log(
      `${pad}${last ? "└─" : "├─"} ${record.path}  ${record.nickname}  ${record.role}  ${record.status} (${record.health})  ${record.model} · ${record.reasoning}`,
    );
    console.log(
      `${below}${childrenOf(record.path).length > 0 ? "│  " : "   "}report: ${latestReport(record.dir).replace(/\s+/g, " ").slice(0, 160)}`,
    );
    draw(record.path, below);
  });
};
draw("/root", "");
const shownTree = path.relative(process.cwd(), treeDir) || ".";
console.log(`\nrun directories, events and reports: ${shownTree}`);
console.log(`the whole tree again, with every run: npx subagent-wrapper inspect ${shownTree}`);
const ok = code === 0 && records.length === 3 && records.every((r) => r.status === "completed");
// One line that says why, first on stderr's last line (what a test's failure shows).
if (!ok || removal) {
  const statuses = records.map((r) => `${r.path} ${r.status}`).join(", ") || "none";
  console.error(`demo: failed: ${[!ok && `pi exit ${code}, agents: ${statuses}`, removal].filter(Boolean).join("; ")}`);
}
process.exit(ok && !removal ? 0 : 1);
