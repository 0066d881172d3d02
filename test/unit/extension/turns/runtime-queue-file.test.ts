/**
 * The queue file list_agents reads in other processes: only its latest content matters, so
 * the runtime keeps at most one write in flight and one waiting (the newest queue), and
 * writesSettled resolves only once the last of them is on disk.
 */
import { afterEach, describe, expect, it } from "vitest";
import { TreeDir } from "../../../../src/extension/tree/tree-dir.js";
import { turnResult } from "../../../support/fake-turns.js";
import { cleanupRuntimes, runtimeHarness } from "../../../support/runtime-harness.js";

afterEach(cleanupRuntimes);

/** A tree whose queue writes wait for the test to let them through. */
class HeldQueueTree extends TreeDir {
  readonly queueWrites: string[][] = [];
  private release: (() => void) | undefined;
  private held: Promise<void> | undefined;

  hold(): void {
    this.held = new Promise((resolve) => (this.release = resolve));
  }

  letThrough(): void {
    this.release?.();
    this.held = undefined;
  }

  override async writeQueue(parentPath: string, queued: readonly string[]): Promise<void> {
    this.queueWrites.push([...queued]);
    await this.held;
    return super.writeQueue(parentPath, queued);
  }
}

const drain = () => new Promise((resolve) => setImmediate(resolve));

describe("the published queue", () => {
  it("ten turns queued behind a held write cost one more write, which carries the newest queue", async () => {
    let tree!: HeldQueueTree;
    const h = await runtimeHarness({ maxActiveChildTurns: 1 }, (root) => (tree = new HeldQueueTree(root)));
    const states = [];
    for (let i = 0; i < 11; i++) states.push(await h.child(`w${i}`));
    tree.hold();
    await h.runtime.requestTurn(states[0]!, "spawn");
    for (const state of states.slice(1)) await h.runtime.requestTurn(state, "spawn");
    await drain();
    // The first write is held; the ten queue changes behind it wait as one.
    expect(tree.queueWrites.length).toBeLessThanOrEqual(1);
    tree.letThrough();
    await h.runtime.writesSettled();
    expect(tree.queueWrites.length).toBeLessThanOrEqual(2);
    const newest = states.slice(1).map((s) => s.record.path);
    expect(tree.queueWrites.at(-1)).toEqual(newest);
    expect(await h.tree.readQueue("/root")).toEqual(newest);
  });

  it("writesSettled waits for a held queue write, and the file then holds the queue as it is", async () => {
    let tree!: HeldQueueTree;
    const h = await runtimeHarness({ maxActiveChildTurns: 1 }, (root) => (tree = new HeldQueueTree(root)));
    const [a, b] = [await h.child("a"), await h.child("b")];
    await h.runtime.requestTurn(a, "spawn");
    await h.runtime.requestTurn(b, "spawn");
    await h.runtime.writesSettled();
    expect(await h.tree.readQueue("/root")).toEqual(["/root/b"]);

    tree.hold();
    h.turns.last.finish(turnResult({ finalText: "done" }));
    await a.settled;
    let settled = false;
    const waiting = h.runtime.writesSettled().then(() => (settled = true));
    await drain();
    expect(settled).toBe(false);
    tree.letThrough();
    await waiting;
    expect(await h.tree.readQueue("/root")).toEqual([]);
  });
});
