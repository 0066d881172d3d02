import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { processAlive } from "../../src/lib/process.js";

describe("processAlive", () => {
  it("is true for a running process, false once it has exited and been reaped", async () => {
    expect(processAlive(process.pid)).toBe(true);
    const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
    const pid = child.pid!;
    await new Promise((resolve) => child.once("exit", resolve));
    expect(processAlive(pid)).toBe(false);
  });

  it("is true for a process of another user (EPERM)", () => {
    // pid 1 always exists; unless this runs as root, signalling it is refused with EPERM.
    expect(processAlive(1)).toBe(true);
  });
});
