// The root killed again and again while its children run: each restart takes the
// tree back (re-attaching the turns still at work, finding the ends of the others), the
// children go on to their own end, and each child's notice is read exactly once. A "root"
// is a node process running the extension's real runtime from dist/ (TreeRuntime, restore,
// the launcher: real wrappers over the fake pi), reading its mailbox as wait_agent does
// (take, then the taken record on disk) and printing each notice it read.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { agentRecord, dist, TREE_LIMITS } from "./extension-support.mjs";
import { FAKE_PI, ROOT, scratch, settleLeftovers, sleep, TAG, TAG_ENV } from "./support.mjs";

/** Each child works this long before it answers. */
const CHILD_MS = 4000;

function rootScript(treeDir, cwd) {
  const js = (file) => JSON.stringify(path.join(ROOT, "dist", "extension", file));
  return `
    const { TreeDir } = await import(${js("tree/tree-dir.js")});
    const { TreeRuntime } = await import(${js("turns/runtime.js")});
    const { restore } = await import(${js("turns/restore.js")});
    const tree = new TreeDir(${JSON.stringify(treeDir)});
    const rt = new TreeRuntime({ self: "/root", isRoot: true, treeDir: tree.root }, tree, ${JSON.stringify(TREE_LIMITS)}, ${JSON.stringify(cwd)}, { hooks: { problem: () => undefined } });
    await restore(rt, []);
    console.log("READY");
    setInterval(async () => {
      const notices = rt.mailbox.take(10);
      if (notices.length === 0) return;
      await rt.mailbox.settled();
      for (const notice of notices) console.log("NOTICE " + notice.agent_name);
    }, 50);
  `;
}

function startRoot(treeDir, cwd, read) {
  const child = spawn(process.execPath, ["--input-type=module", "-e", rootScript(treeDir, cwd)], {
    stdio: ["ignore", "pipe", "ignore"],
    env: {
      ...process.env,
      [TAG_ENV]: TAG,
      PI_SUBAGENTS_PI_BIN: FAKE_PI,
      FAKE_PI_SCRIPT: JSON.stringify({ steps: [{ sleep: CHILD_MS }, { echoTask: true }] }),
      TMPDIR: scratch,
    },
  });
  let buffer = "";
  const ready = new Promise((resolve) => {
    child.stdout.setEncoding("utf8").on("data", (chunk) => {
      buffer += chunk;
      const lines = buffer.split("\n");
      buffer = lines.pop();
      for (const line of lines) {
        if (line === "READY") resolve();
        else if (line.startsWith("NOTICE ")) read.push(line.slice(7));
      }
    });
    child.once("exit", resolve);
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  return { child, ready, exited };
}

function resultStatus(tree, name) {
  const runs = path.join(tree.agentDir(`/root/${name}`), "runs");
  const run = fs.existsSync(runs) ? fs.readdirSync(runs).sort().at(-1) : undefined;
  if (!run) return undefined;
  try {
    return JSON.parse(fs.readFileSync(path.join(runs, run, "result.json"), "utf8")).status;
  } catch {
    return undefined;
  }
}

/**
 * `rounds` trials: 3 children start; the root is SIGKILLed `kills` times at moments spread
 * over their work, restarted each time; a last root runs until every notice is read.
 */
export async function rootKillTrials(rounds, kills = 4, children = 3) {
  const { TreeDir } = await dist("tree/tree-dir.js");
  const totals = { rounds, kills: 0, turns: 0, resultsLost: 0, duplicated: 0, lost: 0, takenUnprinted: 0, left: 0 };
  for (let round = 0; round < rounds; round++) {
    const dir = fs.mkdtempSync(path.join(scratch, "root-kills-"));
    const tree = new TreeDir(path.join(dir, "tree"));
    await tree.init("session");
    const names = Array.from({ length: children }, (_, i) => `child${i + 1}`);
    for (const [i, name] of names.entries()) await tree.writeRecord(agentRecord(name, i + 1));
    const read = [];
    for (let k = 0; k < kills; k++) {
      const root = startRoot(tree.root, dir, read);
      await root.ready;
      await sleep(Math.floor(Math.random() * (CHILD_MS / kills + 500)));
      root.child.kill("SIGKILL");
      await root.exited;
      totals.kills++;
    }
    const last = startRoot(tree.root, dir, read);
    await last.ready;
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && names.some((name) => !read.includes(`/root/${name}`))) await sleep(100);
    await sleep(500);
    last.child.kill("SIGKILL");
    await last.exited;
    const deliveries = JSON.parse(fs.readFileSync(path.join(tree.root, "deliveries.json"), "utf8")).given;
    for (const name of names) {
      totals.turns++;
      if (resultStatus(tree, name) !== "completed") totals.resultsLost++;
      const count = read.filter((agent) => agent === `/root/${name}`).length;
      totals.duplicated += Math.max(0, count - 1);
      const taken = deliveries.some((entry) => entry.key.startsWith(`/root/${name}#`) && entry.taken);
      // Killed between the taken record and its print: read by the root, though the trial never saw the line.
      if (count === 0 && taken) totals.takenUnprinted++;
      else if (count === 0) totals.lost++;
    }
    totals.left += (await settleLeftovers(10_000)).length;
  }
  return totals;
}
