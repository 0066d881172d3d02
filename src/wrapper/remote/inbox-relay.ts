/**
 * The run's live messages on their way to a far side: the message files the parent writes
 * into the run's inbox folder go over as `message` frames, each once, in name (send) order.
 */
import type { ClientFrame } from "../../contracts/serve-protocol.js";
import { type Clock, systemClock, type TimerHandle } from "../../lib/clock.js";
import { unsentInboxMessages } from "./local-side.js";

/** How often the inbox folder is looked at for new messages. */
const INBOX_POLL_MS = 100;

export class InboxRelay {
  private readonly sent = new Set<string>();
  private timer: TimerHandle | undefined;

  constructor(
    private readonly dir: string,
    private readonly send: (frame: Extract<ClientFrame, { t: "message" }>) => void,
    private readonly clock: Clock = systemClock,
  ) {}

  /** Sends what is there now, then looks again every INBOX_POLL_MS until stop(). */
  start(): void {
    const scan = () => {
      for (const { name, id, text } of unsentInboxMessages(this.dir, this.sent))
        this.send({ t: "message", name, id, text });
    };
    scan();
    this.timer = this.clock.setInterval(scan, INBOX_POLL_MS);
  }

  stop(): void {
    if (this.timer !== undefined) this.clock.clearInterval(this.timer);
  }
}
