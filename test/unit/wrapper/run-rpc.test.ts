/**
 * A wrapper run with meta.json `dialogs` on fake time, against a fake pi child: the child runs
 * in RPC mode, gets the task's prompt on its stdin, and its stdin ends exactly when pi's work is
 * over (agent_settled on pi 1.x; an idle get_state probe after agent_end on pi 0.73.1).
 */
import { describe, expect, it } from "vitest";
import type { MetaV1 } from "../../../src/contracts/meta.js";
import { TASK_PLACEHOLDER } from "../../../src/contracts/task-handoff.js";
import type { PiIdentity } from "../../../src/wrapper/pi-version.js";
import { type FakeRun, fakeRunHarness, until } from "../../support/fake-run.js";
import { agentEnd, agentSettled, assistantEnd, turnEnd } from "../../support/pi-events.js";

const fake = fakeRunHarness("psa-wrapper-rpc-", { runId: "run-1", task: "t" });

const SETTLING: PiIdentity = { version: "1.6.0", source: "package", emitsSettled: true };
const OLDER: PiIdentity = { version: "0.73.1", source: "package", emitsSettled: false };
const DIALOGS: Partial<MetaV1> = { dialogs: { timeoutMs: 60_000 }, graceMs: 5000 };

/** What the run wrote to the child's stdin so far, a JSON value a line, and whether it ended it. */
function stdinOf(run: FakeRun): { lines: () => Array<Record<string, unknown>>; ended: () => boolean } {
  let text = "";
  let ended = false;
  run.child.stdin.on("data", (chunk: Buffer) => {
    text += chunk.toString("utf8");
  });
  run.child.stdin.on("end", () => {
    ended = true;
  });
  return {
    lines: () =>
      text
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    ended: () => ended,
  };
}

describe("wrapper run with dialogs, on fake time", () => {
  it("pi 1.x: RPC mode, the prompt on stdin, stdin ended at agent_settled, the run completed without a forced exit", async () => {
    const run = await fake.start(DIALOGS, { pi: SETTLING });
    const stdin = stdinOf(run);
    expect(run.ops.spawned[0]!.args.slice(0, 2)).toEqual(["--mode", "rpc"]);
    await until(() => stdin.lines().length === 1, "the prompt sent");
    expect(stdin.lines()).toEqual([{ type: "prompt", message: TASK_PLACEHOLDER }]);
    await run.print(assistantEnd({ text: "done", stopReason: "stop" }), turnEnd(), agentEnd(false));
    expect(stdin.ended()).toBe(false);
    await run.print(agentSettled());
    await until(() => stdin.ended(), "stdin ended");
    run.child.exit(0);
    const { result } = await run.done;
    expect(result).toMatchObject({ status: "completed", finalText: "done", forcedExit: false, childExitCode: 0 });
  });

  it("pi 0.73.1: agent_end sends a get_state probe; its idle answer ends stdin", async () => {
    const run = await fake.start(DIALOGS, { pi: OLDER });
    const stdin = stdinOf(run);
    await run.print(assistantEnd({ text: "done", stopReason: "stop" }), turnEnd(), agentEnd(false));
    await until(() => stdin.lines().length === 2, "the probe sent");
    const probe = stdin.lines()[1]!;
    expect(probe).toMatchObject({ type: "get_state" });
    expect(stdin.ended()).toBe(false);
    await run.print({
      type: "response",
      command: "get_state",
      id: probe.id,
      success: true,
      data: { isStreaming: false },
    });
    await until(() => stdin.ended(), "stdin ended");
    run.child.exit(0);
    expect((await run.done).result).toMatchObject({ status: "completed", finalText: "done", forcedExit: false });
  });

  it("without dialogs nothing changes: json mode, nothing written to stdin", async () => {
    const run = await fake.start({ graceMs: 5000 }, { pi: SETTLING });
    const stdin = stdinOf(run);
    expect(run.ops.spawned[0]!.args.slice(0, 2)).toEqual(["--mode", "json"]);
    await run.print(assistantEnd({ text: "done", stopReason: "stop" }), agentEnd(false), agentSettled());
    run.child.exit(0);
    await run.done;
    expect(stdin.lines()).toEqual([]);
  });
});
