/**
 * Which extensions a child is handed of those pi discovers — shared by the root (a child on this
 * machine loads what the root discovered) and a runner's far side (a child there loads what its
 * host has installed). The extensions pi itself discovers for a directory: `<agent dir>/extensions/`, a project's
 * `.pi/extensions/` (on pi 1.x only when the project is trusted), the packages `pi install`
 * recorded and settings `extensions`. Asked of pi's own DefaultPackageManager, the code pi
 * runs at its start, so what a child is handed is what a pi started here loads — never a
 * second reading of pi's rules. Nothing is installed: a package that is missing is skipped.
 * Both pi lines (0.73.1 and 1.x) have the same `resolve` and `SettingsManager.create`.
 */
import { piAgentDir } from "../lib/pi-agent-dir.js";

/** What one resolved extension says of itself (pi's ResolvedResource, the fields used here). */
export interface ResolvedExtension {
  path: string;
  enabled: boolean;
  metadata?: { source?: string };
}

/** The two classes of pi's package the discovery needs (pi's own exports, on either line). */
export interface PiDiscoveryApi {
  SettingsManager: { create(cwd: string, agentDir: string, options?: { projectTrusted?: boolean }): unknown };
  DefaultPackageManager: new (options: {
    cwd: string;
    agentDir: string;
    // biome-ignore lint/suspicious/noExplicitAny: pi's SettingsManager, whichever line made it
    settingsManager: any;
  }) => {
    resolve(onMissing?: (source: string) => Promise<"install" | "skip" | "error">): Promise<{
      extensions: ResolvedExtension[];
    }>;
  };
}

export interface DiscoveryPlace {
  cwd: string;
  agentDir: string;
  /** pi 1.x reads a project's resources only once the person trusted it; 0.73.1 always reads them. */
  projectTrusted: boolean;
}

/** The extensions pi would load in `place`, enabled or not, in pi's order. */
export async function resolveExtensions(api: PiDiscoveryApi, place: DiscoveryPlace): Promise<ResolvedExtension[]> {
  const settingsManager = api.SettingsManager.create(place.cwd, place.agentDir, {
    projectTrusted: place.projectTrusted,
  });
  const manager = new api.DefaultPackageManager({ cwd: place.cwd, agentDir: place.agentDir, settingsManager });
  const resolved = await manager.resolve(async () => "skip");
  return resolved.extensions;
}

/**
 * Where a far side asks: its user's agent dir, and as the project a private folder with no `.pi`
 * of its own (`emptyDir`), untrusted — a copied workspace is no project anyone on that host
 * chose to trust, so no project's extensions or settings are read, on either line.
 */
export function farDiscoveryPlace(env: NodeJS.ProcessEnv, emptyDir: string): DiscoveryPlace {
  return { cwd: emptyDir, agentDir: piAgentDir(env), projectTrusted: false };
}

/** `npm:…`, `git:…`, `builtin:…`: a source, not a path. */
const SOURCE_SPEC = /^[a-z][a-z0-9+.-]*:/i;

/**
 * The paths a child is handed of what pi resolved: the enabled ones, never a built-in (pi keeps
 * those out of a `-ne` child on purpose), never this package by its registry name (the child
 * gets its own extension once, from one place).
 */
export function enabledExtensionPaths(resolved: readonly ResolvedExtension[], ownName: string): string[] {
  return resolved
    .filter((entry) => entry.enabled && !SOURCE_SPEC.test(entry.path))
    .filter((entry) => {
      const spec = (entry.metadata?.source ?? "").replace(SOURCE_SPEC, "");
      return spec !== ownName && !spec.startsWith(`${ownName}@`);
    })
    .map((entry) => entry.path);
}
