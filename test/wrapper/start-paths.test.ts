import { cp, mkdtemp, rm, utimes, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/pi-home.js";
import { killAll, runProcess } from "../support/processes.js";
import { cleanupWrapperCases, wrapperCase } from "../support/wrapper-harness.js";

afterEach(async () => {
  await killAll();
  await cleanupWrapperCases();
});

describe("subagent-wrapper: the plain path and the full CLI agree", () => {
  it("`meta.json`, `run meta.json` and `run -- meta.json` (through commander) record the same outcome", async () => {
    const outcomes = [];
    for (const args of [(m: string) => [m], (m: string) => ["run", m], (m: string) => ["run", "--", m]]) {
      const c = await wrapperCase({ scenario: "tool-then-answer" });
      const run = await c.run({ args: args(c.metaPath) });
      outcomes.push({
        code: run.code,
        status: run.result?.status,
        finalText: run.result?.finalText,
        types: run.events.map((e) => e.type),
      });
    }
    expect(outcomes[0]).toMatchObject({ code: 0, status: "completed", finalText: "final answer" });
    expect(outcomes[1]).toEqual(outcomes[0]);
    expect(outcomes[2]).toEqual(outcomes[0]);
  });

  it("a bad meta.json gets the same one line and exit 2 on both paths", async () => {
    const lines = [];
    for (const args of [(m: string) => [m], (m: string) => ["run", "--", m]]) {
      const c = await wrapperCase({ metaText: "{ not json" });
      const run = await c.run({ args: args(c.metaPath) });
      expect(run.code).toBe(2);
      lines.push(run.stderr.replace(c.dir, "<dir>"));
    }
    expect(lines[0]).toMatch(/^subagent-wrapper: meta file <dir>\/meta.json is not valid JSON: .+\n$/);
    expect(lines[1]).toBe(lines[0]);
  });
});

describe("bin/subagent-wrapper: the one-file bundle of the run path", () => {
  const copies: string[] = [];
  afterEach(async () => {
    await Promise.all(copies.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  });

  /** bin/ and dist/ copied to a temp package, with a stand-in bundle that says it ran. */
  async function packageWithStandInBundle(): Promise<{
    dir: string;
    bundle: string;
    run: (...args: string[]) => ReturnType<typeof runProcess>;
  }> {
    const dir = await mkdtemp(path.join(os.tmpdir(), "psa-bin-"));
    copies.push(dir);
    await cp(path.join(REPO_ROOT, "bin"), path.join(dir, "bin"), { recursive: true });
    await cp(path.join(REPO_ROOT, "dist"), path.join(dir, "dist"), { recursive: true });
    await writeFile(path.join(dir, "package.json"), JSON.stringify({ type: "module" }));
    const bundle = path.join(dir, "dist/cli/run-command.bundle.cjs");
    await writeFile(
      bundle,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the stand-in bundle's own template literal
      "exports.runMetaFile = async (meta) => { process.stdout.write(`stand-in bundle ran ${meta}\\n`); return 0; };\n",
    );
    const run = (...args: string[]) =>
      runProcess(process.execPath, [path.join(dir, "bin/subagent-wrapper"), ...args], { timeoutMs: 10_000 });
    return { dir, bundle, run };
  }

  it("a plain `[run] <meta.json>` runs the bundle when it is newer than the compiled modules", async () => {
    const pkg = await packageWithStandInBundle();
    const later = new Date(Date.now() + 60_000);
    await utimes(pkg.bundle, later, later);
    for (const args of [["m.json"], ["run", "m.json"]]) {
      const run = await pkg.run(...args);
      expect(run.code).toBe(0);
      expect(run.stdout).toBe("stand-in bundle ran m.json\n");
    }
  });

  it("a bundle older than the compiled modules (tsc ran, the bundler did not) is never used", async () => {
    const pkg = await packageWithStandInBundle();
    const earlier = new Date(Date.now() - 3_600_000);
    await utimes(pkg.bundle, earlier, earlier);
    const run = await pkg.run(path.join(pkg.dir, "missing.json"));
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toBe(
      `subagent-wrapper: cannot read meta file ${path.join(pkg.dir, "missing.json")}: no such file\n`,
    );
  });

  it("flags, subcommand names and other bare words never take the bundle", async () => {
    const pkg = await packageWithStandInBundle();
    const later = new Date(Date.now() + 60_000);
    await utimes(pkg.bundle, later, later);
    for (const args of [["run", "--", "m.json"], ["inspect"], ["doctor"], ["meta"], ["--help"]]) {
      const run = await pkg.run(...args);
      expect(run.stdout).not.toContain("stand-in bundle");
    }
  });
});
