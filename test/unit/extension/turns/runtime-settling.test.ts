/**
 * A turn that has ended but is still being recorded (report saved, record written) must keep
 * counting as active: otherwise a wait_agent running in that window answers `idle: true` and
 * the notice lands a moment later. Seen under load in end-to-end runs.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { AgentRecordV1 } from "../../../../src/contracts/tree.js";
import { TreeDir } from "../../../../src/extension/tree/tree-dir.js";
import { turnResult } from "../../../support/fake-turns.js";
import { cleanupRuntimes, runtimeHarness } from "../../../support/runtime-harness.js";

afterEach(cleanupRuntimes);

/** A tree directory whose record writes can be held; `entered` resolves when a held write begins. */
class HeldTree extends TreeDir {
  private gate: Promise<void> | undefined;
  private open: (() => void) | undefined;
  private arrived: (() => void) | undefined;
  entered: Promise<void> | undefined;

  hold(): void {
    this.gate = new Promise<void>((resolve) => (this.open = resolve));
    this.entered = new Promise<void>((resolve) => (this.arrived = resolve));
  }

  release(): void {
    this.gate = undefined;
    this.open?.();
  }

  override async writeRecord(record: AgentRecordV1): Promise<void> {
    if (this.gate) {
      this.arrived?.();
      await this.gate;
    }
    return super.writeRecord(record);
  }
}

describe("a finished turn being recorded", () => {
  it("still counts as active until its notice is in the mailbox", async () => {
    let tree!: HeldTree;
    const h = await runtimeHarness({}, (root) => (tree = new HeldTree(root)));
    const state = await h.child("worker", "go");
    await h.runtime.requestTurn(state, "spawn");
    expect(h.runtime.hasActiveTurns()).toBe(true);

    tree.hold();
    h.turns.last.finish(turnResult({ finalText: "done" }));
    await tree.entered;
    // Ended, not yet recorded: no notice yet, and not idle either.
    expect(h.runtime.mailbox.pending).toBe(0);
    expect(h.runtime.hasActiveTurns()).toBe(true);

    tree.release();
    await state.settled;
    expect(h.runtime.mailbox.pending).toBe(1);
    expect(h.runtime.hasActiveTurns()).toBe(false);
    expect(h.runtime.mailbox.take(5)[0]).toMatchObject({
      agent_name: "/root/worker",
      type: "completed",
      report: "done",
    });
  });
});
