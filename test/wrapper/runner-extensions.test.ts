/**
 * A child on another machine loads the extensions installed there: the far side's `serve` asks
 * the pi package its pi runs from (pi's own DefaultPackageManager) what that host's user has
 * installed, and adds them to pi's `-e` after the task extension; the child keeps `-ne`, so a
 * project's own extensions (a copied workspace no one there chose to trust) stay out. Here a
 * `command` runner runs `subagent-wrapper serve` on this machine against the fake pi, found
 * through a pi package folder whose code is this line's pi.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { PI_LINE } from "../support/pi-home.js";
import {
  cleanupWrapperCases,
  defaultMeta,
  FAKE_PI_DIR,
  fakePiRecord,
  HERE_RUNNER,
  wrapperCase,
} from "../support/wrapper-harness.js";

afterEach(cleanupWrapperCases);

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, encoding: "utf8" }).trim();

/** The folder holding this line's pi package. */
function linePackageDir(): string {
  for (let dir = path.dirname(PI_LINE.piCli); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, "package.json"))) return dir;
  }
  throw new Error(`no package.json above ${PI_LINE.piCli}`);
}

/** A pi package folder as npm installs one, whose `bin/pi` is the fake pi and whose code is this line's pi. */
function farPiPackage(root: string): string {
  const dir = path.join(root, "far-pi", "node_modules", "@mariozechner", "pi-coding-agent");
  fs.mkdirSync(path.join(dir, "bin"), { recursive: true });
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "@mariozechner/pi-coding-agent" }));
  fs.symlinkSync(path.join(linePackageDir(), "dist"), path.join(dir, "dist"));
  fs.symlinkSync(path.join(FAKE_PI_DIR, "pi"), path.join(dir, "bin", "pi"));
  return path.join(dir, "bin", "pi");
}

describe("a child on another machine (command runner, far serve, fake pi)", () => {
  it("loads the far host's installed extensions after the task extension, not the project's, keeping -ne", async () => {
    const c = await wrapperCase({
      meta: defaultMeta({
        cwd: "repo",
        noExtensions: true,
        runner: HERE_RUNNER,
      }),
      scenario: {
        steps: [{ agentStart: true }, { assistant: { text: "done", stopReason: "stop" } }, { agentEnd: true }],
      },
    });
    const repo = path.join(c.dir, "repo");
    fs.mkdirSync(path.join(repo, ".pi", "extensions"), { recursive: true });
    fs.writeFileSync(path.join(repo, ".pi", "extensions", "project-gate.ts"), "export default function () {}\n");
    git(repo, "init", "-q", "-b", "main");
    git(repo, "add", "-A");
    git(repo, "commit", "-q", "-m", "initial");
    const agentDir = path.join(c.dir, "far-agent");
    fs.mkdirSync(path.join(agentDir, "extensions"), { recursive: true });
    const marker = path.join(agentDir, "extensions", "marker-gate.ts");
    fs.writeFileSync(marker, "export default function () {}\n");
    const meta = JSON.parse(fs.readFileSync(c.metaPath, "utf8"));
    meta.runner.pi = farPiPackage(c.dir);
    fs.writeFileSync(c.metaPath, JSON.stringify(meta));

    const out = await c.run({ env: { PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: "1" } });
    expect(out.code, out.stderr).toBe(0);
    const { argv } = await fakePiRecord(c.dir);
    expect(argv).toContain("--no-extensions");
    const extensions = argv.flatMap((arg, i) => (argv[i - 1] === "--extension" ? [arg] : []));
    expect(extensions).toHaveLength(2);
    expect(extensions[0]).toMatch(/task-extension\.js$/);
    expect(extensions[1]).toBe(marker);
    expect(argv.join(" ")).not.toContain("project-gate");
  });
});
