/** Which pi the wrapper runs: its version from the package.json above the binary, or PI_SUBAGENTS_PI_VERSION. */
import { chmod, mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  compareVersions,
  identifyPi,
  oldNodeCrash,
  oldNodeHint,
  piNodeFloor,
  piPackageOf,
  versionEmitsSettled,
} from "../../../src/wrapper/pi-version.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "psa-pi-version-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A package folder laid out like npm installs pi: package.json, a nested dist/ with its own bare package.json, the cli, a bin link. */
async function installPi(
  name: string,
  version: string,
  cli = "dist/bundle/cli.js",
): Promise<{ cli: string; link: string }> {
  const root = path.join(dir, "node_modules", ...name.split("/"));
  await mkdir(path.join(root, path.dirname(cli)), { recursive: true });
  await writeFile(path.join(root, "package.json"), JSON.stringify({ name, version, type: "module", bin: { pi: cli } }));
  await writeFile(path.join(root, "dist", "package.json"), JSON.stringify({ type: "module" }));
  const file = path.join(root, cli);
  await writeFile(file, "#!/usr/bin/env node\n");
  await chmod(file, 0o755);
  const bin = path.join(dir, "node_modules", ".bin");
  await mkdir(bin, { recursive: true });
  const link = path.join(bin, "pi");
  await symlink(path.relative(bin, file), link);
  return { cli: file, link };
}

describe("compareVersions and versionEmitsSettled", () => {
  it.each([
    ["0.80.4", "0.80.4", 0],
    ["0.80.3", "0.80.4", -1],
    ["1.6.0", "0.80.4", 1],
    ["v0.81.0", "0.80.4", 1],
    ["0.73.1-fake", "0.73.1", 0],
    ["0.9.10", "0.10.0", -1],
  ])("%s vs %s is %d", (a, b, sign) => expect(compareVersions(a, b)).toBe(sign));

  it("is undefined for something that is not a version", () =>
    expect(compareVersions("latest", "1.0.0")).toBeUndefined());

  it.each([
    ["1.6.0", true],
    ["0.80.4", true],
    ["0.80.3", false],
    ["0.73.1", false],
    [undefined, false],
    ["nightly", false],
  ])("pi %s emits agent_settled: %s", (version, emits) => expect(versionEmitsSettled(version)).toBe(emits));
});

describe("identifyPi", () => {
  it("reads pi 1.x's version through npm's bin link, past dist/'s bare package.json", async () => {
    const { link } = await installPi("@earendil-works/pi-coding-agent", "1.6.0");
    expect(piPackageOf(link)).toEqual({ name: "@earendil-works/pi-coding-agent", version: "1.6.0" });
    expect(identifyPi(link, {})).toEqual({
      version: "1.6.0",
      source: "package",
      packageName: "@earendil-works/pi-coding-agent",
      emitsSettled: true,
    });
  });

  it("reads pi 0.73.1's version: it does not emit agent_settled", async () => {
    const { cli } = await installPi("@mariozechner/pi-coding-agent", "0.73.1", "dist/cli.js");
    expect(identifyPi(cli, {})).toMatchObject({ version: "0.73.1", source: "package", emitsSettled: false });
  });

  it("a binary whose nearest named package is not pi is unknown, and counts as not emitting agent_settled", async () => {
    await writeFile(
      path.join(dir, "package.json"),
      JSON.stringify({ name: "something-else", version: "9.9.9", bin: { tool: "pi" } }),
    );
    const bin = path.join(dir, "pi");
    await writeFile(bin, "#!/bin/sh\n");
    expect(piPackageOf(bin)).toBeUndefined();
    expect(identifyPi(bin, {})).toEqual({ version: undefined, source: undefined, emitsSettled: false });
    expect(identifyPi(path.join(dir, "missing"), {})).toMatchObject({ version: undefined, emitsSettled: false });
  });

  it("PI_SUBAGENTS_PI_VERSION wins over the package.json", async () => {
    const { link } = await installPi("@mariozechner/pi-coding-agent", "0.73.1");
    expect(identifyPi(link, { PI_SUBAGENTS_PI_VERSION: "1.6.0" })).toEqual({
      version: "1.6.0",
      source: "env",
      emitsSettled: true,
    });
    expect(identifyPi("/nowhere/pi", { PI_SUBAGENTS_PI_VERSION: " 0.73.1 " })).toEqual({
      version: "0.73.1",
      source: "env",
      emitsSettled: false,
    });
  });

  it("a PI_SUBAGENTS_PI_VERSION that is not a version is named as a problem, and the package.json decides", async () => {
    const { link } = await installPi("@earendil-works/pi-coding-agent", "1.6.0");
    expect(identifyPi(link, { PI_SUBAGENTS_PI_VERSION: "latest" })).toMatchObject({
      version: "1.6.0",
      emitsSettled: true,
      problem:
        'PI_SUBAGENTS_PI_VERSION="latest" is not a version (like 1.6.0); pi is identified by its package.json instead',
    });
  });
});

