/**
 * The watch on the running turns' dialogs/ folders, with the watch injected: a run's own folder
 * until its dialogs/ appears, then dialogs/ itself; a run no longer running is let go.
 */
import { describe, expect, it } from "vitest";
import { DialogWatch, type FolderWatch } from "../../../../../src/extension/turns/dialogs/dialog-watch.js";

class Folders {
  /** Folders that exist (a watch on any other fails, as fs.watch does). */
  readonly exist = new Set<string>();
  readonly open = new Map<string, (name: string | undefined) => void>();
  readonly watch: FolderWatch = (dir, changed) => {
    if (!this.exist.has(dir)) return undefined;
    this.open.set(dir, changed);
    return { close: () => this.open.delete(dir) };
  };
}

describe("the dialogs folders' watch", () => {
  it("watches a run's folder for dialogs/, then dialogs/ itself, and lets a run go once it is not running", () => {
    const folders = new Folders();
    let changes = 0;
    const watch = new DialogWatch(() => (changes += 1), folders.watch);
    folders.exist.add("/t/runs/a");
    watch.follow(["/t/runs/a"]);
    expect([...folders.open.keys()]).toEqual(["/t/runs/a"]);
    // Another entry of the run's folder (events.jsonl) is not a dialog.
    folders.open.get("/t/runs/a")?.("events.jsonl");
    expect(changes).toBe(0);
    folders.open.get("/t/runs/a")?.("dialogs");
    expect(changes).toBe(1);

    // The next scan finds dialogs/: watched instead of the run's folder; every change there counts.
    folders.exist.add("/t/runs/a/dialogs");
    watch.follow(["/t/runs/a"]);
    expect([...folders.open.keys()]).toEqual(["/t/runs/a/dialogs"]);
    folders.open.get("/t/runs/a/dialogs")?.("000001.ask.json");
    expect(changes).toBe(2);
    watch.follow(["/t/runs/a"]);
    expect([...folders.open.keys()]).toEqual(["/t/runs/a/dialogs"]);

    // A run that cannot be watched (gone already) is left to the scan.
    watch.follow(["/t/runs/a", "/t/runs/gone"]);
    expect([...folders.open.keys()]).toEqual(["/t/runs/a/dialogs"]);
    watch.follow([]);
    expect(folders.open.size).toBe(0);
    folders.exist.add("/t/runs/b");
    watch.follow(["/t/runs/b"]);
    watch.close();
    expect(folders.open.size).toBe(0);
  });
});
