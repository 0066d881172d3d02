/**
 * A watch on the running turns' `dialogs/` folders, so a child's dialog reaches this agent as
 * soon as its wrapper writes the ask, not at the next scan (dialogs.ts still scans every
 * DIALOG_SCAN_MS: a watch can miss an event, and some file systems have none). The wrapper makes
 * the folder at a run's first dialog, so until then the run's own folder is watched for it.
 */
import fs from "node:fs";
import path from "node:path";
import { DIALOGS_FOLDER } from "../../../contracts/dialogs.js";

/** Calls `changed` with the entry's name when the folder changes; undefined when it cannot watch. Never holds the process open. */
export type FolderWatch = (dir: string, changed: (name: string | undefined) => void) => { close(): void } | undefined;

export const nodeFolderWatch: FolderWatch = (dir, changed) => {
  try {
    const watcher = fs.watch(dir, { persistent: false }, (_event, name) => changed(name?.toString()));
    // The folder removed (the run cleaned up): the watch ends, the scan carries on.
    watcher.on("error", () => watcher.close());
    return watcher;
  } catch {
    return undefined;
  }
};

interface Watching {
  close(): void;
  /** On the dialogs/ folder itself (else on the run's folder, waiting for dialogs/ to appear). */
  onDialogs: boolean;
}

export class DialogWatch {
  private readonly watching = new Map<string, Watching>();

  constructor(
    private readonly changed: () => void,
    private readonly watch: FolderWatch = nodeFolderWatch,
  ) {}

  /** Watches these runs' folders and no others (called at each scan, before it reads them). */
  follow(runDirs: string[]): void {
    const live = new Set(runDirs);
    for (const [dir, watching] of this.watching) {
      if (live.has(dir)) continue;
      watching.close();
      this.watching.delete(dir);
    }
    for (const dir of runDirs) {
      const current = this.watching.get(dir);
      if (current?.onDialogs) continue;
      const dialogs = this.watch(path.join(dir, DIALOGS_FOLDER), () => this.changed());
      if (dialogs) {
        current?.close();
        this.watching.set(dir, { close: () => dialogs.close(), onDialogs: true });
      } else if (!current) {
        const run = this.watch(dir, (name) => {
          if (name === DIALOGS_FOLDER) this.changed();
        });
        if (run) this.watching.set(dir, { close: () => run.close(), onDialogs: false });
      }
    }
  }

  close(): void {
    for (const watching of this.watching.values()) watching.close();
    this.watching.clear();
  }
}
