/**
 * This package's own package.json: the version the CLI reports and the pi versions it is
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

/** The npm packages pi is published as, one per pi line, current first (1.x, then 0.73.1, the last under the old name). */
export const PI_PACKAGES = ["@earendil-works/pi-coding-agent", "@mariozechner/pi-coding-agent"] as const;

/** The pi versions this package is tested with (its devDependencies on each pi line), current first. */
export function testedPiVersions(): string[] {
  const dependencies = readPackageJson()?.devDependencies ?? {};
  return PI_PACKAGES.map((name) => dependencies[name]).filter(
    (version): version is string => typeof version === "string",
  );
}
