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

/**
 * The pi versions this package is tested with (its devDependencies on each pi line), current
 * first. A line may be installed under an npm alias (`"pi-coding-agent-0.73":
 * "npm:@mariozechner/pi-coding-agent@0.73.1"`, so that pi 1.x does not load it from dist/).
 */
export function testedPiVersions(): string[] {
  const dependencies = readPackageJson()?.devDependencies ?? {};
  const versions = new Map<string, string>();
  for (const [name, spec] of Object.entries(dependencies)) {
    const alias = /^npm:(@?[^@]+)@(.+)$/.exec(spec);
    if (alias) versions.set(alias[1]!, alias[2]!);
    else versions.set(name, spec);
  }
  return PI_PACKAGES.map((name) => versions.get(name)).filter(
    (version): version is string => typeof version === "string",
  );
}
