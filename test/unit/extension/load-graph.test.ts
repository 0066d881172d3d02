/**
 * What every pi that loads the extension evaluates at its start — every child's pi among them,
 * though most children never delegate: the static imports of dist/extension/index.js, followed
 * file by file (dynamic import() is left out: it runs when first used). pi loads an extension
 * through jiti with its module cache off, so a package that pi itself has loaded already
 * (TypeBox) is evaluated a second time when the extension imports it at start.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../../support/pi-home.js";

const ENTRY = path.join(REPO_ROOT, "dist", "extension", "index.js");

/** The files and packages reached from `entry` through static imports and re-exports. */
function staticGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    const text = fs.readFileSync(file, "utf8");
    for (const [, spec] of text.matchAll(/^\s*(?:import|export)\s(?:[^"';]*?\sfrom\s)?["']([^"']+)["']/gm)) {
      if (spec!.startsWith(".")) visit(path.resolve(path.dirname(file), spec!));
      else if (!spec!.startsWith("node:")) packages.add(spec!);
    }
  };
  visit(entry);
  return { files, packages };
}

describe("what the extension loads at start", () => {
  const graph = staticGraph(ENTRY);

  it("does not import TypeBox: the tools' schemas are plain JSON Schema objects", () => {
    expect([...graph.packages]).not.toContain("typebox");
  });

  it("leaves the terminal UI library and the root's UI modules to the root: a child's pi draws nothing", () => {
    expect([...graph.packages]).not.toContain("@mariozechner/pi-tui");
    const ui = [...graph.files]
      .map((file) => path.relative(path.dirname(ENTRY), file))
      .filter((f) => f.startsWith("ui"));
    for (const rootOnly of [
      "tool-render",
      "session-ui",
      "agents-command",
      "durable-exit",
      "agents-clean",
      "quit-watch",
    ])
      expect(ui).not.toContain(`ui/${rootOnly}.js`);
  });
});
