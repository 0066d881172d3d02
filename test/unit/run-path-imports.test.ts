/**
 * `subagent-wrapper run` starts fast because it loads only what a run needs: the
 * subcommands (inspect, tail, doctor) and the schema validator are imported on demand.
 * This walks the static import graph from the CLI entry and proves it.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/pi-home.js";

/** Static `import … from "x"` / `export … from "x"` (not `import type`, not `import()`). */
function staticImports(file: string): string[] {
  const text = fs.readFileSync(file, "utf8");
  const found: string[] = [];
  const pattern = /^\s*(?:import|export)\s+(?!type\s)(?:[^'";]*?\sfrom\s+)?["']([^"']+)["']/gm;
  for (const match of text.matchAll(pattern)) found.push(match[1]!);
  return found;
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

describe("the run path", () => {
  it("loads no subcommand code and no schema library", () => {
    const { files, packages } = reachable(path.join(REPO_ROOT, "src", "wrapper", "cli.ts"));
    const relative = [...files].map((file) => path.relative(REPO_ROOT, file));
    expect(relative).toContain("src/wrapper/run.ts");
    expect(relative).toContain("src/cli/commands.ts");
    for (const lazy of ["inspect", "inspect-format", "tail", "tail-format", "doctor", "doctor-format", "contract-check", "run-files"]) {
      expect(relative).not.toContain(`src/cli/${lazy}.ts`);
    }
    expect([...packages].filter((name) => /typebox|ajv|schema/.test(name))).toEqual([]);
  });

  it("the graph walker sees static imports and skips dynamic and type-only ones", () => {
    const { files, packages } = reachable(path.join(REPO_ROOT, "src", "cli", "inspect.ts"));
    expect([...files].map((file) => path.basename(file))).toContain("contract-check.ts");
    expect(packages.has("typebox/schema")).toBe(false); // imported with import() inside
  });
});
