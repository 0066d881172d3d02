import { chmod, mkdir, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { machineNode, nodeVersion, resolveLine } from "../../scripts/pi-lines.mjs";
import { REPO_ROOT } from "../support/pi-home.js";
import { killAll } from "../support/processes.js";
import { cleanupWrapperCases, defaultMeta, fakePiRecord, wrapperCase } from "../support/wrapper-harness.js";

afterEach(async () => {
  await killAll();
  await cleanupWrapperCases();
});

const ECHO = { steps: [{ echoTask: true }] };

// meta.json errors (each a single stderr line, exit 2, no child) are catalogued in
// test/reliability/bad-input.test.ts.

describe("subagent-wrapper: the task reaches the child verbatim", () => {
  it.each([
    ["a leading dash", "-rf --help is not an option"],
    ["a leading @", "@README.md is not a file to inline"],
    ["a leading slash", "/compact is not a command"],
    ["surrounding white space and several lines", "  \n\tline one\n  line two  \n\n"],
    ["quotes and shell characters", `"double" 'single' \`tick\` $HOME $(rm -rf /) ; | & \\ `],
    ["non-ASCII", "Ünïcödé — 日本語 🙂 \u2028 \u2029"],
    ["a 1 MB task", `-${"abcdefghij\n".repeat(95_326)}end`],
  ])("%s", async (_name, task) => {
    const run = await (await wrapperCase({ meta: defaultMeta({ task }), scenario: ECHO })).run();
    expect(run.code).toBe(0);
    const record = await fakePiRecord(run.dir);
    expect(record.task).toBe(task);
    expect(record.stdin).toBe("");
    expect(record.argv.join(" ")).not.toContain(task.trim().slice(0, 20) || "\u0000");
  });

  it("the child's stdin is closed, so a pi that reads it to EOF gets going", async () => {
    // The fake pi reads stdin to EOF before anything else: an open pipe would hang it until the harness's 25 s limit.
    const run = await (await wrapperCase({ scenario: ECHO })).run();
    expect(run.timedOut).toBe(false);
    expect(run.result?.status).toBe("completed");
  });

  it("the task file is removed after the run", async () => {
    const run = await (await wrapperCase({ scenario: ECHO })).run();
    const record = await fakePiRecord(run.dir);
    await expect(readFile(record.env.PI_SUBAGENT_TASK_FILE!, "utf8")).rejects.toThrow();
  });
});

describe("subagent-wrapper: flags and environment from meta", () => {
  it("unknown fields are ignored", async () => {
    const run = await (
      await wrapperCase({ meta: defaultMeta({ someday: { x: 1 }, mode: "followup" }), scenario: ECHO })
    ).run();
    expect(run.code).toBe(0);
  });

  it("passes model, thinking, tools, extensions, system prompt, session, cwd and env to pi", async () => {
    const c = await wrapperCase({
      scenario: ECHO,
      meta: defaultMeta({
        cwd: "work",
        requestedModel: "fake/fast",
        resolvedModel: "fake/deep",
        thinking: "high",
        tools: ["read", "grep", "find", "ls"],
        extensions: ["./ext/tool.ts", "npm:pi-some-package"],
        noExtensions: true,
        noContextFiles: true,
        systemPromptPath: "prompt.md",
        sessionPath: "sessions/child.jsonl",
        env: { SUBAGENT_FLAVOUR: "mint", PI_SUBAGENT_TEST: "yes" },
      }),
    });
    await mkdir(path.join(c.dir, "work"));
    await mkdir(path.join(c.dir, "ext"));
    await writeFile(path.join(c.dir, "ext/tool.ts"), "export default () => {};\n");
    await writeFile(path.join(c.dir, "prompt.md"), "be brief\n");
    const run = await c.run({ env: { FAKE_PI_RECORD_ENV: "SUBAGENT_FLAVOUR" } });
    expect(run.code).toBe(0);
    const { argv, cwd, env } = await fakePiRecord(c.dir);
    const flagValue = (flag: string) => argv[argv.indexOf(flag) + 1];
    expect(cwd).toBe(path.join(c.dir, "work"));
    expect(flagValue("--mode")).toBe("json");
    expect(flagValue("--model")).toBe("fake/deep");
    expect(flagValue("--thinking")).toBe("high");
    expect(flagValue("--tools")).toBe("read,grep,find,ls");
    expect(argv).toContain("--no-extensions");
    expect(argv).toContain("--no-context-files");
    expect(argv).toContain("--no-prompt-templates");
    expect(argv).toContain(path.join(c.dir, "ext/tool.ts"));
    expect(argv).toContain("npm:pi-some-package");
    expect(flagValue("--append-system-prompt")).toBe(path.join(c.dir, "prompt.md"));
    expect(flagValue("--session")).toBe(path.join(c.dir, "sessions/child.jsonl"));
    expect(env).toMatchObject({ SUBAGENT_FLAVOUR: "mint", PI_SUBAGENT_TEST: "yes" });
    // The run's token, which every process below pi inherits (the orphan guard finds them by it).
    expect(env.PI_SUBAGENT_RUN_TOKEN).toMatch(/^[0-9a-f]{32}$/);
    expect(run.result).toMatchObject({ requestedModel: "fake/fast", resolvedModel: "fake/deep" });
    // run_start shows the child's argv without the task text
    expect(run.events[0]).toMatchObject({ type: "run_start", runId: "run-1", argv });
  });

  it("cwdReadyPath reaches the child as PI_SUBAGENT_CWD_READY, resolved against meta's folder; without it the variable is unset", async () => {
    const c = await wrapperCase({ scenario: ECHO, meta: defaultMeta({ cwdReadyPath: "wt.ready" }) });
    const run = await c.run();
    expect(run.code).toBe(0);
    expect((await fakePiRecord(c.dir)).env.PI_SUBAGENT_CWD_READY).toBe(path.join(c.dir, "wt.ready"));
    const plain = await (await wrapperCase({ scenario: ECHO })).run();
    expect((await fakePiRecord(plain.dir)).env.PI_SUBAGENT_CWD_READY).toBeUndefined();
  });

  it("an empty tools list means no tools; no sessionPath means no saved session", async () => {
    const run = await (await wrapperCase({ scenario: ECHO, meta: defaultMeta({ tools: [] }) })).run();
    const { argv } = await fakePiRecord(run.dir);
    expect(argv).toContain("--no-tools");
    expect(argv).toContain("--no-session");
  });

  it("PI_SUBAGENTS_PI_BIN picks the binary; a missing one fails naming it, with result.json written", async () => {
    const c = await wrapperCase({ scenario: ECHO });
    const run = await c.run({ env: { PI_SUBAGENTS_PI_BIN: "/opt/nowhere/pi" } });
    expect(run.code).toBe(1);
    expect(run.result).toMatchObject({ status: "failed", exitCode: 1, childExitCode: null, turns: 0 });
    expect(run.result!.errorMessage).toContain("/opt/nowhere/pi");
    expect(run.stderr).toContain("/opt/nowhere/pi");
    expect(run.events.map((e) => e.type)).toEqual(["run_end"]);
  });

  it("pi missing from PATH fails naming the binary", async () => {
    const c = await wrapperCase({ scenario: ECHO });
    const run = await c.run({ env: { PATH: "/nonexistent-bin-dir" } });
    expect(run.result?.status).toBe("failed");
    expect(run.result!.errorMessage).toBe(
      'pi executable "pi" was not found on PATH (install @earendil-works/pi-coding-agent or set PI_SUBAGENTS_PI_BIN)',
    );
  });

  it("`run` is the default command, and a meta file named like a subcommand runs with `run`", async () => {
    const c = await wrapperCase({ scenario: ECHO });
    await writeFile(path.join(c.dir, "run"), JSON.stringify(c.meta));
    const run = await c.run({ args: ["run", "run"] });
    expect(run.code).toBe(0);
    expect(run.result?.status).toBe("completed");
  });
});

describe("subagent-wrapper: artifacts", () => {
  it("an events path that cannot be written is reported, and the outcome still reaches result.json", async () => {
    const c = await wrapperCase({ scenario: ECHO, meta: defaultMeta({ eventsPath: "meta.json/events.jsonl" }) });
    const run = await c.run();
    expect(run.code).toBe(0);
    expect(run.result).toMatchObject({ status: "completed", finalText: "inspect auth" });
    expect(run.result!.errorMessage).toMatch(/events .*meta\.json\/events\.jsonl could not be written/);
    expect(run.stderr).toMatch(/^subagent-wrapper: warning: events .* could not be written/m);
  });

  it("result.json is written once, atomically: no temp files are left beside it", async () => {
    const run = await (await wrapperCase({ scenario: "tool-then-answer" })).run();
    expect((await readdir(path.join(run.dir, "out"))).sort()).toEqual([
      "events.jsonl",
      "result.json",
      "stderr.log",
      "stdout.log",
      "transcript.md",
    ]);
  });

  it("artifacts without stdout/stderr/transcript paths are simply not written", async () => {
    const meta = { runId: "r", task: "t", cwd: ".", resultPath: "res.json", eventsPath: "ev.jsonl" };
    const run = await (await wrapperCase({ meta, scenario: ECHO })).run();
    expect(run.code).toBe(0);
    expect((await readdir(run.dir)).sort()).toEqual([
      "ev.jsonl",
      "fake-pi-record.json",
      "meta.json",
      "res.json",
      "tmp",
    ]);
    expect(await readdir(path.join(run.dir, "tmp"))).toEqual([]);
  });
});

describe("subagent-wrapper: pi started on a Node too old for it", () => {
  /** Node's report of pi 1.x's first line failing on Node 20, as it ends a crashed start. */
  const CRASH = `file:///p/dist/bundle/cli.js:2
import { createRequire, enableCompileCache } from "node:module";
                        ^^^^^^^^^^^^^^^^^^
SyntaxError: The requested module 'node:module' does not provide an export named 'enableCompileCache'
    at ModuleJob._instantiate (node:internal/modules/esm/module_job:213:21)

Node.js v20.20.2
`;

  it("result.json and the one stderr line give doctor's hint, not Node's stack", async () => {
    const c = await wrapperCase({ scenario: ECHO });
    // A pi package that declares the Node it needs, whose start crashes as pi 1.x's does on Node 20.
    const pkg = path.join(c.dir, "pi-pkg");
    await mkdir(pkg);
    await writeFile(
      path.join(pkg, "package.json"),
      JSON.stringify({
        name: "@earendil-works/pi-coding-agent",
        version: "1.6.0",
        bin: { pi: "cli.sh" },
        engines: { node: ">=22.19.0" },
      }),
    );
    await writeFile(path.join(pkg, "cli.sh"), `#!/bin/sh\ncat >&2 <<'EOF'\n${CRASH}EOF\nexit 1\n`);
    await chmod(path.join(pkg, "cli.sh"), 0o755);
    const run = await c.run({ env: { PI_SUBAGENTS_PI_BIN: path.join(pkg, "cli.sh") } });
    expect(run.code).toBe(1);
    const hint =
      /^pi could not start: pi 1\.6\.0 needs Node ≥ 22\.19; the node on PATH \(\/.+\/node, 20\.20\.2\) starts it: put Node 22 first on PATH$/;
    expect(run.result).toMatchObject({ status: "failed", errorMessage: expect.stringMatching(hint) });
    expect(run.stderr).toBe(`subagent-wrapper: failed: ${run.result!.errorMessage}\n`);
    // pi's own report stays in its log.
    expect(await run.read("out/stderr.log")).toContain("SyntaxError: The requested module");
  });

  const machine = machineNode();
  const machineVersion = nodeVersion(machine).replace(/^v/, "");
  it.skipIf(Number(machineVersion.split(".")[0]) >= 22)(
    "the real pi 1.x with the machine's Node 20 first on PATH",
    async () => {
      const c = await wrapperCase({ scenario: ECHO });
      const bin = path.join(c.dir, "node20-bin");
      await mkdir(bin);
      await symlink(machine, path.join(bin, "node"));
      const current = resolveLine(REPO_ROOT, "current");
      const run = await c.run({
        env: { PI_SUBAGENTS_PI_BIN: current.piCli, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ""}` },
      });
      expect(run.code).toBe(1);
      expect(run.result?.errorMessage).toBe(
        `pi could not start: pi ${current.piVersion} needs Node ≥ 22.19; the node on PATH (${path.join(bin, "node")}, ${machineVersion}) starts it: put Node 22 first on PATH`,
      );
      expect(run.stderr).toBe(`subagent-wrapper: failed: ${run.result!.errorMessage}\n`);
    },
  );
});
