/**
 * A run's spend, recorded in the person's spending ledger as it happens: each model request
 * of the child that cost something is one line (contracts/budget-ledger.ts), written when pi's
 * stream shows the request's end, so the period budgets see a running turn's spend at once,
 * and a crash loses nothing already said. Only when meta.json `env` names the ledger's folder
 * (the extension always does): a script's run records nothing unless it asks to.
 */
import { appendLedger } from "../contracts/budget-ledger.js";
import { ENV } from "../contracts/env.js";
import type { MetaV1 } from "../contracts/meta.js";
import { errorText } from "../lib/values.js";
import { assistantFromEvent, type PiEvent } from "./normalize.js";

export class SpendLedger {
  private failed = false;

  private constructor(
    private readonly dir: string,
    private readonly meta: MetaV1,
    private readonly now: () => number,
    private readonly warn: (line: string) => void,
  ) {}

  /** The run's recorder, or undefined when meta.json names no ledger. */
  static open(meta: MetaV1, now: () => number, warn: (line: string) => void): SpendLedger | undefined {
    const dir = meta.env?.[ENV.ledgerDir]?.trim();
    return dir ? new SpendLedger(dir, meta, now, warn) : undefined;
  }

  observe(event: PiEvent): void {
    const assistant = assistantFromEvent(event);
    const usd = assistant?.usage.cost.total ?? 0;
    if (!(usd > 0) || !Number.isFinite(usd)) return;
    try {
      appendLedger(this.dir, {
        at: this.now(),
        usd,
        run: this.meta.runId,
        ...(this.meta.agentPath && { agent: this.meta.agentPath }),
      });
    } catch (err) {
      // Said once: the run goes on, but the person's period budgets no longer see its spend.
      if (!this.failed)
        this.warn(
          `the spending ledger ${this.dir} cannot be written (${errorText(err)}): this run's cost is not counted in the period budgets`,
        );
      this.failed = true;
    }
  }
}