describe("pi on a Node too old for it", () => {
  it("the package's engines.node says the oldest Node pi runs on", async () => {
    const { link } = await installPi("@earendil-works/pi-coding-agent", "1.6.0");
    const root = path.join(dir, "node_modules", "@earendil-works", "pi-coding-agent");
    await writeFile(
      path.join(root, "package.json"),
      JSON.stringify({
        name: "@earendil-works/pi-coding-agent",
        version: "1.6.0",
        bin: { pi: "dist/bundle/cli.js" },
        engines: { node: ">=22.19.0" },
      }),
    );
    expect(piPackageOf(link)).toEqual({
      name: "@earendil-works/pi-coding-agent",
      version: "1.6.0",
      nodeFloor: "22.19.0",
    });
    expect(identifyPi(link, {})).toMatchObject({ version: "1.6.0", nodeFloor: "22.19.0" });
  });

  it("without engines, what the version is known to need: 22.19 since 0.75.0", () => {
    expect(piNodeFloor({ version: "1.6.0" })).toBe("22.19.0");
    expect(piNodeFloor({ version: "0.73.1" })).toBeUndefined();
    expect(piNodeFloor({ version: undefined })).toBeUndefined();
    expect(piNodeFloor({ version: "0.73.1", nodeFloor: "20.6.0" })).toBe("20.6.0");
  });

  it("doctor's one line, with the node on PATH when known", () => {
    expect(oldNodeHint("1.6.0", "22.19.0", { path: "/usr/bin/node", version: "20.20.2" })).toBe(
      "pi 1.6.0 needs Node ≥ 22.19; the node on PATH (/usr/bin/node, 20.20.2) starts it: put Node 22 first on PATH",
    );
    expect(oldNodeHint(undefined, "22.19.0", {})).toBe(
      "pi needs Node ≥ 22.19; the node on PATH starts it: put Node 22 first on PATH",
    );
  });

  const CRASH = [
    "file:///x/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js:2",
    'import { createRequire, enableCompileCache } from "node:module";',
    "                        ^^^^^^^^^^^^^^^^^^",
    "SyntaxError: The requested module 'node:module' does not provide an export named 'enableCompileCache'",
    "    at ModuleJob._instantiate (node:internal/modules/esm/module_job:213:21)",
    "",
    "Node.js v20.20.2",
    "",
  ].join("\n");

  it("a crash whose report names an older Node than pi needs gets the hint; anything else does not", () => {
    const pi = { version: "1.6.0", nodeFloor: "22.19.0" };
    expect(oldNodeCrash(pi, CRASH, "/usr/bin/node")).toBe(
      "pi 1.6.0 needs Node ≥ 22.19; the node on PATH (/usr/bin/node, 20.20.2) starts it: put Node 22 first on PATH",
    );
    expect(oldNodeCrash(pi, CRASH.replace("v20.20.2", "v22.23.5"))).toBeUndefined();
    expect(oldNodeCrash(pi, "Error: No API key found for fake\n")).toBeUndefined();
    expect(oldNodeCrash({ version: "0.73.1" }, CRASH)).toBeUndefined();
  });
});
