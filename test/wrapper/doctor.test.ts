/** `subagent-wrapper doctor` against the fake pi (both pi lines' --version habits), this line's real pi, a missing pi and a pi that never answers. */
import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { machineNode, nodeVersion, resolveLine } from "../../scripts/pi-lines.mjs";
import {
  fakeModels,
  lineEnvPath,
  ONE_LINE_IS_ENOUGH,
  PI_LINE,
  PI_LINE_SETTLES,
  REAL_PI,
  REPO_ROOT,
} from "../support/pi-home.js";
import { killAll, pidAlive, runProcess } from "../support/processes.js";
import { FAKE_PI_DIR, WRAPPER_BIN } from "../support/wrapper-harness.js";

/** pi's own network habits (version check, telemetry) stay off, as in the other real-pi tests. */
const QUIET_PI = { PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0" };

let home: string;
beforeEach(async () => {
  home = await mkdtemp(path.join(os.tmpdir(), "psa-doctor-"));
  await mkdir(path.join(home, "agent"));
  await writeFile(path.join(home, "agent", "settings.json"), "{}");
});
afterEach(async () => {
  await killAll();
  await rm(home, { recursive: true, force: true });
});

function doctor(env: NodeJS.ProcessEnv, args: string[] = [], timeoutMs = 20_000) {
  const clean = { ...process.env };
  delete clean.PI_SUBAGENTS_PI_BIN;
  return runProcess(process.execPath, [WRAPPER_BIN, "doctor", ...args], {
    timeoutMs,
    env: {
      ...clean,
      PATH: `${FAKE_PI_DIR}${path.delimiter}${process.env.PATH ?? ""}`,
      PI_CODING_AGENT_DIR: path.join(home, "agent"),
      PI_SUBAGENTS_DIR: path.join(home, "runs"),
      ...env,
    },
  });
}

describe("subagent-wrapper doctor", () => {
  it("every check passes with a working pi, agent dir and run base (exit 0)", async () => {
    const run = await doctor({});
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const lines = run.stdout.split("\n");
    expect(lines[0]).toMatch(/^✓ node +\d+\.\d+\.\d+ \(needs ≥ 20\)$/);
    expect(run.stdout).toMatch(new RegExp(`✓ pi +${path.join(FAKE_PI_DIR, "pi")} \\(from PATH\\)`));
    // Like pi 0.73.1, the fake prints its version on stderr when stdin is not a terminal.
    expect(run.stdout).toMatch(/✓ pi --version +0\.73\.1-fake \(this package is tested with 1\.6\.0 and 0\.73\.1\)\n/);
    expect(run.stdout).toMatch(
      /\n +no agent_settled \(pi before 0\.80\.4\): a run is over at its first terminal message \(version unknown to the wrapper\)\n/,
    );
    expect(run.stdout).toMatch(
      /✓ pi agent dir +.*agent \(from PI_CODING_AGENT_DIR\) is readable\n +holds settings\.json\n/,
    );
    expect(run.stdout).toMatch(
      /✓ run directories +.*runs \(from PI_SUBAGENTS_DIR\) is writable \(it will be created\)/,
    );
    expect(run.stdout).toMatch(/✓ wrapper build +.*task-extension\.js is there/);
    expect(run.stdout.endsWith("\nall checks passed\n")).toBe(true);
  });

  it("names what is wrong and what to do (exit 1): no pi, no agent dir, an unwritable run base", async () => {
    const notAFolder = path.join(home, "file");
    await writeFile(notAFolder, "x");
    const run = await doctor({
      PI_SUBAGENTS_PI_BIN: path.join(home, "missing-pi"),
      PI_CODING_AGENT_DIR: path.join(home, "nowhere"),
      PI_SUBAGENTS_DIR: path.join(notAFolder, "runs"),
    });
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(
      `✗ pi               pi executable ${path.join(home, "missing-pi")} (from PI_SUBAGENTS_PI_BIN) does not exist or is not executable\n`,
    );
    expect(run.stdout).toContain(
      `✗ pi agent dir     ${path.join(home, "nowhere")} (from PI_CODING_AGENT_DIR) does not exist\n`,
    );
    expect(run.stdout).toContain(
      "→ run pi (or pi-subagent-tree) once to set it up (models, login), or set PI_CODING_AGENT_DIR",
    );
    expect(run.stdout).toMatch(
      /✗ run directories {2}.*cannot be written: .* is not a directory\n +→ set PI_SUBAGENTS_DIR to a writable folder/,
    );
    expect(run.stdout).toContain("\n3 checks failed\n");
    expect(run.stdout).not.toContain("pi --version");
  });

  // The pi that pi-subagent-tree runs is pi 1.x on either line: pi 1.x only in npm test (ONE_LINE_IS_ENOUGH).
  it.skipIf(ONE_LINE_IS_ENOUGH)(
    "no pi on PATH (a Quick-start user): it checks the pi that pi-subagent-tree runs, on that pi's Node",
    async () => {
      const run = await doctor({ PATH: "/usr/bin:/bin", HOME: home, ...QUIET_PI }, ["--timeout-ms", "20000"], 90_000);
      const packagePi = path.join(REPO_ROOT, "node_modules", "@earendil-works", "pi-coding-agent");
      expect(run.stdout).toMatch(
        new RegExp(`✓ pi +${packagePi}/\\S+ \\(the pi that pi-subagent-tree runs, on \\S+/node\\)\n`),
      );
      expect(run.stdout).toContain("no pi on PATH: a plain `pi` session's children need one there");
      expect(run.stdout).toMatch(/✓ pi --version +\d+\.\d+\.\d+/);
      expect(run.stdout).toMatch(/✓ pi extension +pi loads/);
    },
  );

  it("a PI_CODING_AGENT_DIR starting with ~/ is read below the home directory, as pi reads it", async () => {
    const run = await doctor({ HOME: home, PI_CODING_AGENT_DIR: "~/agent" });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      new RegExp(
        `✓ pi agent dir +${path.join(home, "agent")} \\(from PI_CODING_AGENT_DIR\\) is readable\n +holds settings\\.json\n`,
      ),
    );
  });

  // A fake pi, the same on either line: pi 1.x only in npm test (ONE_LINE_IS_ENOUGH).
  it.skipIf(ONE_LINE_IS_ENOUGH)(
    "a pi that never answers --version is stopped after --timeout-ms, with nothing left running",
    async () => {
      const pidFile = path.join(home, "hung.pid");
      const hung = path.join(home, "hung-pi");
      await writeFile(
        hung,
        `#!${process.execPath}\nrequire("node:fs").writeFileSync(${JSON.stringify(pidFile)}, String(process.pid));\nsetInterval(() => {}, 1000);\n`,
      );
      await chmod(hung, 0o755);
      const run = await doctor({ PI_SUBAGENTS_PI_BIN: hung }, ["--timeout-ms", "4000", "--json"]);
      expect(run.code).toBe(1);
      const report = JSON.parse(run.stdout) as {
        ok: boolean;
        checks: Array<{ name: string; ok: boolean; detail: string }>;
      };
      expect(report.ok).toBe(false);
      expect(report.checks.find((check) => check.name === "pi --version")).toMatchObject({
        ok: false,
        detail: "no answer within 4000 ms (stopped)",
      });
      const pid = Number(await readFile(pidFile, "utf8"));
      expect(pidAlive(pid)).toBe(false);
    },
  );

  it(`the real pi of this line (${PI_LINE.pkg} ${PI_LINE.piVersion}): ✓ with its version, and whether it emits agent_settled`, async () => {
    // A model pi has a key for, so that pi's own start (the model and extension checks) passes.
    await writeFile(path.join(home, "agent", "models.json"), JSON.stringify(fakeModels("http://127.0.0.1:9")));
    await writeFile(
      path.join(home, "agent", "settings.json"),
      JSON.stringify({ defaultProvider: "fake", defaultModel: "fast" }),
    );
    const run = await doctor(
      { PI_SUBAGENTS_PI_BIN: REAL_PI, PATH: lineEnvPath(), HOME: home, ...QUIET_PI },
      ["--timeout-ms", "20000"],
      90_000,
    );
    expect(run.code, run.stdout).toBe(0);
    // pi itself says it has a key for the default model, and loads this package's extension cleanly.
    expect(run.stdout).toContain("✓ pi model         fake/fast (settings.json), and pi has a key for it\n");
    expect(run.stdout).toContain(`✓ pi extension     pi loads ${REPO_ROOT} without a complaint\n`);
    expect(run.stdout).toContain(`✓ pi --version     ${PI_LINE.piVersion}\n`);
    expect(run.stdout).toContain(
      PI_LINE_SETTLES
        ? "emits agent_settled: a run is over when pi settles (graceMs counts from it)\n"
        : "no agent_settled (pi before 0.80.4): a run is over at its first terminal message\n",
    );
  });

  it("a pi 1.x the wrapper cannot identify (no package.json above it) is told to set PI_SUBAGENTS_PI_VERSION", async () => {
    const run = await doctor({ FAKE_PI_VERSION: "1.6.0" });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("✓ pi --version     1.6.0\n");
    expect(run.stdout).toContain(
      "no pi package.json above this binary: set PI_SUBAGENTS_PI_VERSION=1.6.0 so the wrapper waits for agent_settled\n",
    );
    const told = await doctor({ FAKE_PI_VERSION: "1.6.0", PI_SUBAGENTS_PI_VERSION: "1.6.0" });
    expect(told.stdout).toContain(
      "emits agent_settled: a run is over when pi settles (graceMs counts from it) (version from PI_SUBAGENTS_PI_VERSION)\n",
    );
    expect(told.stdout).not.toContain("no pi package.json");
  });

  it("says whether pi has a key for the default model, and whether it loads the extension cleanly", async () => {
    await writeFile(
      path.join(home, "agent", "settings.json"),
      JSON.stringify({ defaultProvider: "fake", defaultModel: "fast" }),
    );
    const good = await doctor({});
    expect(good.code, good.stdout).toBe(0);
    expect(good.stdout).toContain("✓ pi model         fake/fast (settings.json), and pi has a key for it\n");
    expect(good.stdout).toContain(`✓ pi extension     pi loads ${REPO_ROOT} without a complaint\n`);

    await writeFile(
      path.join(home, "agent", "settings.json"),
      JSON.stringify({ defaultProvider: "anthropic", defaultModel: "claude-sonnet-4-5" }),
    );
    const bad = await doctor({ FAKE_PI_EXTENSION_ERROR: "Cannot find module '../../dist/extension/index.js'" });
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain(
      "✗ pi model         anthropic/claude-sonnet-4-5 (settings.json) is not among the models pi has a key for\n" +
        "                   → run pi and /login, or set the provider's API key variable (pi's docs/providers.md); or pick a model it has a key for with /model in pi\n",
    );
    expect(bad.stdout).toContain(
      `✗ pi extension     Error: Failed to load extension "${REPO_ROOT}": Cannot find module '../../dist/extension/index.js'\n` +
        `                   → pi -ne -e ${REPO_ROOT} shows it in full; "npm run build" in the package rebuilds what pi loads\n`,
    );
    expect(bad.stdout).toContain("\n2 checks failed\n");
  });

  it("no default model: fine while pi has a key for some model; a failure when it has none", async () => {
    const some = await doctor({ FAKE_PI_MODELS: "fake/fast,fake/deep" });
    expect(some.code).toBe(0);
    expect(some.stdout).toContain(
      "✓ pi model         no default in settings.json: pi starts with the first model it has a key for (fake/fast)\n" +
        "                   pi has a key for 2 models; /model in pi sets the default\n",
    );
    const none = await doctor({ FAKE_PI_MODELS: "" });
    expect(none.code).toBe(1);
    expect(none.stdout).toContain(
      "✗ pi model         pi has a key for no model\n                   → run pi and /login, or set the provider's API key variable (pi's docs/providers.md)\n",
    );
  });

  const machine = machineNode();
  const machineMajor = Number(nodeVersion(machine).replace(/^v/, "").split(".")[0]);
  it.skipIf(machineMajor >= 22)(
    "pi 1.x started by a Node 20 on PATH fails --version, and the hint says to put Node 22 first",
    async () => {
      const bin = path.join(home, "node20-bin");
      await mkdir(bin);
      await symlink(machine, path.join(bin, "node"));
      const current = resolveLine(REPO_ROOT, "current");
      const run = await doctor({
        PI_SUBAGENTS_PI_BIN: current.piCli,
        PATH: `${bin}${path.delimiter}${process.env.PATH ?? ""}`,
      });
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(/✗ pi --version +failed: exit 1 — SyntaxError: .*\n/);
      expect(run.stdout).toContain(
        `→ pi ${current.piVersion} needs Node ≥ 22.19; the node on PATH (${path.join(bin, "node")}, ${nodeVersion(machine).replace(/^v/, "")}) starts it: put Node 22 first on PATH`,
      );
    },
  );

  it("a bad --timeout-ms is a usage error (exit 2)", async () => {
    const run = await doctor({}, ["--timeout-ms", "soon"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      "subagent-wrapper: error: option '--timeout-ms <ms>' argument 'soon' is invalid. must be a positive integer\n",
    );
  });
});
