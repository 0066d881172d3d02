/**
 * The sandbox's bwrap argv (src/wrapper/remote/prefix.ts) over real files in a temp folder:
 * IPC unshared, the socket folders emptied and made read-only last, a bound socket elsewhere
 * covered by /dev/null, auth.json bound read-only over the agent dir's copy, the agent's
 * workspace bound writable after (so above) the hidden folder it lies in, and a file pi needs
 * under a hidden folder shown again. The sandbox itself is tried in test/reliability/sandbox-boundary.test.ts.
 */
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sandboxPrefix } from "../../../src/wrapper/remote/prefix.js";
import { unixSocketFilter } from "../../../src/wrapper/remote/seccomp.js";

/** Outside /tmp: what lies under /tmp is hidden by the sandbox's private /tmp, so the prefix leaves it be. */
const dir = fs.mkdtempSync(path.join(fs.existsSync("/var/tmp") ? "/var/tmp" : os.homedir(), "psa-prefix-"));
const home = path.join(dir, "home");
const runtime = path.join(dir, "runtime");
const socket = path.join(dir, "loose.sock");
const agent = path.join(home, ".pi", "agent");
const scratch = path.join(agent, "sessions", "p", "subagents", "t", "agents", "a", "runner-workspace");
const vertexFile = path.join(home, ".config", "gcloud", "application_default_credentials.json");
let server: net.Server;

beforeAll(async () => {
  for (const folder of [runtime, scratch, path.dirname(vertexFile)]) fs.mkdirSync(folder, { recursive: true });
  fs.writeFileSync(vertexFile, "{}");
  server = net.createServer();
  await new Promise<void>((resolve) => server.listen(socket, resolve));
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The position of `[flag, ...operands]` in args (-1 when absent). */
function at(args: string[], ...words: string[]): number {
  return args.findIndex((_, i) => words.every((word, j) => args[i + j] === word));
}

describe("sandboxPrefix", () => {
  const args = () =>
    sandboxPrefix(["~/.config", "~/.pi/agent/sessions"], {
      env: { XDG_RUNTIME_DIR: "/run/user/0" },
      home,
      hideAlso: [],
      keepVisible: [],
      hostSockets: [socket, "/nonexistent/x.sock"],
      showAgain: ["~/.config/gcloud/application_default_credentials.json"],
      agentDir: { path: agent, copy: path.join(dir, "copy"), folders: [], readOnlyFiles: ["auth.json"] },
      scratchRoot: scratch,
    });

  it("unshares IPC and empties /run, read-only once everything is bound", () => {
    const argv = args();
    expect(argv.slice(0, 5)).toEqual(["bwrap", "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--new-session"]);
    expect(at(argv, "--tmpfs", "/run")).toBeGreaterThan(0);
    expect(at(argv, "--remount-ro", "/run")).toBeGreaterThan(at(argv, "--bind", scratch, scratch));
    expect(argv.at(-1)).toBe("--");
  });

  it("binds the agent dir's auth.json read-only over the copy", () => {
    const argv = args();
    const copyBind = at(argv, "--bind", path.join(dir, "copy"), agent);
    expect(copyBind).toBeGreaterThan(0);
    expect(at(argv, "--ro-bind", path.join(dir, "copy", "auth.json"), path.join(agent, "auth.json"))).toBeGreaterThan(
      copyBind,
    );
  });

  it("covers a bound socket file with /dev/null (a read-only bind does not stop connect); a socket that is gone is left out", () => {
    const argv = args();
    expect(at(argv, "--ro-bind", "/dev/null", socket)).toBeGreaterThan(0);
    expect(argv).not.toContain("/nonexistent/x.sock");
  });

  it("hides ~/.config but shows the run's provider file in it again, read-only", () => {
    const argv = args();
    const hidden = at(argv, "--tmpfs", path.join(home, ".config"));
    expect(hidden).toBeGreaterThan(0);
    expect(at(argv, "--ro-bind", vertexFile, vertexFile)).toBeGreaterThan(hidden);
    expect(at(argv, "--remount-ro", path.join(home, ".config"))).toBeGreaterThan(at(argv, "--ro-bind", vertexFile));
  });

  it("hides the session history over the agent dir's copy, and binds the agent's workspace in it writable after that", () => {
    const argv = args();
    const copyBind = at(argv, "--bind", path.join(dir, "copy"), agent);
    const sessions = at(argv, "--tmpfs", path.join(agent, "sessions"));
    const workspace = at(argv, "--bind", scratch, scratch);
    expect(sessions).toBeGreaterThan(copyBind);
    expect(workspace).toBeGreaterThan(sessions);
    expect(at(argv, "--remount-ro", path.join(agent, "sessions"))).toBeGreaterThan(workspace);
  });

  it("names the seccomp filter's fd to bwrap when there is one", () => {
    const base = { env: {}, home, hideAlso: [], keepVisible: [] };
    expect(at(sandboxPrefix([], { ...base, seccompFd: 3 }), "--seccomp", "3")).toBeGreaterThan(0);
    expect(sandboxPrefix([], base)).not.toContain("--seccomp");
  });
});

describe("unixSocketFilter", () => {
  it("is a whole number of 8-byte BPF instructions on x86-64 and arm64, ending in return", () => {
    for (const arch of ["x64", "arm64"]) {
      const filter = unixSocketFilter(arch)!;
      expect(filter.length % 8).toBe(0);
      // The last instruction returns EAFNOSUPPORT (errno 97) for a refused call.
      expect(filter.readUInt16LE(filter.length - 8)).toBe(0x06);
      expect(filter.readUInt32LE(filter.length - 4)).toBe(0x00050000 | 97);
    }
  });

  it("is none on an architecture it has no system call numbers for (the socket files are covered instead)", () => {
    expect(unixSocketFilter("riscv64")).toBeUndefined();
  });
});
