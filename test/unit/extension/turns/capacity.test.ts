import { describe, expect, it } from "vitest";
import { TurnSlots } from "../../../../src/extension/turns/capacity.js";
import type { HeldSlot, RunnerGate, SlotPool } from "../../../../src/extension/turns/runner-slots.js";

describe("TurnSlots: at most N turns of one parent's children at once", () => {
  it("starts up to the limit at once and queues the rest in order, with positions", () => {
    const slots = new TurnSlots(3);
    const started: string[] = [];
    const results = ["a", "b", "c", "d", "e"].map((key) => slots.request(key, () => started.push(key)));
    expect(results).toEqual([true, true, true, false, false]);
    expect(started).toEqual(["a", "b", "c"]);
    expect(slots.position("d")).toBe(1);
    expect(slots.position("e")).toBe(2);
    expect(slots.position("a")).toBeUndefined();
    slots.release("b");
    expect(started).toEqual(["a", "b", "c", "d"]);
    expect(slots.position("e")).toBe(1);
  });

  it("a dequeued turn never starts, and later ones move up", () => {
    const slots = new TurnSlots(1);
    const started: string[] = [];
    for (const key of ["a", "b", "c"]) slots.request(key, () => started.push(key));
    expect(slots.dequeue("b")).toBe(true);
    expect(slots.dequeue("b")).toBe(false);
    expect(slots.position("c")).toBe(1);
    slots.release("a");
    expect(started).toEqual(["a", "c"]);
  });

  it("releasing frees the slot at once; releasing twice or an unknown key changes nothing", () => {
    const slots = new TurnSlots(2);
    const started: string[] = [];
    for (const key of ["a", "b", "c", "d"]) slots.request(key, () => started.push(key));
    slots.release("a");
    slots.release("a");
    slots.release("zzz");
    expect(started).toEqual(["a", "b", "c"]);
    expect(slots.activeCount).toBe(2);
    expect(slots.queuedCount).toBe(1);
  });

  it("reports the queue, in order, after every change to it (and only then)", () => {
    const changes: string[][] = [];
    const slots = new TurnSlots(1, (queued) => changes.push(queued));
    for (const key of ["a", "b", "c"]) slots.request(key, () => undefined);
    expect(changes).toEqual([["b"], ["b", "c"]]);
    slots.dequeue("b");
    slots.release("a");
    slots.release("c");
    expect(changes).toEqual([["b"], ["b", "c"], ["c"], []]);
  });
});

describe("TurnSlots: a runner's own pool", () => {
  it("runner turns count against the runner's capacity, not the local limit, and a full runner holds up no local turn", () => {
    const slots = new TurnSlots(1);
    const started: string[] = [];
    const box = { name: "box", limit: 2 };
    expect(slots.request("local-a", () => started.push("local-a"))).toBe(true);
    expect(slots.request("box-a", () => started.push("box-a"), box)).toBe(true);
    expect(slots.request("box-b", () => started.push("box-b"), box)).toBe(true);
    expect(slots.request("box-c", () => started.push("box-c"), box)).toBe(false);
    expect(slots.request("local-b", () => started.push("local-b"))).toBe(false);
    expect(started).toEqual(["local-a", "box-a", "box-b"]);
    expect(slots.queuedKeys()).toEqual(["box-c", "local-b"]);
    // A local slot frees: the local turn starts although a runner turn queued before it.
    slots.release("local-a");
    expect(started).toEqual(["local-a", "box-a", "box-b", "local-b"]);
    expect(slots.position("box-c")).toBe(1);
    slots.release("box-a");
    expect(started.at(-1)).toBe("box-c");
    expect(slots.queuedCount).toBe(0);
  });
});

