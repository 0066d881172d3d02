// LOAD_WRAPPERS wrappers at once, several rounds: each must answer its own task.
import fs from "node:fs";
import path from "node:path";
import { killLeftovers, LOAD_WRAPPERS, makeCase, readResult, settleLeftovers, startWrapper } from "./support.mjs";

export async function loadRounds(rounds) {
  const figures = [];
  for (let round = 0; round < rounds; round++) {
    const dirs = Array.from({ length: LOAD_WRAPPERS }, (_, i) =>
      makeCase({ runId: `load-${i}`, task: `task number ${i}` }),
    );
    const started = Date.now();
    const exits = await Promise.all(
      dirs.map(
        (dir) =>
          startWrapper(dir, { steps: [{ tool: { id: "t1", name: "read" } }, { sleep: 200 }, { echoTask: true }] }).done,
      ),
    );
    const ms = Date.now() - started;
    let correct = 0;
    dirs.forEach((dir, i) => {
      const { result } = readResult(dir);
      const events = fs
        .readFileSync(path.join(dir, "out", "events.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      if (
        exits[i].code === 0 &&
        result?.status === "completed" &&
        result.runId === `load-${i}` &&
        result.finalText === `task number ${i}` &&
        events[0].runId === `load-${i}`
      )
        correct++;
    });
    figures.push({ ms, correct, left: (await settleLeftovers()).length });
    killLeftovers();
  }
  return figures;
}
