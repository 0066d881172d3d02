/**
 * The sandbox as a boundary, tried from inside a real bubblewrap: the wrapper runs a turn on a
 * `sandbox` runner whose (fake) pi runs a shell line of escapes and writes what it saw into
 * its workspace, which comes back as the turn's commit. Each escape must fail: a secret
 * variable of the wrapper's environment, a host Unix socket (a listener under /run, one in
 * $XDG_RUNTIME_DIR, one in a folder nothing hides), a file of the default `hide` (~/.netrc,
 * ~/.kube, ~/.docker, ~/.npmrc, ~/.git-credentials, ~/.config, pi's session history), another
 * provider's login in pi's auth.json or models.json, a write to auth.json or outside the
 * workspace, a host process, the host's IPC namespace. What the run needs gets through: its
 * provider's key (by models.json's variable name), the definition's `env` names, `PI_*`, the
 * name server's address.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_SANDBOX_HIDE } from "../../src/contracts/runners.js";
import { skipOrFail } from "../support/needs.js";
import { cleanupWrapperCases, defaultMeta, wrapperCase } from "../support/wrapper-harness.js";

afterEach(cleanupWrapperCases);

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, encoding: "utf8" }).trim();

const bwrapMissing = (): string | undefined => {
  try {
    execFileSync("bwrap", ["--ro-bind", "/", "/", "true"], { stdio: "ignore" });
    return undefined;
  } catch {
    return "bwrap (Debian package bubblewrap) is missing or cannot make a namespace here";
  }
};
const canListenInRun = (() => {
  try {
    fs.accessSync("/run", fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
})();

/** Outside /tmp (the sandbox's /tmp is its own, so a home there would prove nothing). */
const OUTSIDE_TMP = fs.existsSync("/var/tmp") ? "/var/tmp" : "/work";
const tag = randomBytes(4).toString("hex");
const home = fs.mkdtempSync(path.join(OUTSIDE_TMP, "psa-box-home-"));
const runtimeDir = fs.mkdtempSync(path.join(OUTSIDE_TMP, "psa-box-xdg-"));
const looseDir = fs.mkdtempSync(path.join(OUTSIDE_TMP, "psa-box-sockets-"));
const agentDir = path.join(home, ".pi", "agent");
const sockets = {
  run: `/run/psa-box-${tag}.sock`,
  runtime: path.join(runtimeDir, "bus"),
  loose: path.join(looseDir, "agent.sock"),
  // An abstract name (Linux): no file, so no mount can hide it; the seccomp filter refuses it.
  abstract: `\0psa-box-${tag}`,
};
const servers: net.Server[] = [];

/** Home files the default hide covers, each holding a word the probe must not print. */
const HOME_SECRETS: Record<string, string> = {
  ".netrc": "NETRC-SECRET",
  ".kube/config": "KUBE-SECRET",
  ".docker/config.json": "DOCKER-SECRET",
  ".npmrc": "NPMRC-SECRET",
  ".git-credentials": "GITCRED-SECRET",
  ".config/gh/hosts.yml": "GH-SECRET",
  ".config/some-tool/token": "CONFIG-SECRET",
  ".pi/agent/sessions/--other-project--/s.jsonl": "SESSION-HISTORY",
};

beforeAll(async () => {
  for (const [file, word] of Object.entries(HOME_SECRETS)) {
    fs.mkdirSync(path.dirname(path.join(home, file)), { recursive: true });
    fs.writeFileSync(path.join(home, file), `${word}\n`);
  }
  fs.writeFileSync(
    path.join(agentDir, "auth.json"),
    JSON.stringify({
      other: { type: "api_key", key: "OTHER-AUTH-SECRET" },
      fake: { type: "api_key", key: "FAKE-AUTH-KEY" },
      backup: { type: "oauth", access: "BACKUP-ACCESS", refresh: "BACKUP-REFRESH-SECRET", expires: 4e12 },
    }),
  );
  fs.writeFileSync(
    path.join(agentDir, "models.json"),
    JSON.stringify({
      providers: {
        fake: { baseUrl: "http://127.0.0.1:9/v1", api: "openai-completions", apiKey: "FAKE_PROVIDER_KEY", models: [] },
        other: { baseUrl: "http://127.0.0.1:9/v1", api: "openai-completions", apiKey: "OTHER-MODELS-SECRET" },
      },
    }),
  );
  for (const [name, file] of Object.entries(sockets)) {
    if (name === "run" && !canListenInRun) continue;
    const server = net.createServer((socket) => socket.on("error", () => undefined).end("HOST-SOCKET-ANSWERED\n"));
    await new Promise<void>((resolve) => server.listen(file, resolve));
    servers.push(server);
  }
});

