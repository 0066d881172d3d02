/**
 * This package's own package.json: the version the CLI reports and the pi version it is
 * tested with. Read from beside the code (src/lib or dist/lib, two levels below it).
 */
import fs from "node:fs";

interface PackageJson {
  version?: string;
  devDependencies?: Record<string, string>;
}

function readPackageJson(): PackageJson | undefined {
  try {
    return JSON.parse(fs.readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as PackageJson;
  } catch {
    return undefined;
  }
}

/** This package's version, or "unknown" when its package.json cannot be read. */
export function packageVersion(): string {
  return readPackageJson()?.version ?? "unknown";
}

/** The pi version this package is tested with (its devDependency on pi). */
export function testedPiVersion(): string | undefined {
  return readPackageJson()?.devDependencies?.["@mariozechner/pi-coding-agent"];
}
