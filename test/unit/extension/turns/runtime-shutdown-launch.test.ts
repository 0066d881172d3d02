/**
 * session_shutdown while a turn's wrapper is still starting (its launch took the slot but
 * has not returned): shutdown waits for the launch, then stops that turn like any running
 * one, so no wrapper starts after its parent has gone and then runs unwatched.
 */
import { afterEach, describe, expect, it } from "vitest";
import { cleanupRuntimes, runtimeHarness } from "../../../support/runtime-harness.js";

afterEach(cleanupRuntimes);

const drain = () => new Promise((resolve) => setImmediate(resolve));

describe("shutdown during a turn's start", () => {
  it("waits for the start, then stops the turn it started", async () => {
    const h = await runtimeHarness();
    const worker = await h.child("worker");
    let release!: () => void;
    h.turns.holdNextStart = new Promise((resolve) => (release = resolve));
    const requested = h.runtime.requestTurn(worker, "spawn");
    await drain();
    expect(h.turns.started).toHaveLength(0);

    let shutDown = false;
    const shutdown = h.runtime.shutdown().then(() => (shutDown = true));
    await drain();
    expect(shutDown).toBe(false);
    release();
    await shutdown;
    await requested;
    expect(h.turns.started).toHaveLength(1);
    expect(h.turns.last.stops).toBe(1);
    expect(h.runtime.hasActiveTurns()).toBe(false);
    expect(h.runtime.slots.activeCount).toBe(0);
  });
});