/** A runner gate whose tree-wide slots the test sets: `free` per runner, and every take, handover and release seen. */
class FakeGate implements RunnerGate {
  readonly free = new Map<string, number>();
  readonly events: string[] = [];
  readonly watchers = new Map<string, () => void>();
  take(pool: SlotPool): HeldSlot | undefined {
    const free = this.free.get(pool.name) ?? 0;
    if (free <= 0) return undefined;
    this.free.set(pool.name, free - 1);
    const n = this.events.filter((e) => e.startsWith("take")).length + 1;
    this.events.push(`take ${pool.name} #${n}`);
    return {
      handOver: (pid) => this.events.push(`hand #${n} to ${pid}`),
      release: () => {
        this.events.push(`release #${n}`);
        this.free.set(pool.name, (this.free.get(pool.name) ?? 0) + 1);
      },
    };
  }
  inUse(pool: SlotPool): number {
    return pool.limit - (this.free.get(pool.name) ?? 0);
  }
  watch(pool: SlotPool, changed: () => void): () => void {
    this.watchers.set(pool.name, changed);
    return () => this.watchers.delete(pool.name);
  }
  /** Another process of the tree frees one of the runner's slots. */
  freeElsewhere(name: string): void {
    this.free.set(name, (this.free.get(name) ?? 0) + 1);
    this.watchers.get(name)?.();
  }
}

describe("TurnSlots: a runner's capacity across the tree (the gate)", () => {
  const box = { name: "box", limit: 3 };

  it("a runner full across the tree queues the turn although this process has room; a slot freed elsewhere starts it", () => {
    const gate = new FakeGate();
    gate.free.set("box", 1);
    const slots = new TurnSlots(3, () => undefined, gate);
    const started: string[] = [];
    expect(slots.request("a", () => started.push("a"), box)).toBe(true);
    expect(slots.request("b", () => started.push("b"), box)).toBe(false);
    expect(slots.request("c", () => started.push("c"), box)).toBe(false);
    expect(slots.runnerWait("b")).toEqual({ runner: "box", inUse: 3, capacity: 3 });
    expect(slots.runnerWait("a")).toBeUndefined();
    expect([...gate.watchers.keys()]).toEqual(["box"]);
    gate.freeElsewhere("box");
    expect(started).toEqual(["a", "b"]);
    expect(slots.position("c")).toBe(1);
    gate.freeElsewhere("box");
    expect(started).toEqual(["a", "b", "c"]);
    // Nothing waits for the runner any more: it is not watched.
    expect(gate.watchers.size).toBe(0);
  });

  it("a turn's slot is handed to its wrapper and released with the turn, which starts the next", () => {
    const gate = new FakeGate();
    gate.free.set("box", 1);
    const slots = new TurnSlots(3, () => undefined, gate);
    const started: string[] = [];
    slots.request("a", () => started.push("a"), box);
    slots.request("b", () => started.push("b"), box);
    slots.handOver("a", 4242);
    slots.release("a");
    expect(gate.events).toEqual(["take box #1", "hand #1 to 4242", "release #1", "take box #2"]);
    expect(started).toEqual(["a", "b"]);
  });

  it("a full runner holds up no local turn, and a re-attached runner turn takes no tree slot (its wrapper holds one)", () => {
    const gate = new FakeGate();
    const slots = new TurnSlots(1, () => undefined, gate);
    const started: string[] = [];
    slots.occupy("re", box);
    expect(slots.request("box-a", () => started.push("box-a"), box)).toBe(false);
    expect(slots.request("local", () => started.push("local"))).toBe(true);
    expect(gate.events).toEqual([]);
    slots.release("re");
    expect(gate.events).toEqual([]);
    expect(started).toEqual(["local"]);
  });

  it("a new runner turn does not jump ahead of one already waiting for that runner", () => {
    const gate = new FakeGate();
    const slots = new TurnSlots(3, () => undefined, gate);
    const started: string[] = [];
    expect(slots.request("a", () => started.push("a"), box)).toBe(false);
    // A slot frees elsewhere; before the watch says so, another turn asks for the runner.
    gate.free.set("box", 1);
    expect(slots.request("b", () => started.push("b"), box)).toBe(false);
    expect(started).toEqual(["a"]);
    expect(slots.queuedKeys()).toEqual(["b"]);
  });

  it("a dequeued waiting turn is no longer watched for; after close nothing is watched or retried", () => {
    const gate = new FakeGate();
    const slots = new TurnSlots(3, () => undefined, gate);
    const started: string[] = [];
    slots.request("a", () => started.push("a"), box);
    slots.dequeue("a");
    expect(gate.watchers.size).toBe(0);
    slots.request("b", () => started.push("b"), box);
    slots.close();
    expect(gate.watchers.size).toBe(0);
    slots.request("c", () => started.push("c"), box);
    expect(gate.watchers.size).toBe(0);
    expect(started).toEqual([]);
  });
});
