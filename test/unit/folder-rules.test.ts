/**
 * Two import rules, read from the source:
 * - the folders meet only where the architecture says (docs/architecture.md): contracts and
 *   lib are leaves, the wrapper and the extension never import each other, the CLI reads
 *   files and never reaches into the extension, and only the program entry composes the
 *   wrapper's run with the CLI's subcommands; the code that runs inside the child pi
 *   (in-child) imports only the contracts, the boundary a machine that runs only children needs;
 * - `subagent-wrapper run` starts fast because it loads only what a run needs: the
 *   subcommands (inspect, tail, doctor) and the schema validator are imported on demand.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/pi-home.js";

const SRC = path.join(REPO_ROOT, "src");

/** Static `import … from "x"` / `export … from "x"` (not `import type`, not `import()`). */
function staticImports(file: string): string[] {
  const text = fs.readFileSync(file, "utf8");
  const found: string[] = [];
  const pattern = /^\s*(?:import|export)\s+(?!type\s)(?:[^'";]*?\sfrom\s+)?["']([^"']+)["']/gm;
  for (const match of text.matchAll(pattern)) found.push(match[1]!);
  return found;
}

/** Every relative import, type-only ones included (a type import still couples two folders). */
function allRelativeImports(file: string): string[] {
  const text = fs.readFileSync(file, "utf8");
  return [...text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)].map((match) => match[1]!);
}

function reachable(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    for (const spec of staticImports(file)) {
      if (spec.startsWith(".")) visit(path.resolve(path.dirname(file), spec.replace(/\.js$/, ".ts")));
      else if (!spec.startsWith("node:")) packages.add(spec);
    }
  };
  visit(entry);
  return { files, packages };
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true }).flatMap((entry) => {
    const file = path.join(entry.parentPath, entry.name);
    return entry.isFile() && file.endsWith(".ts") ? [file] : [];
  });
}

/** The top folder of a source file below src/ (`program` for src/program.ts, `index` for src/index.ts). */
function area(file: string): string {
  const [top] = path.relative(SRC, file).split(path.sep);
  return top!.replace(/\.ts$/, "");
}

/** Which areas each area may import from (besides itself). */
const ALLOWED: Record<string, readonly string[]> = {
  lib: [],
  contracts: ["lib"],
  /** Span building, W3C trace context and the OTLP export (the SDK only behind a dynamic import). */
  telemetry: ["contracts", "lib"],
  wrapper: ["contracts", "lib", "telemetry"],
  "in-child": ["contracts"],
  /** The far side of a runner (`subagent-wrapper serve`): runs from an installed package on a machine that never saw the parent. */
  serve: ["contracts", "in-child"],
  extension: ["contracts", "lib", "telemetry"],
  cli: ["contracts", "lib", "wrapper", "telemetry"],
  program: ["contracts", "lib", "wrapper", "cli", "serve", "telemetry"],
  index: ["contracts", "lib", "wrapper", "telemetry"],
};

describe("folder rules", () => {
  const crossings = sourceFiles(SRC).flatMap((file) =>
    allRelativeImports(file).map((spec) => ({
      from: area(file),
      to: area(path.resolve(path.dirname(file), spec.replace(/\.js$/, ".ts"))),
      where: `${path.relative(SRC, file)} → ${spec}`,
    })),
  );

  it("every file of src/ belongs to a known area", () => {
    expect(new Set(sourceFiles(SRC).map(area))).toEqual(new Set(Object.keys(ALLOWED)));
  });

  it.each(Object.entries(ALLOWED))("%s imports only from %j", (from, allowed) => {
    const bad = crossings
      .filter((c) => c.from === from && c.to !== from && !allowed.includes(c.to))
      .map((c) => c.where);
    expect(bad).toEqual([]);
  });

  it("the rule sees a crossing: the program entry does import the CLI, and the CLI's run command the wrapper", () => {
    const targets = new Set(crossings.filter((c) => c.from === "program").map((c) => c.to));
    expect(targets).toContain("cli");
    const fromRunCommand = crossings.filter((c) => c.where.startsWith(`${path.join("cli", "run-command.ts")} →`));
    expect(new Set(fromRunCommand.map((c) => c.to))).toContain("wrapper");
  });
});

describe("the run path", () => {
  it("loads no subcommand code and no schema library", () => {
    const { files, packages } = reachable(path.join(SRC, "program.ts"));
    const relative = [...files].map((file) => path.relative(REPO_ROOT, file));
    expect(relative).toContain("src/wrapper/run.ts");
    expect(relative).toContain("src/cli/commands.ts");
    for (const lazy of [
      "inspect",
      "inspect-format",
      "tail",
      "tail-format",
      "doctor",
      "doctor-format",
      "contract-check",
      "run-files",
    ]) {
      expect(relative).not.toContain(`src/cli/${lazy}.ts`);
    }
    expect([...packages].filter((name) => /typebox|ajv|schema/.test(name))).toEqual([]);
  });

  it("the plain run path (bundled for bin's fast path) loads no commander either", () => {
    const entry = path.join(SRC, "cli", "run-command.ts");
    const { files, packages } = reachable(entry);
    expect(
      [...files]
        .filter((file) => file !== entry)
        .map((file) => area(file))
        .filter((a) => a !== "wrapper" && a !== "contracts" && a !== "lib" && a !== "telemetry"),
    ).toEqual([]);
    expect([...packages]).toEqual([]);
  });

  it("the graph walker sees static imports and skips dynamic and type-only ones", () => {
    const { files, packages } = reachable(path.join(SRC, "cli", "inspect.ts"));
    expect([...files].map((file) => path.basename(file))).toContain("contract-check.ts");
    expect(packages.has("typebox/schema")).toBe(false); // imported with import() inside
  });
});
