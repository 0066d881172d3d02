/**
 * The far host of the ssh runner tests (test/support/ssh-host.ts) is what it claims: another
 * hostname and address, the checkout and /tmp out of sight, stdin and stdout streaming over
 * ssh, the installed package runnable there, a shared connection that makes the next command
 * cheap, and nothing left behind by stop().
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { missingNeeds, skipOrFail } from "../support/needs.js";
import { pidRunning, runProcess } from "../support/processes.js";
import { startScriptedLlm } from "../support/scripted-llm.js";
import { SSH_HOST_TOOLS, type SshHost, startSshHost } from "../support/ssh-host.js";

const missing = missingNeeds(SSH_HOST_TOOLS, { root: true });
const REPO_ROOT = path.resolve(import.meta.dirname, "..", "..");

describe("a far host in a network namespace, over ssh", () => {
  let host: SshHost | undefined;
  beforeAll(async () => {
    if (missing === undefined) host = await startSshHost();
  }, 30_000);
  afterAll(async () => {
    await host?.stop();
  });

  it("runs a command there: its own hostname, address and filesystem view", async (ctx) => {
    skipOrFail(ctx, missing);
    const far = host as SshHost;
    const result = await far.run(
      `hostname; id -un; ls -A ${JSON.stringify(REPO_ROOT)} | wc -l; ls -A /tmp | wc -l; ip -o -4 addr show`,
    );
    expect(result.code, result.stderr).toBe(0);
    const [name, user, checkoutEntries, tmpEntries, ...addresses] = result.stdout.trim().split("\n");
    expect(name).toBe(far.hostname);
    expect(name).not.toBe(os.hostname());
    expect(user).toBe(far.user);
    expect(checkoutEntries?.trim()).toBe("0");
    expect(tmpEntries?.trim()).toBe("0");
    expect(addresses.join("\n")).toContain(`${far.address}/30`);
  });

  it("streams stdin in and stdout back, and passes the exit status through", async (ctx) => {
    skipOrFail(ctx, missing);
    const far = host as SshHost;
    const input = Array.from({ length: 2000 }, (_, i) => `line ${i}`).join("\n");
    const result = await far.run("tr a-z A-Z; exit 7", { input });
    expect(result.code).toBe(7);
    expect(result.stdout).toBe(input.toUpperCase());
  });

  it("has this package installed where it sees it: subagent-wrapper --version and node on its PATH", async (ctx) => {
    skipOrFail(ctx, missing);
    const far = host as SshHost;
    const result = await far.run("command -v subagent-wrapper; subagent-wrapper --version; node --version");
    expect(result.code, result.stderr).toBe(0);
    const [where, version, node] = result.stdout.trim().split("\n");
    expect(where).toBe(path.join(far.farBin, "subagent-wrapper"));
    const manifest = (await import(path.join(REPO_ROOT, "package.json"), { with: { type: "json" } })) as {
      default: { version: string };
    };
    expect(version).toContain(manifest.default.version);
    expect(node).toBe(process.version);
  });

  it("reaches an LLM listening on this machine's side of the veth, and not this machine's loopback", async (ctx) => {
    skipOrFail(ctx, missing);
    const far = host as SshHost;
    const llm = await startScriptedLlm({ host: far.hostAddress });
    const loopback = await startScriptedLlm();
    try {
      const fetchModels = (url: string) =>
        `node -e 'fetch(process.argv[1]).then((r) => r.json()).then((j) => console.log(j.data.length), () => console.log("unreachable"))' ${url}/models`;
      const result = await far.run(`${fetchModels(llm.url)}; ${fetchModels(loopback.url)}`);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout.trim().split("\n")).toEqual(["2", "unreachable"]);
    } finally {
      await Promise.all([llm.close(), loopback.close()]);
    }
  });

  it("shares one connection: the second command over a ControlMaster is much faster than the first", async (ctx) => {
    skipOrFail(ctx, missing);
    const far = host as SshHost;
    const socketDir = mkdtempSync(path.join(os.tmpdir(), "pst-cm-"));
    const control = ["-o", "ControlMaster=auto", "-o", `ControlPath=${socketDir}/%C`, "-o", "ControlPersist=30"];
    const args = [...control, ...far.sshArgs];
    try {
      const first = await runProcess("ssh", [...args, "--", "true"]);
      const second = await runProcess("ssh", [...args, "--", "true"]);
      expect(first.code, first.stderr).toBe(0);
      expect(second.code, second.stderr).toBe(0);
      const check = await runProcess("ssh", [...args, "-O", "check"]);
      expect(check.code, check.stderr).toBe(0);
      console.log(
        `ssh to the far host: first command ${first.durationMs} ms, over the shared connection ${second.durationMs} ms`,
      );
      expect(second.durationMs).toBeLessThan(first.durationMs);
    } finally {
      await runProcess("ssh", [...args, "-O", "exit"]);
      rmSync(socketDir, { recursive: true, force: true });
    }
  });
});

describe("a stopped far host", () => {
  it("leaves no namespace, user, folder or process, a detached far process included", async (ctx) => {
    skipOrFail(ctx, missing);
    const far = await startSshHost();
    const left = await far.run("setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!");
    const leftPid = Number(left.stdout.trim());
    expect(pidRunning(leftPid)).toBe(true);
    await far.stop();
    expect(pidRunning(leftPid)).toBe(false);
    const namespaces = await runProcess("ip", ["netns", "list"]);
    expect(namespaces.stdout).not.toContain(far.netns);
    const user = await runProcess("id", [far.user]);
    expect(user.code).not.toBe(0);
    expect(existsSync(far.root)).toBe(false);
    expect(pidRunning(far.sshdPid)).toBe(false);
  });
});
