import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runSetupCommand } from "../../../../src/extension/isolation/setup.js";
import { gone, useSandbox } from "./support.js";

const sandbox = useSandbox();

describe("runSetupCommand", () => {
  it("runs a shell command in the worktree with the given environment", async () => {
    const box = sandbox();
    const result = await runSetupCommand({
      command: 'echo "$MARK" > made.txt && pwd && echo warn >&2',
      cwd: box.dir,
      timeoutMs: 10_000,
      env: { ...box.env, MARK: "hello" },
    });
    expect(fs.readFileSync(path.join(box.dir, "made.txt"), "utf8")).toBe("hello\n");
    expect(result).toEqual({ stdout: box.dir, stderr: "warn" });
  });

  it("a non-zero exit is an error that ends with the stderr tail (at most 600 characters)", async () => {
    const box = sandbox();
    const command = 'i=0; while [ $i -lt 300 ]; do echo "error line $i" >&2; i=$((i+1)); done; exit 7';
    const error = (await runSetupCommand({ command, cwd: box.dir, timeoutMs: 10_000, env: box.env }).catch(
      (e: unknown) => e,
    )) as Error;
    expect(error.message).toMatch(/^worktree setup command "i=0; while .*" failed \(exit 7\): …/);
    expect(error.message.endsWith("error line 299")).toBe(true);
    const quoted = error.message.slice(error.message.indexOf("(exit 7): ") + "(exit 7): ".length);
    expect(quoted.length).toBeLessThanOrEqual(600);
  });

  it("falls back to stdout when stderr is empty", async () => {
    const box = sandbox();
    await expect(
      runSetupCommand({ command: "echo only on stdout; exit 1", cwd: box.dir, timeoutMs: 10_000, env: box.env }),
    ).rejects.toThrow(/failed \(exit 1\): only on stdout$/);
  });

  it("a command over its time limit is stopped with everything it started, and says so", async () => {
    const box = sandbox();
    const pidFile = path.join(box.dir, "pids");
    const command = `sleep 30 & echo $! > "${pidFile}"; echo starting >&2; trap '' TERM; sleep 30`;
    const started = Date.now();
    const error = (await runSetupCommand({ command, cwd: box.dir, timeoutMs: 300, env: box.env }).catch(
      (e: unknown) => e,
    )) as Error;
    expect(error.message).toMatch(/timed out after 300 ms: starting$/);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(await gone(Number(fs.readFileSync(pidFile, "utf8")))).toBe(true);
  });

  it("what a successful command leaves running in its group is stopped when it exits", async () => {
    const box = sandbox();
    const pidFile = path.join(box.dir, "pid");
    await runSetupCommand({
      command: `sleep 30 >/dev/null 2>&1 & echo $! > "${pidFile}"`,
      cwd: box.dir,
      timeoutMs: 10_000,
      env: box.env,
    });
    expect(await gone(Number(fs.readFileSync(pidFile, "utf8")))).toBe(true);
  });
});
