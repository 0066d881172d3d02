/**
 * The live-message inbox on the child's side, with the file system and the clock injected:
 * the task extension's feeder (when it hands a message to pi, in what order, how often) and
 * the wrapper's ledger (what counts as delivered).
 */
import { describe, expect, it } from "vitest";
import { inboxFileName, isInboxMessageName, parseInboxMessage, WRAP_UP_FILE } from "../../../src/contracts/inbox.js";
import { type FeederOperations, InboxFeeder } from "../../../src/in-child/inbox-feeder.js";
import { afterTurn } from "../../../src/in-child/task-extension.js";
import { DeliveryLedger, type InboxFiles, userMessageText } from "../../../src/wrapper/inbox.js";

const DIR = "/run/inbox";

/** An in-memory folder: name → text (undefined: listed but not readable yet). */
class Folder {
  readonly files = new Map<string, string | undefined>();
  readonly moved: string[] = [];
  changed: (() => void) | undefined;
  ticks: Array<() => void> = [];
  watchClosed = false;
  timerCancelled = false;

  put(seq: number, id: string, text: string): void {
    this.files.set(inboxFileName(seq), JSON.stringify({ id, text }));
    this.changed?.();
  }

  readonly ops: FeederOperations = {
    list: () => [...this.files.keys()],
    read: (file) => this.files.get(file.slice(DIR.length + 1)),
    watch: (_dir, changed) => {
      this.changed = changed;
      return { close: () => (this.watchClosed = true) };
    },
    every: (_ms, fn) => {
      this.ticks.push(fn);
      return { cancel: () => (this.timerCancelled = true) };
    },
  };

  readonly ledgerFiles: InboxFiles = {
    prepare: () => undefined,
    list: () => [...this.files.keys()],
    read: (file) => this.files.get(file.slice(DIR.length + 1)),
    markDelivered: (_dir, name) => {
      this.files.delete(name);
      this.moved.push(name);
    },
  };

  tick(): void {
    for (const fn of this.ticks) fn();
  }
}

function feeder(folder: Folder, steer: (text: string) => void = () => undefined) {
  const handed: string[] = [];
  const f = new InboxFeeder(
    DIR,
    (text) => {
      steer(text);
      handed.push(text);
    },
    folder.ops,
    250,
  );
  return { f, handed };
}

describe("the message file format", () => {
  it("names sort in send order; temp files and delivered/ are not messages; a message needs an id and a text", () => {
    expect([inboxFileName(10), inboxFileName(9), inboxFileName(100)].sort()).toEqual([
      "00000009.json",
      "00000010.json",
      "00000100.json",
    ]);
    expect(["00000001.json", ".00000002.json.123.tmp", "delivered", "notes.txt"].filter(isInboxMessageName)).toEqual([
      "00000001.json",
    ]);
    expect(parseInboxMessage('{"id":"msg-1","text":""}')).toEqual({ id: "msg-1", text: "" });
    expect(parseInboxMessage('{"id":"","text":"x"}')).toBeUndefined();
    expect(parseInboxMessage('{"id":"a","text":3}')).toBeUndefined();
    expect(parseInboxMessage("{half")).toBeUndefined();
  });
});

