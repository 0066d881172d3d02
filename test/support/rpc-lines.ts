/** The JSON lines of a `pi --mode rpc` process's stdout, and a way to wait for one that matches. */
import type { ChildProcessWithoutNullStreams } from "node:child_process";

// biome-ignore lint/suspicious/noExplicitAny: RPC lines are untyped JSON read by tests
export type RpcLine = Record<string, any>;

export function rpcLines(child: ChildProcessWithoutNullStreams) {
  const lines: RpcLine[] = [];
  const waiters = new Set<() => void>();
  let buffer = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    buffer += chunk;
    for (let newline = buffer.indexOf("\n"); newline !== -1; newline = buffer.indexOf("\n")) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      try {
        lines.push(JSON.parse(line) as RpcLine);
      } catch {
        continue;
      }
      for (const wake of [...waiters]) wake();
    }
  });
  const waitFor = (match: (line: RpcLine) => boolean, timeoutMs = 30_000) =>
    new Promise<RpcLine>((resolve, reject) => {
      const check = () => {
        const found = lines.find(match);
        if (!found) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve(found);
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`no rpc line matched within ${timeoutMs} ms; saw ${lines.map((l) => l.type).join(", ")}`));
      }, timeoutMs);
      waiters.add(check);
      check();
    });
  return { lines, waitFor };
}
