import { describe, expect, it } from "vitest";
import type { Notice } from "../../../../src/contracts/notice.js";
import type { TreeRuntime } from "../../../../src/extension/turns/runtime.js";
import { NoticeHold } from "../../../../src/extension/ui/notice-hold.js";

/** A runtime that only records what it was told pi holds. */
function recordingRuntime() {
  const held: string[][] = [];
  const runtime = {
    noticesHeld: async (keys: readonly string[]) => void held.push([...keys]),
  } as unknown as TreeRuntime;
  return { runtime, held };
}

const notice = (name: string) => ({ agent_name: name }) as Notice;

describe("NoticeHold", () => {
  it("records a message's notices taken at pi's next event, not at its message_end (pi writes the session in between)", async () => {
    const { runtime, held } = recordingRuntime();
    const hold = new NoticeHold(() => runtime);
    const a = notice("/root/a");
    hold.messageEnded({ role: "toolResult", details: { notices: [a], delivery_keys: ["/root/a#0001-spawn"] } });
    expect(held).toEqual([]);
    expect(hold.reachedPi(a)).toBe(true);
    await hold.persisted();
    expect(held).toEqual([["/root/a#0001-spawn"]]);
    // Once only.
    await hold.persisted();
    expect(held).toHaveLength(1);
  });

  it("ignores messages that carry no notices, and notices of no key (messages) are only marked as reached", async () => {
    const { runtime, held } = recordingRuntime();
    const hold = new NoticeHold(() => runtime);
    const message = notice("/root/b");
    hold.messageEnded({ role: "assistant", content: [] });
    hold.messageEnded({ role: "custom", details: { notices: [message], delivery_keys: [] } });
    hold.messageEnded(null);
    await hold.persisted();
    expect(held).toEqual([]);
    expect(hold.reachedPi(message)).toBe(true);
    expect(hold.reachedPi(notice("/root/c"))).toBe(false);
  });
});
