/**
 * package.json as pi and npm read it: the packages pi provides to extensions are peers (a copy
 * in `dependencies` makes pi 1.x warn at every start and can load twice), everything else the
 * extension imports is a dependency, both commands are bins, and the CLI works without the peer
 * it uses itself (typebox, for `inspect`'s contract check).
 */
import fs from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import pkg from "../../package.json" with { type: "json" };
import { REPO_ROOT } from "../support/pi-home.js";
import { runProcess } from "../support/processes.js";
import { allRelativeImports, importedFile, SRC, sourceFiles } from "../support/source-imports.js";
import { cleanupWrapperCases, WRAPPER_BIN, wrapperCase } from "../support/wrapper-harness.js";

/** The packages pi (1.x and 0.73.1) provides to extensions, under both of their names. */
const HOST_PROVIDED = new Set([
  "@earendil-works/pi-agent-core",
  "@earendil-works/pi-ai",
  "@earendil-works/pi-coding-agent",
  "@earendil-works/pi-tui",
  "@mariozechner/pi-agent-core",
  "@mariozechner/pi-ai",
  "@mariozechner/pi-coding-agent",
  "@mariozechner/pi-tui",
  "@sinclair/typebox",
  "typebox",
]);

const dirs: string[] = [];
afterEach(async () => {
  await cleanupWrapperCases();
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** Every source file pi loads: the extension's and the in-child code, and what they import. */
function filesPiLoads(): string[] {
  const seen = new Set<string>();
  const queue = [...sourceFiles(path.join(SRC, "extension")), ...sourceFiles(path.join(SRC, "in-child"))].filter(
    (file) => !file.endsWith(".d.ts"),
  );
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const spec of allRelativeImports(file)) queue.push(importedFile(file, spec));
  }
  return [...seen];
}

/** The package names a file imports at run time (`import type` left out: it is gone once compiled). */
function runtimePackages(file: string): string[] {
  const text = fs.readFileSync(file, "utf8");
  const specs = [
    ...text.matchAll(/^import\s+(?!type\s)[^;]*?from\s+"([^".][^"]*)"/gm),
    ...text.matchAll(/import\(\s*"([^".][^"]*)"\s*\)/g),
  ].map((match) => match[1]!);
  return specs
    .filter((spec) => !spec.startsWith("node:"))
    .map((spec) => (spec.startsWith("@") ? spec.split("/").slice(0, 2) : spec.split("/").slice(0, 1)).join("/"));
}

describe("package.json", () => {
  const imported = [...new Set(filesPiLoads().flatMap(runtimePackages))].sort();
  const peers: Record<string, string> = pkg.peerDependencies;
  const dependencies: Record<string, string> = pkg.dependencies;

  it("every host-provided package pi loads from this package is a peer with *, none a dependency", () => {
    const hostImports = imported.filter((name) => HOST_PROVIDED.has(name));
    // Not typebox: the tools' schemas are plain JSON Schema objects (tools/schema.ts); it stays a peer for the CLI.
    expect(hostImports).toEqual(["@mariozechner/pi-coding-agent", "@mariozechner/pi-tui"]);
    for (const name of hostImports) expect(peers[name], name).toBe("*");
    expect(Object.keys(dependencies).filter((name) => HOST_PROVIDED.has(name))).toEqual([]);
  });

  it("every other package the extension imports is a dependency", () => {
    const others = imported.filter((name) => !HOST_PROVIDED.has(name));
    expect(others.filter((name) => dependencies[name] === undefined)).toEqual([]);
  });

  it("the tests have every peer installed: each is a devDependency, under its name or an npm alias", () => {
    const devDependencies: Record<string, string> = pkg.devDependencies;
    // pi 0.73.1 is installed under an alias, out of reach of dist/'s imports (scripts/pi-lines.mjs).
    const aliased = Object.values(devDependencies).flatMap((spec) => /^npm:(@?[^@]+)@/.exec(spec)?.[1] ?? []);
    const missing = Object.keys(peers).filter((name) => devDependencies[name] === undefined && !aliased.includes(name));
    expect(missing).toEqual([]);
  });

  it("both commands are bins (npm link gives both), executable", () => {
    expect(pkg.bin).toEqual({
      "pi-subagent-tree": "bin/pi-subagent-tree",
      "subagent-wrapper": "bin/subagent-wrapper",
    });
    for (const file of Object.values(pkg.bin)) {
      expect(() => fs.accessSync(path.join(REPO_ROOT, file), fs.constants.X_OK), file).not.toThrow();
    }
  });
});

describe("the CLI without typebox (a peer pi does not install)", () => {
  it("inspect shows the run and says in one line why its files were not checked", async () => {
    const c = await wrapperCase({ scenario: "tool-then-answer" });
    expect((await c.run()).code).toBe(0);
    // A module hook that finds no typebox, as in a package installed without its peers.
    const dir = await mkdtemp(path.join(os.tmpdir(), "psa-no-typebox-"));
    dirs.push(dir);
    const hooks = path.join(dir, "hooks.mjs");
    await writeFile(
      hooks,
      `export async function resolve(specifier, context, next) {
  if (specifier === "typebox" || specifier.startsWith("typebox/")) {
    throw Object.assign(new Error("Cannot find package 'typebox'"), { code: "ERR_MODULE_NOT_FOUND" });
  }
  return next(specifier, context);
}\n`,
    );
    const register = path.join(dir, "register.mjs");
    await writeFile(
      register,
      `import { register } from "node:module";\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
    );
    const shown = await runProcess(process.execPath, ["--import", register, WRAPPER_BIN, "inspect", c.dir], {
      timeoutMs: 20_000,
    });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/status {4}completed \(exit 0\)/);
    expect(shown.stdout).not.toContain("✓ meta.json");
    expect(shown.stderr).toBe(
      'subagent-wrapper inspect: contract check skipped: its validator, typebox (a peer dependency of this package), is not installed; run "npm install typebox" beside the package, or pass --no-check\n',
    );
  });
});