afterAll(async () => {
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  fs.rmSync(sockets.run, { force: true });
  for (const dir of [home, runtimeDir, looseDir]) fs.rmSync(dir, { recursive: true, force: true });
});

/** A socket as the probe names it: an abstract name with `@` for its leading NUL. */
const shown = (file: string) => (file.startsWith("\0") ? `@${file.slice(1)}` : file);

/** Tries to connect to each socket: `CONNECTED <path>` or `REFUSED <path> <code>`. */
const CONNECT_SCRIPT = `for (const name of process.argv.slice(1)) {
  const file = name.startsWith("@") ? "\\0" + name.slice(1) : name;
  const s = require("net").connect(file);
  s.on("connect", () => { console.log("CONNECTED " + name); s.destroy(); });
  s.on("error", (e) => console.log("REFUSED " + name + " " + e.code));
}`;

function probe(outside: string, scratch: string, hostPid: number): string {
  const lines = [
    "echo '--- env'; env | grep -v '^FAKE_PI_SCRIPT=' | sort",
    `echo '--- sockets'; node -e '${CONNECT_SCRIPT}' ${Object.values(sockets).map(shown).join(" ")}`,
    "echo '--- home'",
    ...Object.keys(HOME_SECRETS).map((file) => `cat ~/${file} 2>/dev/null || echo "HIDDEN ${file}"`),
    `echo '--- auth'; cat ${agentDir}/auth.json; echo; cat ${agentDir}/models.json`,
    `echo x > ${agentDir}/auth.json && echo AUTH-WRITTEN || echo AUTH-WRITE-REFUSED`,
    `touch ${outside}/escaped && echo OUTSIDE-WRITTEN || echo OUTSIDE-WRITE-REFUSED`,
    `touch ~/escaped && echo HOME-WRITTEN || echo HOME-WRITE-REFUSED`,
    `touch /run/escaped && echo RUN-WRITTEN || echo RUN-WRITE-REFUSED`,
    `touch ${scratch}/inside && echo WORKSPACE-WRITTEN || echo WORKSPACE-WRITE-REFUSED`,
    `kill -0 ${hostPid} 2>/dev/null && echo HOST-PROCESS-SEEN || echo HOST-PROCESS-UNSEEN`,
    "echo PROCS=$(ls /proc | grep -c '^[0-9]')",
    "echo IPC=$(readlink /proc/self/ns/ipc)",
    "echo '--- resolv'; cat /etc/resolv.conf >/dev/null && echo RESOLV-READABLE",
  ];
  return lines.join("; ");
}

