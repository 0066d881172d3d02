/**
 * The tree directory with writes that fail on demand (a full disk, a folder turned
 * read-only): the runtime's TreeDir seam, so unit tests reach every failure path without
 * filling a disk. Reads stay real.
 */
import type { AgentRecordV1 } from "../../src/contracts/tree.js";
import { TreeDir } from "../../src/extension/tree/tree-dir.js";

/** Node's error for a full disk, as writeFile raises it. */
export function enospc(file = "agent.json"): NodeJS.ErrnoException {
  return Object.assign(new Error(`ENOSPC: no space left on device, open '${file}'`), {
    code: "ENOSPC",
    errno: -28,
    syscall: "open",
  });
}

export class FailingTree extends TreeDir {
  /** Decides per record write: an error to throw, or undefined to write. */
  failRecord: ((record: AgentRecordV1) => Error | undefined) | undefined;
  /** Every record write attempted, with whether it failed: path and status at the time. */
  readonly writes: Array<{ path: string; status: string; failed: boolean }> = [];

  /** Every record write fails from now on (until `heal`). */
  fillDisk(): void {
    this.failRecord = () => enospc();
  }

  heal(): void {
    this.failRecord = undefined;
  }

  override async writeRecord(record: AgentRecordV1): Promise<void> {
    const failure = this.failRecord?.(record);
    this.writes.push({ path: record.path, status: record.status, failed: failure !== undefined });
    if (failure) throw failure;
    return super.writeRecord(record);
  }
}
