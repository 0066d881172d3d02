/**
 * Tests that need machine tools (sshd, ip, srun, munged, bwrap): each says plainly why it
 * skipped where a tool is missing, and fails instead when `CI` is set (`.ci/run`
 * installs them, so a missing tool there is a broken setup, not a reason to skip).
 */
import { accessSync, constants } from "node:fs";
import path from "node:path";

/** Where a tool is looked for: PATH, then the sbin folders a plain user's PATH may lack. */
const EXTRA_DIRS = ["/usr/sbin", "/sbin", "/usr/local/sbin"];

/** The path of executable `name`, or undefined. */
export function findTool(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? "").split(path.delimiter), ...EXTRA_DIRS].filter((dir) => dir !== "");
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** `missing: sshd, ip` (and `needs root`), or undefined when everything is there. */
export function missingNeeds(tools: readonly string[], opts: { root?: boolean } = {}): string | undefined {
  const missing = tools.filter((tool) => findTool(tool) === undefined);
  const reasons: string[] = [];
  if (missing.length > 0) reasons.push(`missing: ${missing.join(", ")} (.ci/run installs them)`);
  if (opts.root === true && process.getuid?.() !== 0) reasons.push("needs root (network namespaces, a test user)");
  return reasons.length > 0 ? reasons.join("; ") : undefined;
}

const said = new Set<string>();

/** Skips the test with `reason`, or fails it when `CI` is set; does nothing when reason is undefined. */
export function skipOrFail(ctx: { skip: (note?: string) => void }, reason: string | undefined): void {
  if (reason === undefined) return;
  if (process.env.CI) throw new Error(`CI is set, so this test fails instead of skipping: ${reason}`);
  skipSaying(ctx, reason);
}

/** Skips the test with `reason`, CI or not (for optional checks, e.g. the podman recipe). */
export function skipSaying(ctx: { skip: (note?: string) => void }, reason: string): void {
  // vitest's default reporter counts skipped tests but does not show why: say it, once per reason.
  if (!said.has(reason)) {
    said.add(reason);
    console.warn(`skipped: ${reason}`);
  }
  ctx.skip(reason);
}
