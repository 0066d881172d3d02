/**
 * The steps a spawn has taken, each with what undoes it. A spawn that fails part-way undoes
 * them newest first, so a rejected spawn leaves nothing behind and each undo finds the state
 * its step left (a worktree goes before the nickname and path that named it).
 */
export class Rollback {
  private readonly undos: Array<() => Promise<unknown>> = [];

  /** Registers how to undo the step just taken. */
  push(undo: () => Promise<unknown>): void {
    this.undos.push(undo);
  }

  /** Undoes every step taken, newest first; an undo that fails does not stop the ones before it. */
  async run(): Promise<void> {
    for (const undo of this.undos.splice(0).reverse()) await undo().catch(() => undefined);
  }
}

/** Runs `steps`; when they fail, undoes what they registered and rethrows their error. */
export async function withRollback<T>(steps: (rollback: Rollback) => Promise<T>): Promise<T> {
  const rollback = new Rollback();
  try {
    return await steps(rollback);
  } catch (err) {
    await rollback.run();
    throw err;
  }
}