describe("area 6: the sandbox runner is a boundary (fake pi, real bubblewrap): every escape tried from inside is refused", () => {
  it("a sandboxed child reads no secret variable, reaches no host socket, sees no hidden file or other login, writes only its workspace", async (ctx) => {
    skipOrFail(ctx, bwrapMissing());
    const c = await wrapperCase({ meta: {} });
    const repo = path.join(c.dir, "repo");
    fs.mkdirSync(repo);
    git(repo, "init", "-q", "-b", "main");
    fs.writeFileSync(path.join(repo, "a.txt"), "a\n");
    git(repo, "add", "-A");
    git(repo, "commit", "-q", "-m", "initial");
    const workspace = path.join(home, ".pi", "agent", "sessions", "--proj--", "subagents", "t", "agents", "box");
    const scratch = path.join(workspace, "runner-workspace");
    const meta = defaultMeta({
      cwd: "repo",
      resolvedModel: "fake/fast",
      fallbackModels: ["backup/slow"],
      runner: {
        name: "box",
        kind: "sandbox",
        hide: [...DEFAULT_SANDBOX_HIDE],
        env: ["FAKE_PI_SCRIPT", "EXTRA_ALLOWED"],
      },
      runnerWorkspacePath: scratch,
    });
    fs.writeFileSync(c.metaPath, JSON.stringify(meta));
    const script = {
      steps: [
        { agentStart: true },
        { turnStart: true },
        { user: true },
        { shell: { command: probe(looseDir, scratch, process.pid), path: "probe.txt" } },
        { assistant: { text: "probed", stopReason: "stop" } },
        { turnEnd: true },
        { agentEnd: true },
      ],
    };
    const outsideIpc = fs.readlinkSync("/proc/self/ns/ipc");
    const run = await c.run({
      env: {
        HOME: home,
        PI_CODING_AGENT_DIR: agentDir,
        FAKE_PI_SCRIPT: JSON.stringify(script),
        FAKE_PI_RECORD: "",
        XDG_RUNTIME_DIR: runtimeDir,
        DBUS_SESSION_BUS_ADDRESS: `unix:path=${sockets.runtime}`,
        SSH_AUTH_SOCK: sockets.loose,
        SECRET_TOKEN: "ENV-SECRET-TOKEN",
        OPENAI_API_KEY: "OPENAI-SECRET-KEY",
        FAKE_PROVIDER_KEY: "FAKE-PROVIDER-ENV-KEY",
        EXTRA_ALLOWED: "EXTRA-NAME-KEPT",
        LC_ALL: "C.UTF-8",
      },
    });
    expect(run.result?.status, run.stderr).toBe("completed");
    const seen = git(repo, "show", "HEAD:probe.txt");
    // Soft: a failure lists every escape that got through, not only the first.

    // The environment: the allow-list, the run's provider key, the definition's names.
    for (const kept of [
      "FAKE-PROVIDER-ENV-KEY",
      "EXTRA-NAME-KEPT",
      `PI_CODING_AGENT_DIR=${agentDir}`,
      "LC_ALL=C.UTF-8",
    ]) {
      expect.soft(seen).toContain(kept);
    }
    for (const secret of [
      "ENV-SECRET-TOKEN",
      "OPENAI-SECRET-KEY",
      "DBUS_SESSION_BUS_ADDRESS",
      "SSH_AUTH_SOCK",
      "XDG_RUNTIME_DIR",
    ]) {
      expect.soft(seen).not.toContain(secret);
    }
    // No host socket answers: not under /run, not in the runtime dir, not in an unhidden folder.
    expect.soft(seen).not.toContain("CONNECTED");
    for (const [name, file] of Object.entries(sockets)) {
      if (name !== "run" || canListenInRun) expect.soft(seen).toMatch(new RegExp(`REFUSED ${shown(file)} E[A-Z]+`));
    }
    // The default hide, and pi's session history of other projects.
    for (const [file, word] of Object.entries(HOME_SECRETS)) {
      expect.soft(seen).toContain(`HIDDEN ${file}`);
      expect.soft(seen).not.toContain(word);
    }
    // pi's credentials: the run's providers only, read-only; an OAuth login without its refresh token.
    expect.soft(seen).toContain("FAKE-AUTH-KEY");
    expect.soft(seen).toContain("BACKUP-ACCESS");
    for (const secret of ["OTHER-AUTH-SECRET", "BACKUP-REFRESH-SECRET", "OTHER-MODELS-SECRET"]) {
      expect.soft(seen).not.toContain(secret);
    }
    expect.soft(seen).toContain("AUTH-WRITE-REFUSED");
    expect
      .soft(JSON.parse(fs.readFileSync(path.join(agentDir, "auth.json"), "utf8")).other.key)
      .toBe("OTHER-AUTH-SECRET");
    // Writes: only the workspace.
    for (const word of ["OUTSIDE-WRITE-REFUSED", "HOME-WRITE-REFUSED", "RUN-WRITE-REFUSED", "WORKSPACE-WRITTEN"]) {
      expect.soft(seen).toContain(word);
    }
    expect.soft(fs.existsSync(path.join(looseDir, "escaped"))).toBe(false);
    expect.soft(fs.existsSync(path.join(scratch, "inside"))).toBe(true);
    // Processes and IPC of its own.
    expect.soft(seen).toContain("HOST-PROCESS-UNSEEN");
    const procs = Number(/PROCS=(\d+)/.exec(seen)?.[1]);
    expect.soft(procs).toBeGreaterThan(0);
    expect.soft(procs).toBeLessThan(15);
    const ipc = /IPC=(\S+)/.exec(seen)?.[1];
    expect.soft(ipc).toMatch(/^ipc:/);
    expect.soft(ipc).not.toBe(outsideIpc);
    // What the child needs to reach its model: name lookups.
    expect.soft(seen).toContain("RESOLV-READABLE");
  }, 60_000);
});
