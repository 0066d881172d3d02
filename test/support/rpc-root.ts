/**
 * A root pi in RPC mode over the tree harness's home, for the e2e tests that drive a root the
 * way an interactive user would (send prompts, answer UI requests) and end it the way a user,
 * a terminal or a crash would.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { signalGroup } from "../../src/wrapper/child.js";
import { REAL_PI, REPO_ROOT } from "./pi-home.js";
import { rpcLines } from "./rpc-lines.js";
import type { TreeHarness } from "./tree-harness.js";
import type { Json } from "./tree-harness-extra.js";

export interface RpcRoot {
  child: ChildProcessWithoutNullStreams;
  rpc: ReturnType<typeof rpcLines>;
  /** Resolves with the exit code once the root has exited. */
  exited: Promise<number | null>;
  send(command: Json): void;
  stderr(): string;
  /** Ends stdin (pi's RPC loop exits on EOF) and waits for the exit; SIGKILL after 15 s. */
  close(): Promise<number | null>;
  /** Sends `signal` to the root alone (as a terminal's hang-up or a crash would, never its children's groups) and waits for the exit; SIGKILL after 15 s. */
  kill(signal: NodeJS.Signals): Promise<number | null>;
}

export function startRpcRoot(h: TreeHarness, options: { args?: string[]; env?: Record<string, string> } = {}): RpcRoot {
  const child = spawn(REAL_PI, ["--mode", "rpc", "-np", "-e", REPO_ROOT, ...(options.args ?? [])], {
    cwd: h.home.cwd,
    env: { ...h.home.env, PI_SUBAGENTS_DIR: h.baseDir, ...options.env },
    stdio: ["pipe", "pipe", "pipe"],
    detached: true,
  });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const waitExit = async () => {
    const timer = setTimeout(() => signalGroup(child.pid, "SIGKILL"), 15_000);
    const code = await exited;
    clearTimeout(timer);
    return code;
  };
  return {
    child,
    rpc: rpcLines(child),
    exited,
    send: (command) => child.stdin.write(`${JSON.stringify(command)}\n`),
    stderr: () => stderr,
    close: async () => {
      child.stdin.end();
      return waitExit();
    },
    kill: async (signal) => {
      child.kill(signal);
      return waitExit();
    },
  };
}
