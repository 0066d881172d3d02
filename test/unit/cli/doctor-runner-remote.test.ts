import { execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  type ArgvRun,
  checkSshRunner,
  failureDetail,
  farCheckScript,
  farChecks,
  parseFarReport,
} from "../../../src/cli/doctor-runner-remote.js";
import { packageVersion } from "../../../src/lib/package-info.js";

const ok = (stdout: string, durationMs = 5): ArgvRun => ({ code: 0, stdout, stderr: "", timedOut: false, durationMs });
const report = (entries: Record<string, string>) =>
  Object.entries(entries)
    .map(([name, value]) => `pst-doctor\t${name}\t${value}`)
    .join("\n");

describe("the far script", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "pst-doctor-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const tool = (name: string, body: string) => {
    writeFileSync(path.join(dir, name), `#!/bin/sh\n${body}\n`);
    chmodSync(path.join(dir, name), 0o755);
  };

  it("reports each tool's first --version line, an empty value for a missing one, and the host", () => {
    tool("git", "echo 'git version 2.39.5'");
    tool("node", "echo v22.1.0; echo second line");
    tool("sw it", 'echo "sw $1"');
    // pi missing; PATH holds only the fake tools and the folder of sh, head and hostname.
    const script = farCheckScript([path.join(dir, "sw it")]);
    const env = { PATH: `${dir}:/usr/bin:/bin`, HOME: "/home/far" };
    const out = execFileSync("/bin/sh", ["-c", script], { env, encoding: "utf8" });
    const found = parseFarReport(`motd banner\n${out}`);
    expect(Object.fromEntries(found)).toEqual({
      git: "git version 2.39.5",
      node: "v22.1.0",
      pipath: "",
      pi: "",
      agentdir: "/home/far/.pi/agent",
      package: "sw --version",
      host: os.hostname(),
    });
  });

  it("asks the pi PI_SUBAGENTS_PI_BIN names for its version and models, in PI_CODING_AGENT_DIR's dir", () => {
    // pi 0.73.1 lists its models on stderr: the script reads both streams.
    tool(
      "my pi",
      '[ "$1" = --version ] && echo 1.6.0 && exit 0\nprintf "provider  model\\nfake  fast\\nfake  slow\\n" >&2',
    );
    const env = {
      PATH: "/usr/bin:/bin",
      PI_SUBAGENTS_PI_BIN: path.join(dir, "my pi"),
      PI_CODING_AGENT_DIR: "/x/agent",
    };
    const out = execFileSync("/bin/sh", ["-c", farCheckScript(["sw"])], { env, encoding: "utf8" });
    const found = parseFarReport(out);
    expect([found.get("pipath"), found.get("pi"), found.get("models"), found.get("agentdir")]).toEqual([
      path.join(dir, "my pi"),
      "1.6.0",
      "2 fake/fast",
      "/x/agent",
    ]);
  });

  it("reports the package missing when the remote command's program is not there", () => {
    const script = farCheckScript(["no-such-subagent-wrapper"]);
    const out = execFileSync("/bin/sh", ["-c", script], { env: { PATH: "/usr/bin:/bin" }, encoding: "utf8" });
    expect(parseFarReport(out).get("package")).toBe("");
  });
});

