// SIGKILL and SIGTERM to the wrapper at moments spread over a busy run: result.json must be
// whole or absent (never partial), and after a SIGTERM present once a child was started; no
// reserve, result temp file or run folder in the temp folder is left.
import fs from "node:fs";
import path from "node:path";
import {
  BUSY,
  CONCURRENCY,
  DEBUG,
  filesEndingWith,
  killLeftovers,
  LOAD_TASK_EXTENSION,
  log,
  makeCase,
  median,
  pool,
  readResult,
  runFoldersLeft,
  settleLeftovers,
  sleep,
  startWrapper,
  tempFiles,
} from "./support.mjs";

/** How long an undisturbed BUSY run takes here, CONCURRENCY at a time (kills are spread over it). */
export async function calibrate() {
  const times = [];
  for (let i = 0; i < 2; i++) {
    const runs = await Promise.all(
      Array.from({ length: CONCURRENCY }, () => startWrapper(makeCase(), BUSY, LOAD_TASK_EXTENSION).done),
    );
    times.push(...runs.map((run) => run.ms));
  }
  return median(times);
}

export async function killTrials(signal, trials, spanMs) {
  const tally = { complete: 0, absent: 0, partial: 0, temps: 0, reserves: 0, hung: 0, statuses: {} };
  const dirs = [];
  const pids = [];
  await pool(
    Array.from({ length: trials }, (_, i) => Math.round((i / trials) * spanMs * 1.3)),
    async (delay) => {
      const dir = makeCase();
      dirs.push(dir);
      const wrapper = startWrapper(dir, BUSY, LOAD_TASK_EXTENSION);
      pids.push(wrapper.pid);
      await sleep(delay);
      try {
        process.kill(wrapper.pid, signal);
      } catch {
        // already finished
      }
      const exit = await wrapper.done;
      if (exit.hung) tally.hung++;
      const { state, result } = readResult(dir);
      if (DEBUG) log(`${signal} at ${delay} ms: ${state} ${JSON.stringify(exit)} ${fs.readdirSync(dir)}`);
      tally[state]++;
      if (result) tally.statuses[result.status] = (tally.statuses[result.status] ?? 0) + 1;
      // SIGTERM is handled: once a child was started, the wrapper must leave a result.
      if (signal === "SIGTERM" && state === "absent") {
        if (fs.existsSync(path.join(dir, "record.json"))) tally.absentAfterChild = (tally.absentAfterChild ?? 0) + 1;
        else tally.absentBeforeChild = (tally.absentBeforeChild ?? 0) + 1;
      }
    },
  );
  tally.left = (await settleLeftovers()).length;
  // A SIGKILLed wrapper cannot remove its result.json reserve, nor the temp file of a result
  // write it was killed in; its orphan guard does, so both are counted once the guards are done.
  tally.reserves = dirs.reduce((n, dir) => n + filesEndingWith(dir, ".reserve"), 0);
  tally.temps = dirs.reduce((n, dir) => n + tempFiles(dir), 0);
  // Nor its run's folder in the temp folder (the task's text): the guard removes that too.
  tally.runFolders = runFoldersLeft(pids);
  killLeftovers();
  return tally;
}
