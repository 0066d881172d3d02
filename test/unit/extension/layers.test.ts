/**
 * The extension's folders form layers: each may import the layers below it, never one above,
 * so no two folders import each other and a folder can be read knowing only what is under
 * it. docs/architecture.md ("the extension's layers") says why the order is this one.
 */
import path from "node:path";
import { describe, expect, it } from "vitest";
import { allRelativeImports, importedFile, SRC, sourceFiles } from "../../support/source-imports.js";

const EXTENSION = path.join(SRC, "extension");

/**
 * Bottom first. `settings`, `config`, `tracing` and `session` are the files of that name in
 * src/extension, `index` the entry that wires everything.
 */
const LAYERS = [
  "settings",
  "roles",
  "tree",
  "config",
  "tracing",
  "isolation",
  "turns",
  "progress",
  "spawn",
  "tools",
  "ui",
  "session",
  "index",
] as const;

/** The layer of a file of src/extension (its folder, or its own name for a file directly in it). */
function layerOf(file: string): string {
  const [top] = path.relative(EXTENSION, file).split(path.sep);
  return top!.replace(/\.ts$/, "");
}

const imports = sourceFiles(EXTENSION).flatMap((file) =>
  allRelativeImports(file)
    .map((spec) => ({ file, spec, target: importedFile(file, spec) }))
    .filter(({ target }) => target.startsWith(EXTENSION + path.sep))
    .map(({ file, spec, target }) => ({
      from: layerOf(file),
      to: layerOf(target),
      where: `${path.relative(SRC, file)} → ${spec}`,
    })),
);

describe("the extension's layers", () => {
  it("every file of src/extension is in a known layer", () => {
    const unknown = sourceFiles(EXTENSION)
      .map(layerOf)
      .filter((layer) => !(LAYERS as readonly string[]).includes(layer));
    expect(unknown).toEqual([]);
  });

  it.each(LAYERS.map((layer, rank) => [layer, LAYERS.slice(0, rank) as readonly string[]] as const))(
    "%s imports only from the layers below it: %j",
    (layer, below) => {
      const upward = imports
        .filter((crossing) => crossing.from === layer && crossing.to !== layer && !below.includes(crossing.to))
        .map((crossing) => crossing.where);
      expect(upward).toEqual([]);
    },
  );

  it("the rule sees crossings: turns imports tree, and tools imports turns", () => {
    const pairs = new Set(imports.map(({ from, to }) => `${from}→${to}`));
    expect(pairs).toContain("turns→tree");
    expect(pairs).toContain("tools→turns");
  });
});
