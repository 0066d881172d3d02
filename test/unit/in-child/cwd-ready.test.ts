import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { waitForCwdReady } from "../../../src/in-child/cwd-ready.js";

/** A read that finds nothing `misses` times, then `text` (or throws `error`); counts its calls. */
function scripted(misses: number, outcome: { text?: string; error?: NodeJS.ErrnoException }) {
  let calls = 0;
  const read = (): string | undefined => {
    calls++;
    if (calls <= misses) return undefined;
    if (outcome.error) throw outcome.error;
    return outcome.text;
  };
  return { read, calls: () => calls };
}

describe("waitForCwdReady", () => {
  it("resolves once the file holds `ready` (a trailing newline allowed), looking again until it exists", async () => {
    const file = scripted(3, { text: "ready\n" });
    await waitForCwdReady("/x/ready", { pollMs: 1, read: file.read });
    expect(file.calls()).toBe(4);
  });

  it("rejects with the file's text when it says anything else", async () => {
    await expect(
      waitForCwdReady("/x/ready", {
        pollMs: 1,
        read: scripted(1, { text: "the worktree's checkout failed: disk full\n" }).read,
      }),
    ).rejects.toThrow(/^the worktree's checkout failed: disk full$/);
    await expect(waitForCwdReady("/x/ready", { pollMs: 1, read: scripted(0, { text: "\n" }).read })).rejects.toThrow(
      "/x/ready is empty",
    );
  });

  it("rejects, naming the file, when it cannot be read", async () => {
    const error = Object.assign(new Error("EACCES: permission denied"), { code: "EACCES" });
    await expect(waitForCwdReady("/x/ready", { pollMs: 1, read: scripted(0, { error }).read })).rejects.toThrow(
      "cannot read /x/ready: EACCES: permission denied",
    );
  });

  describe("on disk", () => {
    const dirs: string[] = [];
    afterEach(() => {
      for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
    });

    it("waits for a file that appears later, in a folder that did not exist yet", async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "psa-cwd-ready-"));
      dirs.push(dir);
      const file = path.join(dir, "later", "wt.ready");
      let settled = false;
      const waiting = waitForCwdReady(file, { pollMs: 2 }).then(() => {
        settled = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(settled).toBe(false);
      fs.mkdirSync(path.dirname(file));
      fs.writeFileSync(file, "ready\n");
      await waiting;
      expect(settled).toBe(true);
    });
  });
});
