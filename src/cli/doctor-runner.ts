/**
 * `subagent-wrapper doctor --runner <name>`: whether a runner of the settings can work here,
 * and what is missing. For ssh, slurm and command: the connection or scheduler, then each
 * piece a child needs on the far side (doctor-runner-remote.ts); for `sandbox`: bwrap can make
 * its namespaces here (user namespaces allowed), and git is there for the workspace. When all
 * of that holds, the far side answers the protocol's hello through the whole argv (`<prefix>
 * <remote_command…> serve`: this package is there, speaking this protocol version).
 */
import { spawn, spawnSync } from "node:child_process";
import type { ResolvedRunner } from "../contracts/runners.js";
import { LOCAL_RUNNER, unknownRunnerMessage } from "../contracts/runners.js";
import { encodeFrame, parseServerFrame, SERVE_PROTOCOL_VERSION } from "../contracts/serve-protocol.js";
import { readSubagentSettings } from "../contracts/settings-file.js";
import { findOnPath } from "../wrapper/child.js";
import { runnerOperationsArgv } from "../wrapper/remote/index.js";
import { type DoctorCheck, formatDoctorReport } from "./doctor-format.js";
import { checkRemoteRunner } from "./doctor-runner-remote.js";

const HELLO_TIMEOUT_MS = 20_000;

/** Sends hello through `argv` and waits for the far side's answer. */
function helloCheck(argv: string[]): Promise<DoctorCheck> {
  const name = "the far side answers (subagent-wrapper serve)";
  return new Promise((resolve) => {
    const [bin, ...args] = argv;
    const child = spawn(bin!, args, { stdio: ["pipe", "pipe", "pipe"], detached: true });
    let out = "";
    let err = "";
    let settled = false;
    const finish = (check: DoctorCheck) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.stdin.end();
      setTimeout(() => {
        try {
          if (child.pid) process.kill(-child.pid, "SIGKILL");
        } catch {
          // gone
        }
      }, 2000).unref();
      resolve(check);
    };
    const timer = setTimeout(
      () =>
        finish({ name, ok: false, detail: `no answer within ${HELLO_TIMEOUT_MS} ms`, hint: err.trim().slice(-300) }),
      HELLO_TIMEOUT_MS,
    );
    child.once("error", (error) => finish({ name, ok: false, detail: error.message }));
    child.stdin.on("error", () => undefined);
    child.stderr.on("data", (chunk: Buffer) => {
      err += chunk.toString("utf8");
    });
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
      const line = out.split("\n")[0];
      if (!out.includes("\n") || line === undefined) return;
      const frame = parseServerFrame(line);
      if (typeof frame !== "string" && frame.t === "hello") {
        finish({ name, ok: true, detail: `${frame.server}, protocol ${frame.version}` });
      } else {
        const said = typeof frame === "string" ? frame : frame.t === "error" ? frame.message : frame.t;
        finish({ name, ok: false, detail: said });
      }
    });
    child.once("close", (code) =>
      finish({
        name,
        ok: false,
        detail: `the prefix ended (exit ${code ?? "signal"}) without answering`,
        hint: err.trim().split("\n").slice(0, 3).join(" / ").slice(0, 400),
      }),
    );
    child.stdin.write(encodeFrame({ t: "hello", version: SERVE_PROTOCOL_VERSION }));
  });
}

function sandboxChecks(): DoctorCheck[] {
  const checks: DoctorCheck[] = [];
  const bwrap = findOnPath("bwrap", process.env);
  checks.push(
    bwrap
      ? { name: "bwrap", ok: true, detail: bwrap }
      : {
          name: "bwrap",
          ok: false,
          detail: "not on PATH",
          hint: "install bubblewrap (Debian: apt-get install bubblewrap)",
        },
  );
  if (bwrap) {
    const trial = spawnSync(
      bwrap,
      ["--ro-bind", "/", "/", "--unshare-pid", "--dev", "/dev", "--proc", "/proc", "true"],
      {
        encoding: "utf8",
        timeout: 10_000,
      },
    );
    checks.push(
      trial.status === 0
        ? { name: "user namespaces", ok: true, detail: "bwrap made a PID namespace" }
        : {
            name: "user namespaces",
            ok: false,
            detail: (trial.stderr || trial.error?.message || "bwrap failed").trim().split("\n")[0]!,
            hint: "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0) or make bwrap setuid",
          },
    );
  }
  const git = findOnPath("git", process.env);
  checks.push(git ? { name: "git", ok: true, detail: git } : { name: "git", ok: false, detail: "not on PATH" });
  return checks;
}

/**
 * The checks of one runner; exit 0 when all pass, 1 when one fails, 2 for a runner the
 * settings do not name or cannot use (why: its invalid fields, or a project's settings set it).
 * Only that runner is spoken of: another runner's settings lines are not this one's problem.
 */
export async function runnerDoctor(name: string, json = false, timeoutMs = HELLO_TIMEOUT_MS): Promise<number> {
  const { settings } = readSubagentSettings({ cwd: process.cwd() });
  const runners = settings.runners ?? {};
  if (name === LOCAL_RUNNER) {
    process.stdout.write("runner local: runs here (subagent-wrapper doctor checks this machine)\n");
    return 0;
  }
  const definition = runners[name];
  if (!definition) {
    process.stderr.write(`subagent-wrapper: ${unknownRunnerMessage(name, runners, settings.unusableRunners)}\n`);
    return 2;
  }
  const runner = { name, ...definition } as ResolvedRunner;
  const argv = runnerOperationsArgv(runner, process.cwd(), process.env);
  const checks: DoctorCheck[] = [];
  if (runner.kind === "sandbox") checks.push(...sandboxChecks());
  // Everything a child needs on the far side, named where it is missing, before the hello through serve.
  else checks.push(...(await checkRemoteRunner(runner, { timeoutMs: Math.max(timeoutMs, HELLO_TIMEOUT_MS) })));
  if (checks.every((check) => check.ok)) checks.push(await helloCheck(argv));
  const ok = checks.every((check) => check.ok);
  process.stdout.write(
    json
      ? `${JSON.stringify({ runner: name, kind: runner.kind, ok, checks }, null, 2)}\n`
      : `runner ${name} (${runner.kind}):\n${formatDoctorReport(checks)}`,
  );
  return ok ? 0 : 1;
}
