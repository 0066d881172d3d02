// Exactly once, without windows: the root SIGKILLed by its own fault hook
// (PI_SUBAGENTS_TEST_KILL_AT) at each step that used to be a window — a turn's start
// (run_recorded: the record names the run, its wrapper not started; wrapper_spawned: the
// wrapper runs, the start not yet moved on) and a notice's hand-over to pi (taking: pi's
// session holds it, not yet recorded taken; taken). The next root takes the tree back; the
// turn must have run once (one pi start) and its notice reached the root's session once.
// The roots are root-kills.trial.mjs's: the extension's real runtime from dist/, real
// wrappers over the fake pi, a session file written as pi writes a tool result.
import fs from "node:fs";
import path from "node:path";
import { agentRecord, dist } from "./extension-support.mjs";
import { readInSession, resultStatus, startRoot } from "./root-kills.trial.mjs";
import { scratch, settleLeftovers, sleep } from "./support.mjs";

export const START_KILL_STEPS = ["run_recorded", "wrapper_spawned", "taking", "taken"];
/** A root that does not end within this long (its fault hook never fired, or the turn never ended) is hung. */
const ROOT_WAIT_MS = 60_000;

async function exitWithin(root, ms) {
  const ended = await Promise.race([root.exited.then(() => true), sleep(ms).then(() => false)]);
  if (!ended) {
    root.child.kill("SIGKILL");
    await root.exited;
  }
  return ended;
}

/** `trials` trials per step; returns per-step counts. */
export async function startKillTrials(trials) {
  const { TreeDir } = await dist("tree/tree-dir.js");
  const rows = [];
  for (const step of START_KILL_STEPS) {
    const row = { step, trials, ranTwice: 0, resultsLost: 0, duplicated: 0, lost: 0, hung: 0, left: 0 };
    for (let trial = 0; trial < trials; trial++) {
      const dir = fs.mkdtempSync(path.join(scratch, "start-kills-"));
      const tree = new TreeDir(path.join(dir, "tree"));
      await tree.init("session");
      await tree.writeRecord(agentRecord("worker", 1));
      const sessionFile = path.join(dir, "root-session.jsonl");
      const piStarts = path.join(dir, "pi-starts.jsonl");
      const env = {
        FAKE_PI_SCRIPT: JSON.stringify({ steps: [{ sleep: 300 }, { echoTask: true }] }),
        FAKE_PI_RECORDS: piStarts,
      };
      const killed = startRoot(tree.root, dir, sessionFile, { ...env, PI_SUBAGENTS_TEST_KILL_AT: step });
      if (!(await exitWithin(killed, ROOT_WAIT_MS))) row.hung++;
      const next = startRoot(tree.root, dir, sessionFile, env);
      await next.ready;
      const deadline = Date.now() + ROOT_WAIT_MS;
      while (Date.now() < deadline && !readInSession(sessionFile).includes("/root/worker")) await sleep(50);
      // A notice given again would be in the mailbox at restore: read within the root's next look.
      await sleep(300);
      next.child.kill("SIGKILL");
      await next.exited;
      const starts = fs.existsSync(piStarts) ? fs.readFileSync(piStarts, "utf8").split("\n").filter(Boolean) : [];
      if (starts.length > 1) row.ranTwice++;
      if (resultStatus(tree, "worker") !== "completed") row.resultsLost++;
      const read = readInSession(sessionFile).filter((agent) => agent === "/root/worker").length;
      row.duplicated += Math.max(0, read - 1);
      if (read === 0) row.lost++;
      row.left += (await settleLeftovers(10_000)).length;
    }
    rows.push(row);
  }
  return rows;
}
