import { describe, expect, it } from "vitest";
import { TurnSlots } from "../../../../src/extension/turns/capacity.js";

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

describe("TurnSlots: a runner's own pool (SPEC 5.5)", () => {
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
