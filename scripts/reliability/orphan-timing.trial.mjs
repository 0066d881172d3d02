// How long pi and its grandchild outlive a SIGKILLed wrapper (its orphan guard ends them).
import fs from "node:fs";
import path from "node:path";
import { killLeftovers, LOAD_TASK_EXTENSION, makeCase, settleLeftovers, sleep, startWrapper } from "./support.mjs";

export async function orphanTrials(trials) {
  const outlived = [];
  let left = 0;
  for (let i = 0; i < trials; i++) {
    const dir = makeCase();
    const wrapper = startWrapper(
      dir,
      { steps: [{ spawnGrandchild: { sleepMs: 60_000 } }, { sleep: 60_000 }, { echoTask: true }] },
      LOAD_TASK_EXTENSION,
    );
    const deadline = Date.now() + 15_000;
    while (!fs.existsSync(path.join(dir, "record.json")) && Date.now() < deadline) await sleep(20);
    await sleep(100 + Math.random() * 300);
    process.kill(wrapper.pid, "SIGKILL");
    await wrapper.done;
    const killed = Date.now();
    const rest = await settleLeftovers(10_000);
    outlived.push(Date.now() - killed);
    left += rest.length;
    killLeftovers();
  }
  return { outlived, left };
}
