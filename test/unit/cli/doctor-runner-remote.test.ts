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
    const out = execFileSync("/bin/sh", ["-c", script], { env: { PATH: `${dir}:/usr/bin:/bin` }, encoding: "utf8" });
    const found = parseFarReport(`motd banner\n${out}`);
    expect(Object.fromEntries(found)).toEqual({
      git: "git version 2.39.5",
      node: "v22.1.0",
      pi: "",
      package: "sw --version",
      host: os.hostname(),
    });
  });

  it("reports the package missing when the remote command's program is not there", () => {
    const script = farCheckScript(["no-such-subagent-wrapper"]);
    const out = execFileSync("/bin/sh", ["-c", script], { env: { PATH: "/usr/bin:/bin" }, encoding: "utf8" });
    expect(parseFarReport(out).get("package")).toBe("");
  });
});

describe("farChecks", () => {
  const remote = ["subagent-wrapper"];
  it("passes when git, Node ≥ 20, pi and the package are there", () => {
    const checks = farChecks(
      parseFarReport(
        report({ git: "git version 2.39.5", node: "v20.1.0", pi: "1.6.0", package: packageVersion(), host: "far" }),
      ),
      remote,
    );
    expect(checks.map((c) => [c.name, c.ok])).toEqual([
      ["far git", true],
      ["far node", true],
      ["far pi", true],
      ["far package", true],
    ]);
    expect(checks[3]?.detail).toBe(`subagent-wrapper --version: ${packageVersion()} on far`);
    expect(checks[3]?.notes).toBeUndefined();
  });

  it("names each missing one with what to do, and an old Node as too old", () => {
    const checks = farChecks(
      parseFarReport(report({ git: "", node: "v18.19.0", pi: "", package: "", host: "far" })),
      remote,
    );
    expect(checks.map((c) => [c.name, c.ok, c.detail])).toEqual([
      ["far git", false, "missing on far"],
      ["far node", false, "v18.19.0 on far is too old"],
      ["far pi", false, "missing on far"],
      ["far package", false, "missing on far"],
    ]);
    expect(checks.every((c) => c.hint !== undefined)).toBe(true);
  });

  it("notes a package version other than this machine's", () => {
    const checks = farChecks(
      parseFarReport(report({ git: "g", node: "v22.0.0", pi: "0.73.1", package: "0.0.1", host: "far" })),
      remote,
    );
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
    const answer = report({ git: "g", node: "v22.0.0", pi: "1.6.0", package: packageVersion(), host: "far" });
    const checks = await checkSshRunner(
      { kind: "ssh", host: "far", capacity: 1 },
      {
        timeoutMs: 1000,
        run: async (argv) => {
          calls.push([...argv]);
          return ok(calls.length === 1 ? "" : answer);
        },
      },
    );
    expect(checks.every((c) => c.ok)).toBe(true);
    const script = calls[1]?.at(-1) ?? "";
    expect(calls[1]?.slice(-4, -1)).toEqual(["--", "sh", "-c"]);
    expect(script.startsWith("'") && script.endsWith("'")).toBe(true);
  });
});
