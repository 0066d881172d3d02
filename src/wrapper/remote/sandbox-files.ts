/**
 * What a sandbox gets of this machine's files for one run: private copies (pi's agent dir cut
 * down to the run's providers, jiti's cache) made per pi process in the run's own temp folder
 * (run-temp.ts: a SIGKILLed wrapper's orphan guard removes that folder, copies included) and
 * removed after it, the agent's workspace folder, and the run's secrets as sandbox-env.ts
 * filters them.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { MetaV1 } from "../../contracts/meta.js";
import type { ResolvedRunner } from "../../contracts/runners.js";
import { piAgentDir } from "../../lib/pi-agent-dir.js";
import { JITI_CACHE } from "./prefix.js";
import {
  defaultProviderOf,
  filterAuth,
  filterModels,
  providerEnvNames,
  providerHomeFiles,
  runProviders,
  sandboxEnv,
} from "./sandbox-env.js";
import { unixSocketFilter } from "./seccomp.js";

/** The agent dir's folder of session history (every project's conversations): never shown to a sandbox. */
const SESSIONS_FOLDER = "sessions";
/** pi's credentials file and its models file in the agent dir: cut down to the run's providers. */
const AUTH_FILE = "auth.json";
const MODELS_FILE = "models.json";

function readText(file: string): string | undefined {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

/**
 * A private copy of the agent dir's top-level files (its folders are bound read-only, not
 * copied; the session history not even that): the sandbox's pi writes its locks there.
 * auth.json holds only `providers`' logins and is read-only inside (filterAuth says why);
 * models.json only their entries. Made in `tempDir` (the run's own folder); removed when the
 * run's child is done.
 */
export function agentDirCopy(
  agentDir: string,
  providers: readonly string[],
  tempDir = os.tmpdir(),
): { path: string; copy: string; folders: string[]; readOnlyFiles: string[] } | undefined {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(agentDir, { withFileTypes: true });
  } catch {
    return undefined;
  }
  const copy = fs.mkdtempSync(path.join(tempDir, "subagent-agent-dir-"));
  const folders: string[] = [];
  for (const entry of entries) {
    const from = path.join(agentDir, entry.name);
    if (entry.isDirectory()) {
      fs.mkdirSync(path.join(copy, entry.name));
      if (entry.name !== SESSIONS_FOLDER) folders.push(entry.name);
    } else if (entry.isFile() && entry.name !== AUTH_FILE) {
      const text = entry.name === MODELS_FILE ? readText(from) : undefined;
      if (text !== undefined) fs.writeFileSync(path.join(copy, entry.name), filterModels(text, providers));
      else fs.copyFileSync(from, path.join(copy, entry.name));
    }
  }
  fs.writeFileSync(path.join(copy, AUTH_FILE), filterAuth(readText(path.join(agentDir, AUTH_FILE)), providers), {
    mode: 0o600,
  });
  return { path: agentDir, copy, folders, readOnlyFiles: [AUTH_FILE] };
}

/**
 * What a sandbox of this run may hold of this machine's secrets: the run's providers, the
 * variables of its environment (sandboxEnv) and the home files pi reads for those providers.
 */
export function sandboxSecrets(meta: MetaV1, env: NodeJS.ProcessEnv, runner: ResolvedRunner) {
  const agentDir = piAgentDir(env);
  const providers = runProviders(meta, defaultProviderOf(readText(path.join(agentDir, "settings.json"))));
  const names = providerEnvNames(providers, {
    modelsText: readText(path.join(agentDir, MODELS_FILE)),
    authText: readText(path.join(agentDir, AUTH_FILE)),
  });
  const extra = runner.kind === "sandbox" ? (runner.env ?? []) : [];
  return {
    agentDir,
    providers,
    filterEnv: (childEnv: Record<string, string>) => sandboxEnv(childEnv, names, extra),
    showAgain: providerHomeFiles(providers),
  };
}

/** At most this much of jiti's cache is copied for a sandbox (newest files first). */
const JITI_COPY_BYTES = 32 * 1024 * 1024;

/**
 * A private copy of jiti's cache (newest files first, within JITI_COPY_BYTES): jiti uses a
 * cache only in a folder it can write, and the sandbox must not write this machine's own.
 * Without it a sandboxed pi compiles every extension anew. Made in `tempDir` (the run's own
 * folder); removed when the run's child is done.
 */
export function jitiCacheCopy(tempDir = os.tmpdir()): string | undefined {
  const from = path.join(os.tmpdir(), JITI_CACHE);
  let files: Array<{ name: string; size: number; mtime: number }>;
  try {
    files = fs
      .readdirSync(from, { withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => {
        const stat = fs.statSync(path.join(from, entry.name));
        return { name: entry.name, size: stat.size, mtime: stat.mtimeMs };
      });
  } catch {
    return undefined;
  }
  const copy = fs.mkdtempSync(path.join(tempDir, "subagent-jiti-"));
  let budget = JITI_COPY_BYTES;
  for (const file of files.sort((a, b) => b.mtime - a.mtime)) {
    budget -= file.size;
    if (budget < 0) break;
    try {
      fs.copyFileSync(path.join(from, file.name), path.join(copy, file.name));
    } catch {
      // gone meanwhile
    }
  }
  return copy;
}

/** The agent's runner workspace folder (meta.json `runnerWorkspacePath`), made: a sandbox keeps its workspace there. */
export function sandboxScratchRoot(meta: MetaV1): string | undefined {
  if (!meta.runnerWorkspacePath) return undefined;
  try {
    fs.mkdirSync(meta.runnerWorkspacePath, { recursive: true, mode: 0o700 });
    return meta.runnerWorkspacePath;
  } catch {
    return undefined; // nothing kept: the sandbox works as with no folder
  }
}

/** The fd number bwrap reads the seccomp filter from (the prefix's stdio after stdin, stdout, stderr). */
export const SECCOMP_FD = 3;

/**
 * The seccomp filter of this machine's architecture in an open file that is already unlinked
 * (nothing is left behind however the run ends): its fd, or undefined when there is no filter
 * here or the temporary folder cannot be written. Written in `tempDir` (the run's own folder),
 * so even a SIGKILL between the write and the unlink leaves nothing the orphan guard misses.
 */
export function seccompFile(tempDir = os.tmpdir()): number | undefined {
  const filter = unixSocketFilter();
  if (!filter) return undefined;
  const file = path.join(tempDir, `subagent-seccomp-${process.pid}-${Math.random().toString(36).slice(2)}`);
  try {
    fs.writeFileSync(file, filter, { mode: 0o600 });
    return fs.openSync(file, "r");
  } catch {
    return undefined;
  } finally {
    fs.rmSync(file, { force: true });
  }
}
