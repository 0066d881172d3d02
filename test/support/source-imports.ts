/** Reads the imports of the package's own source files, for the tests of its folder rules. */
import fs from "node:fs";
import path from "node:path";
import { REPO_ROOT } from "./pi-home.js";

export const SRC = path.join(REPO_ROOT, "src");

/** Every .ts file below `dir`. */
export function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true }).flatMap((entry) => {
    const file = path.join(entry.parentPath, entry.name);
    return entry.isFile() && file.endsWith(".ts") ? [file] : [];
  });
}

/** Every relative import, type-only ones included (a type import still couples two folders). */
export function allRelativeImports(file: string): string[] {
  const text = fs.readFileSync(file, "utf8");
  return [...text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)].map((match) => match[1]!);
}

/** The source file a relative import names (`./x.js` → `<dir>/x.ts`). */
export function importedFile(file: string, spec: string): string {
  return path.resolve(path.dirname(file), spec.replace(/\.js$/, ".ts"));
}
