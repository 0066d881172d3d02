// What a process and everything it starts cost, read from /proc while it runs: each process's
// own memory (PSS: shared pages divided among the processes that map them, so pi's code counts
// once across processes; USS: private pages only, what ending the process gives back; VmHWM:
// the kernel's own peak RSS), by role (the root pi, a child's wrapper, a child pi).
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { now } from "./support.mjs";

/** pid → parent pid, for every process /proc lists. */
export function parents() {
  const map = new Map();
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      map.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // gone meanwhile
    }
  }
  return map;
}

/**
 * The processes below `root` (itself included), each with its role: `rootPid` (default `root`)
 * is the root, then a child's wrapper, a child pi, or other.
 */
export function processesBelow(root, rootPid = root) {
  const parentOf = parents();
  const below = (pid) => {
    for (let at = pid; at > 1; at = parentOf.get(at)) if (at === root) return true;
    return false;
  };
  return [...parentOf.keys()].filter(below).flatMap((pid) => {
    if (pid === root && root !== rootPid) return [];
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8");
      const role =
        pid === rootPid
          ? "root"
          : cmd.includes("subagent-wrapper")
            ? "wrapper"
            : cmd.includes("--mode")
              ? "child"
              : "other";
      return [{ pid, role }];
    } catch {
      return [];
    }
  });
}

/** PSS, USS and RSS (bytes) from smaps_rollup; VmHWM from status. */
export function memoryOf(pid) {
  try {
    const rollup = fs.readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
    const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(rollup)?.[1] ?? 0) * 1024;
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
    const hwm = Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) * 1024;
    return { pss: kb("Pss"), uss: kb("Private_Clean") + kb("Private_Dirty"), rss: kb("Rss"), hwm };
  } catch {
    return undefined;
  }
}

/**
 * Runs `cmd` to its end under GNU time, sampling every 20 ms: `{ code, stderr, wallMs, cpuMs,
 * pss, rss, roles }`. `cpuMs`: user + sys of the process and every process it started and
 * reaped; `pss` / `rss`: the peak over time of the sum over the tree; `roles`: per role, the
 * peak of one process's PSS, USS and VmHWM. Killed after `timeoutMs`.
 */
export function sampledTree(cmd, args, { cwd, env, timeoutMs = 180_000 }) {
  const timeFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "psa-bench-time-")), "time");
  return new Promise((resolve, reject) => {
    const started = now();
    const child = spawn("/usr/bin/time", ["-o", timeFile, "-f", "%U %S", cmd, ...args], {
      cwd,
      env,
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const peak = { pss: 0, rss: 0, roles: {} };
    let rootPid;
    const sampler = setInterval(() => {
      let pss = 0;
      let rss = 0;
      // The process under GNU time is the root pi; time itself is left out.
      rootPid ??= [...parents()].find(([, parent]) => parent === child.pid)?.[0];
      if (rootPid === undefined) return;
      for (const { pid, role } of processesBelow(child.pid, rootPid)) {
        const memory = memoryOf(pid);
        if (!memory) continue;
        pss += memory.pss;
        rss += memory.rss;
        peak.roles[role] ??= { pss: 0, uss: 0, hwm: 0 };
        for (const key of ["pss", "uss", "hwm"]) peak.roles[role][key] = Math.max(peak.roles[role][key], memory[key]);
      }
      peak.pss = Math.max(peak.pss, pss);
      peak.rss = Math.max(peak.rss, rss);
    }, 20);
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", reject);
    child.on("exit", (code) => {
      const wallMs = now() - started;
      clearInterval(sampler);
      clearTimeout(timer);
      let cpuMs = Number.NaN;
      try {
        const [user, sys] = fs.readFileSync(timeFile, "utf8").trim().split("\n").at(-1).split(" ").map(Number);
        cpuMs = (user + sys) * 1000;
      } catch {
        // time could not say
      }
      fs.rmSync(path.dirname(timeFile), { recursive: true, force: true });
      resolve({ code, stderr, wallMs, cpuMs, ...peak });
    });
  });
}