describe("the task extension's feeder", () => {
  it("hands nothing before pi works, then every message in name order, each once", () => {
    const folder = new Folder();
    const { f, handed } = feeder(folder);
    f.start();
    folder.put(2, "b", "second");
    folder.put(1, "a", "first");
    expect(handed).toEqual([]);
    f.resume();
    expect(handed).toEqual(["first", "second"]);
    folder.put(3, "c", "third");
    f.feed();
    folder.tick();
    f.resume();
    expect(handed).toEqual(["first", "second", "third"]);
  });

  it("picks a new file up from the watch, and from the poll when the watch says nothing", () => {
    const folder = new Folder();
    const { f, handed } = feeder(folder);
    f.start();
    f.resume();
    folder.put(1, "a", "seen by the watch");
    expect(handed).toEqual(["seen by the watch"]);
    folder.files.set(inboxFileName(2), JSON.stringify({ id: "b", text: "seen by the poll" }));
    expect(handed).toHaveLength(1);
    folder.tick();
    expect(handed).toEqual(["seen by the watch", "seen by the poll"]);
  });

  it("never lets a later message overtake one it cannot read yet, and passes over a file that is not a message", () => {
    const folder = new Folder();
    const { f, handed } = feeder(folder);
    f.start();
    f.resume();
    folder.files.set(inboxFileName(1), undefined);
    folder.files.set(inboxFileName(2), "not json");
    folder.put(3, "c", "third");
    expect(handed).toEqual([]);
    folder.files.set(inboxFileName(1), JSON.stringify({ id: "a", text: "first" }));
    folder.tick();
    expect(handed).toEqual(["first", "third"]);
  });

  it("hands what is there when a turn ends without a tool call, then nothing until pi works again", () => {
    const folder = new Folder();
    const { f, handed } = feeder(folder);
    f.start();
    f.resume();
    // There before the turn's end, not seen yet (no watch event, no poll since).
    folder.files.set(inboxFileName(1), JSON.stringify({ id: "a", text: "in time" }));
    f.lastChance();
    expect(handed).toEqual(["in time"]);
    folder.put(2, "b", "too late for this run");
    folder.tick();
    expect(handed).toEqual(["in time"]);
    expect(f.accepts).toBe(false);
    // pi went on (it took "in time"): a new turn starts, and the second goes too.
    f.resume();
    expect(handed).toEqual(["in time", "too late for this run"]);
  });

  it("hands the wrap-up only between a reply that called a tool and its turn's end, never into an answer", () => {
    const folder = new Folder();
    const { f, handed } = feeder(folder);
    const wrapUp = () => {
      folder.files.set(WRAP_UP_FILE, JSON.stringify({ id: "limit-wrap-up", text: "wrap up" }));
      folder.changed?.();
    };
    f.start();
    f.resume();
    // Written while the model still answers: pi would take it after that reply, whatever it is.
    wrapUp();
    folder.put(1, "a", "from the parent");
    folder.tick();
    expect(handed).toEqual(["from the parent"]);
    // The reply was the answer: the turn ends without a tool call, the wrap-up stays where it is.
    f.lastChance();
    expect(handed).toEqual(["from the parent"]);
    expect(f.accepts).toBe(false);

    // Another run: a reply that calls a tool takes it, before its turn ends.
    f.resume();
    expect(handed).toEqual(["from the parent"]);
    f.toolsCalled();
    expect(handed).toEqual(["from the parent", "wrap up"]);

    // Written once a tool turn ended (pi has read its queue for the next request): it waits for the next tool call.
    const later = new Folder();
    const second = feeder(later);
    second.f.start();
    second.f.resume();
    second.f.toolsCalled();
    second.f.toolTurnEnds();
    later.files.set(WRAP_UP_FILE, JSON.stringify({ id: "limit-wrap-up", text: "wrap up" }));
    later.changed?.();
    later.tick();
    second.f.resume();
    expect(second.handed).toEqual([]);
    second.f.toolsCalled();
    expect(second.handed).toEqual(["wrap up"]);
  });

  it("keeps a message pi refused (a stale context) for later and stops handing; after stop nothing runs", () => {
    const folder = new Folder();
    let refuse = true;
    const { f, handed } = feeder(folder, () => {
      if (refuse) throw new Error("This extension ctx is stale");
    });
    f.start();
    folder.put(1, "a", "refused once");
    f.resume();
    expect(handed).toEqual([]);
    expect(f.accepts).toBe(false);
    refuse = false;
    f.resume();
    expect(handed).toEqual(["refused once"]);

    f.stop();
    expect(folder.watchClosed).toBe(true);
    expect(folder.timerCancelled).toBe(true);
    folder.put(2, "b", "after shutdown");
    folder.tick();
    f.resume();
    f.feed();
    expect(handed).toEqual(["refused once"]);
  });

  it("tells a turn pi goes on after (tool calls), may go on after (a steering message), or ends with", () => {
    expect(afterTurn({ message: { role: "assistant", stopReason: "toolUse", content: [{ type: "toolCall" }] } })).toBe(
      "tools",
    );
    expect(afterTurn({ message: { role: "assistant", stopReason: "stop", content: [{ type: "text" }] } })).toBe(
      "maybe",
    );
    expect(afterTurn({ message: { role: "assistant", stopReason: "length", content: [] } })).toBe("maybe");
    expect(afterTurn({ message: { role: "assistant", stopReason: "error", content: [] } })).toBe("ends");
    expect(afterTurn({ message: { role: "assistant", stopReason: "aborted", content: [{ type: "toolCall" }] } })).toBe(
      "ends",
    );
  });
});

describe("the wrapper's delivery ledger", () => {
  const user = (text: string) => ({
    type: "message_end",
    message: { role: "user", content: [{ type: "text", text }] },
  });

  it("confirms a message only when pi shows a user message with exactly its text, after the task, and moves it to delivered/", () => {
    const folder = new Folder();
    const ledger = new DeliveryLedger(DIR, folder.ledgerFiles);
    folder.put(1, "msg-1", "the note");
    // The run's first user message is its task, even with the same text.
    expect(ledger.observe(user("the note"))).toEqual([]);
    expect(ledger.observe(user("the note "))).toEqual([]);
    expect(
      ledger.observe({
        type: "message_start",
        message: { role: "user", content: [{ type: "text", text: "the note" }] },
      }),
    ).toEqual([]);
    expect(ledger.observe({ type: "queue_update", steering: ["the note"], followUp: [] })).toEqual([]);
    expect(folder.moved).toEqual([]);
    expect(ledger.observe(user("the note"))).toEqual([{ type: "message_delivered", id: "msg-1", text: "the note" }]);
    expect(folder.moved).toEqual(["00000001.json"]);
    // Delivered once: the same text again is not that message again.
    expect(ledger.observe(user("the note"))).toEqual([]);
  });

  it("matches messages with the same text oldest first", () => {
    const folder = new Folder();
    const ledger = new DeliveryLedger(DIR, folder.ledgerFiles);
    ledger.observe(user("task"));
    folder.put(2, "later", "same");
    folder.put(1, "earlier", "same");
    expect(ledger.observe(user("same"))).toEqual([{ type: "message_delivered", id: "earlier", text: "same" }]);
    expect(ledger.observe(user("same"))).toEqual([{ type: "message_delivered", id: "later", text: "same" }]);
  });

  it("reads a user message's text from pi's shapes and says why a folder cannot be used", () => {
    expect(userMessageText({ type: "message_end", message: { role: "user", content: "plain" } })).toBe("plain");
    expect(
      userMessageText({
        type: "message_end",
        message: {
          role: "user",
          content: [{ type: "text", text: "a" }, { type: "image" }, { type: "text", text: "b" }],
        },
      }),
    ).toBe("a\nb");
    expect(userMessageText({ type: "message_end", message: { role: "assistant", content: "x" } })).toBeUndefined();
    const broken: InboxFiles = {
      prepare: () => {
        throw new Error("it is not a folder");
      },
      list: () => [],
      read: () => undefined,
      markDelivered: () => undefined,
    };
    expect(new DeliveryLedger("/x/inbox", broken).prepare()).toBe("inbox /x/inbox cannot be used: it is not a folder");
  });
});
