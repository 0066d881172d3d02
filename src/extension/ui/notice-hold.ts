/**
 * When a notice counts as read: once pi holds it durably — the wait_agent tool result or the
 * wake message that carries it is in the session file. Before that, a process killed would
 * lose it (recorded taken, never seen by the model); so the delivery record says `taken` only
 * then (turns/delivery/deliveries.ts), and a restore finds in the session what pi held before the
 * process could say so.
 *
 * pi writes a message to the session right after its extensions' `message_end` handlers
 * return, and it handles its events one after the other: so any event after a message's
 * `message_end` means that message is in the session. The keys seen at `message_end` are
 * recorded at the next event (or at session_shutdown).
 */
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import type { Notice } from "../../contracts/notice.js";
import { DELIVERY_KEYS_FIELD } from "../turns/delivery/delivery-keys.js";
import type { TreeRuntime } from "../turns/runtime.js";

/** The events after which a message pi ended before is in its session. */
const LATER_EVENTS = ["message_start", "turn_end", "agent_end", "tool_execution_start", "session_shutdown"] as const;

export class NoticeHold {
  /** Notices a message pi ended carried (the wake asks whether its message reached pi). */
  private readonly reached = new WeakSet<Notice>();
  /** Keys of notices in messages pi ended, not yet recorded as taken, with the runtime that gave them. */
  private awaiting: Array<{ runtime: TreeRuntime; keys: string[] }> = [];

  constructor(private readonly runtime: () => TreeRuntime | undefined) {}

  /** pi's message_end: this message goes to the session as soon as the handlers return. */
  messageEnded(message: unknown): void {
    const details = (message as { details?: Record<string, unknown> } | null)?.details;
    if (typeof details !== "object" || details === null) return;
    const notices = details.notices;
    if (Array.isArray(notices)) for (const notice of notices) if (typeof notice === "object") this.reached.add(notice);
    const keys = details[DELIVERY_KEYS_FIELD];
    const runtime = this.runtime();
    if (!runtime || !Array.isArray(keys)) return;
    const strings = keys.filter((key): key is string => typeof key === "string");
    if (strings.length > 0) this.awaiting.push({ runtime, keys: strings });
  }

  /** Records of taken notices under way (pi's handlers do not wait for them; shutdown does). */
  private recording: Promise<void> = Promise.resolve();

  /**
   * A later event: the messages ended before are in the session; their notices are taken.
   * Resolves once every record started so far is written (the previous ones included), so the
   * last handler before the process ends can wait for all of them.
   */
  persisted(): Promise<void> {
    const due = this.awaiting;
    this.awaiting = [];
    this.recording = this.recording.then(async () => {
      for (const { runtime, keys } of due) await runtime.noticesHeld(keys);
    });
    return this.recording;
  }

  /** Whether a message carrying this notice reached pi (its message_end was seen). */
  reachedPi(notice: Notice): boolean {
    return this.reached.has(notice);
  }
}

/** Watches pi's events for the messages that carry notices; one per extension instance. */
export function watchNoticeHold(pi: ExtensionAPI, runtime: () => TreeRuntime | undefined): NoticeHold {
  const hold = new NoticeHold(runtime);
  // Recording is not awaited in pi's event handlers (but at shutdown): pi 0.73.1 hands events to
  // extensions one after another and, in print and json mode, exits once its run is over even
  // when events are still queued. A handler that waits for an fsync'd write holds every later
  // event back, and a quick model answers the rest of the run meanwhile: the child exited with
  // its last events (and its answer) never printed. A write still under way when the process is
  // killed loses nothing: a restore takes as read what the session holds.
  pi.on("message_end", (event) => {
    void hold.persisted();
    hold.messageEnded(event.message);
  });
  for (const name of LATER_EVENTS) {
    if (name === "session_shutdown") pi.on(name, () => hold.persisted());
    else pi.on(name as "agent_end", () => void hold.persisted());
  }
  return hold;
}