describe("farChecks", () => {
  const remote = ["subagent-wrapper"];
  const present = { git: "git version 2.39.5", node: "v22.19.0", pipath: "/u/bin/pi", pi: "1.6.0" };
  const rest = { package: packageVersion(), models: "3 a/b", agentdir: "/h/.pi/agent", host: "far" };

  it("passes when git, Node ≥ 20, pi on its Node, the package and a model are there", () => {
    const checks = farChecks(parseFarReport(report({ ...present, ...rest })), remote);
    expect(checks.map((c) => [c.name, c.ok])).toEqual([
      ["far git", true],
      ["far node", true],
      ["far pi", true],
      ["far package", true],
      ["far models", true],
    ]);
    expect(checks[2]?.detail).toBe("1.6.0 (/u/bin/pi) on far");
    expect(checks[4]?.detail).toBe("the far pi has a key for 3 models (first: a/b), from /h/.pi/agent on far");
    expect(checks[3]?.detail).toBe(`subagent-wrapper --version: ${packageVersion()} on far`);
    expect(checks[3]?.notes).toBeUndefined();
  });

  it("names each missing one with what to do, and an old Node as too old", () => {
    const checks = farChecks(
      parseFarReport(report({ git: "", node: "v18.19.0", pipath: "", pi: "", package: "", host: "far" })),
      remote,
    );
    expect(checks.map((c) => [c.name, c.ok, c.detail])).toEqual([
      ["far git", false, "missing on far"],
      ["far node", false, "v18.19.0 on far is too old"],
      ["far pi", false, "pi not found on the far PATH on far"],
      ["far package", false, "missing on far"],
    ]);
    expect(checks.every((c) => c.hint !== undefined)).toBe(true);
  });

  it("names the runner's own pi when it is not there", () => {
    const checks = farChecks(parseFarReport(report({ ...present, pipath: "", pi: "", ...rest })), remote, "/opt/pi");
    expect(checks[2]).toMatchObject({ ok: false, detail: "/opt/pi not found on far" });
  });

  it("fails a pi 1.x on a Node older than 22.19, and a pi --version that printed no version", () => {
    const old = farChecks(parseFarReport(report({ ...present, node: "v20.19.0", ...rest })), remote);
    expect(old[2]).toMatchObject({
      ok: false,
      detail: "1.6.0 on far needs Node 22.19.0 or newer, and node there is 20.19.0",
    });
    const crashed = farChecks(
      parseFarReport(report({ ...present, node: "v20.19.0", pi: "SyntaxError: Invalid regular expression", ...rest })),
      remote,
    );
    expect(crashed[2]?.ok).toBe(false);
    expect(crashed[2]?.detail).toBe("/u/bin/pi --version failed on far: SyntaxError: Invalid regular expression");
    expect(crashed[2]?.hint).toContain("node there is 20.19.0");
    // pi 0.73.1 runs on Node 20.
    expect(
      farChecks(parseFarReport(report({ ...present, node: "v20.19.0", pi: "0.73.1", ...rest })), remote)[2]?.ok,
    ).toBe(true);
  });

  it("fails a far pi with a key for no model, naming the far agent dir it reads", () => {
    const checks = farChecks(parseFarReport(report({ ...present, ...rest, models: "0 " })), remote);
    expect(checks[4]).toMatchObject({
      name: "far models",
      ok: false,
      detail: "the far pi has a key for no model (it reads /h/.pi/agent on far)",
    });
    expect(checks[4]?.hint).toContain("does not travel");
  });

  it("notes a package version other than this machine's", () => {
    const checks = farChecks(parseFarReport(report({ ...present, pi: "0.73.1", ...rest, package: "0.0.1" })), remote);
    expect(checks[3]?.ok).toBe(true);
    expect(checks[3]?.notes?.[0]).toContain(packageVersion());
  });
});

describe("failureDetail", () => {
  const base: ArgvRun = { code: 255, stdout: "", stderr: "", timedOut: false, durationMs: 1 };
  it.each([
    ["the first stderr line", { stderr: "ssh: connect to host far port 22: Connection refused\n" }, /^ssh: connect/],
    ["the exit code without stderr", {}, /^exit 255$/],
    ["a time-out", { timedOut: true, code: null }, /gave no answer within 3 s/],
    ["a program that could not start", { error: "spawn ssh ENOENT" }, /could not start: spawn ssh ENOENT/],
  ])("%s", (_name, extra, expected) => {
    expect(failureDetail({ ...base, ...extra }, "ssh", 3_000)).toMatch(expected);
  });

  it("keeps at most 1 KB of stderr after its first line", () => {
    const detail = failureDetail({ ...base, stderr: `first\n${"x".repeat(5000)}` }, "srun", 1000);
    expect(detail.startsWith("first\n…")).toBe(true);
    expect(detail.length).toBeLessThanOrEqual("first\n".length + 1024);
  });
});

describe("checkSshRunner with an injected runner", () => {
  it("stops at a refused connection with ssh's message and does not run the far script", async () => {
    const calls: string[][] = [];
    const checks = await checkSshRunner(
      { kind: "ssh", host: "me@far", capacity: 1 },
      {
        timeoutMs: 1000,
        run: async (argv) => {
          calls.push([...argv]);
          return { ...ok(""), code: 255, stderr: "me@far: Permission denied (publickey).\n" };
        },
      },
    );
    expect(calls).toHaveLength(1);
    expect(calls[0]?.slice(-2)).toEqual(["--", "true"]);
    expect(checks).toMatchObject([{ name: "ssh me@far", ok: false, detail: "me@far: Permission denied (publickey)." }]);
  });

  it("runs the far script through sh -c, quoted once for the far shell", async () => {
    const calls: string[][] = [];
    const answer = report({ git: "g", node: "v22.19.0", pipath: "/p", pi: "1.6.0", package: packageVersion() });
    const more = report({ models: "1 a/b", agentdir: "/a", host: "far" });
    const checks = await checkSshRunner(
      { kind: "ssh", host: "far", capacity: 1 },
      {
        timeoutMs: 1000,
        run: async (argv) => {
          calls.push([...argv]);
          return ok(calls.length === 1 ? "" : `${answer}\n${more}`);
        },
      },
    );
    expect(checks.every((c) => c.ok)).toBe(true);
    const script = calls[1]?.at(-1) ?? "";
    expect(calls[1]?.slice(-4, -1)).toEqual(["--", "sh", "-c"]);
    expect(script.startsWith("'") && script.endsWith("'")).toBe(true);
  });
});
