/**
 * The podman recipe of docs/runners-remote.md as a `command` runner: `podman run -i --rm` of
 * a rootfs folder (node and the libraries `ldd` lists; no image registry), with runc and the
 * ulimits this kind of machine needs (crun fails here). The remote words reach the container
 * as argv, stdin goes in and stdout comes back, and a stopped client leaves no container.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runnerArgv } from "../../src/contracts/runner-prefix.js";
import type { CommandRunner } from "../../src/contracts/runners.js";
import { missingNeeds, skipSaying } from "../support/needs.js";
import { runProcess, spawnProcess } from "../support/processes.js";

// An optional recipe, not a runner of this package: .ci/run does not install podman, so these
// skip (with the reason) wherever it is missing, CI included.
const missing = missingNeeds(["podman", "runc", "ldd"], { root: true });
const skipIfMissing = (ctx: { skip: (note?: string) => void }) => {
  if (missing !== undefined) skipSaying(ctx, `${missing} (optional: the podman recipe)`);
};

/** A rootfs folder holding `node` at /usr/bin/node and the libraries it links. */
function nodeRootfs(root: string): void {
  const node = process.execPath;
  const files = [node, ...execFileSync("ldd", [node], { encoding: "utf8" }).matchAll(/(\/\S+)/g)].map((f) =>
    typeof f === "string" ? f : (f[1] as string),
  );
  for (const file of files) {
    const target = path.join(root, file === node ? "/usr/bin/node" : file);
    mkdirSync(path.dirname(target), { recursive: true });
    copyFileSync(file, target);
  }
  for (const folder of ["tmp", "etc", "work"]) mkdirSync(path.join(root, folder), { recursive: true });
}

describe("the podman recipe (a command runner)", () => {
  let dir = "";
  let definition: CommandRunner | undefined;
  let podman: string[] = [];
  beforeAll(() => {
    if (missing !== undefined) return;
    dir = mkdtempSync(path.join(os.tmpdir(), "pst-podman-"));
    nodeRootfs(path.join(dir, "rootfs"));
    mkdirSync(path.join(dir, "job"));
    podman = ["podman", "--root", path.join(dir, "store"), "--runroot", path.join(dir, "run"), "--runtime", "runc"];
    const limits = ["--ulimit", "nofile=20000:20000", "--ulimit", "nproc=32768:32768"];
    const run = ["run", "--rm", "-i", "--init", "--network", "host", ...limits];
    const mounts = ["-v", `${path.join(dir, "job")}:/work:rw`, "--rootfs", `${path.join(dir, "rootfs")}:O`];
    definition = { kind: "command", command: [...podman, ...run, ...mounts], capacity: 2 };
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("runs the remote words in the container with stdin in and stdout back", async (ctx) => {
    skipIfMissing(ctx);
    const script = "process.stdout.write(process.argv.slice(1).join('|') + '|');process.stdin.pipe(process.stdout)";
    const argv = runnerArgv({
      ...(definition as CommandRunner),
      remote_command: ["/usr/bin/node", "-e", script, "a b"],
    });
    const result = await runProcess(argv[0] as string, argv.slice(1), { input: "streamed", timeoutMs: 60_000 });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe("a b|serve|streamed");
    console.log(`podman recipe: one container run ${result.durationMs} ms`);
  });

  it("leaves no container when the client is stopped mid-run", async (ctx) => {
    skipIfMissing(ctx);
    const argv = runnerArgv({
      ...(definition as CommandRunner),
      remote_command: ["/usr/bin/node", "-e", "console.log('up');setInterval(() => {}, 1000)"],
    });
    const client = spawnProcess(argv[0] as string, argv.slice(1), {
      stdio: ["pipe", "pipe", "pipe"],
      timeoutMs: 60_000,
    });
    await new Promise<void>((resolve) => client.stdout?.once("data", () => resolve()));
    const running = await runProcess(podman[0] as string, [...podman.slice(1), "ps", "-q"]);
    expect(running.stdout.trim()).not.toBe("");
    client.kill("SIGTERM");
    await client.done;
    const deadline = Date.now() + 10_000;
    let left = running.stdout.trim();
    while (left !== "" && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      left = (await runProcess(podman[0] as string, [...podman.slice(1), "ps", "-aq"])).stdout.trim();
    }
    expect(left).toBe("");
  });
});
