import fs from "node:fs";
import path from "node:path";
import { MetaError, type MetaV1 } from "../contracts/meta.js";
import { checkMeta, unknownFieldWarning } from "../contracts/meta-check.js";
import { fileIdentity, identityClash } from "../lib/file-paths.js";
import { describeJsonError } from "../lib/json-error.js";
import { errorText } from "../lib/values.js";
import { checkResultPathWritable } from "./artifacts.js";

/**
 * The largest meta.json read (the task is most of it). Far above any prompt a model takes;
 * it keeps a runaway writer from making the wrapper buffer gigabytes.
 */
export const MAX_META_BYTES = 16 * 1024 * 1024;

export interface LoadMetaOptions {
  /** Hears one line per field meta.json holds that this version does not know (a likely typo). */
  warn?: (line: string) => void;
}

/**
 * Read and fully validate meta.json: shape (pure, in contracts) and the file-system facts a
 * run needs (cwd is a directory, the system prompt file exists, result.json can be written,
 * no two artifacts are one file). Throws a MetaError holding every problem found, one line each.
 */
export async function loadMeta(metaPath: string, options: LoadMetaOptions = {}): Promise<MetaV1> {
  const absolute = path.resolve(metaPath);
  let bytes: Buffer;
  try {
    const size = (await fs.promises.stat(absolute)).size;
    if (size > MAX_META_BYTES)
      throw new MetaError(`meta file ${absolute} is too large (${size} bytes; the limit is ${MAX_META_BYTES})`);
    bytes = await fs.promises.readFile(absolute);
  } catch (err) {
    if (err instanceof MetaError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a directory" : errorText(err);
    throw new MetaError(`cannot read meta file ${absolute}: ${why}`);
  }
  let text: string;
  try {
    // Fatal decoding: a lossy one would hand the child a task with U+FFFD in place of bytes.
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new MetaError(`meta file ${absolute} is not valid UTF-8`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new MetaError(`meta file ${absolute} is not valid JSON: ${describeJsonError(text, err)}`);
  }
  const baseDir = path.dirname(absolute);
  const { fields, problems, unknown } = checkMeta(raw, baseDir);
  for (const entry of unknown) options.warn?.(unknownFieldWarning(entry));
  problems.push(...(await fileSystemProblems(fields)));
  // A failed result.json goes to resultPath only once that path has passed its own check.
  let resultPath: string | undefined;
  if (fields.resultPath !== undefined) {
    const unwritable = await checkResultPathWritable(fields.resultPath);
    if (unwritable) problems.push(`meta.json ${unwritable}`);
    else resultPath = fields.resultPath;
  }
  if (problems.length > 0) throw new MetaError(problems, resultPath, fields.runId);
  return fields as MetaV1;
}

const ARTIFACTS = ["resultPath", "eventsPath", "stdoutPath", "stderrPath", "transcriptPath"] as const;

/** The file-system facts a run needs, checked on the fields that are valid; every problem found. */
async function fileSystemProblems(meta: Partial<MetaV1>): Promise<string[]> {
  const problems: string[] = [];
  if (meta.cwd !== undefined) {
    const cwdStat = await fs.promises.stat(meta.cwd).catch(() => undefined);
    if (!cwdStat) problems.push(`meta.json cwd ${meta.cwd} does not exist`);
    else if (!cwdStat.isDirectory()) problems.push(`meta.json cwd ${meta.cwd} is not a directory`);
  }
  if (meta.systemPromptPath) {
    const promptStat = await fs.promises.stat(meta.systemPromptPath).catch(() => undefined);
    if (!promptStat?.isFile())
      problems.push(`meta.json systemPromptPath ${meta.systemPromptPath} does not exist or is not a file`);
  }
  for (const [name, value] of Object.entries(meta.env ?? {})) {
    // The OS cannot carry these; spawn would fail after the run started.
    if (name === "" || /[=\0]/.test(name) || value.includes("\0"))
      problems.push(`meta.json field "env" has an entry the environment cannot hold: ${JSON.stringify(name)}`);
  }
  problems.push(...(await artifactClashes(meta)));
  for (const entry of meta.extensions ?? []) {
    if (path.isAbsolute(entry) && !fs.existsSync(entry)) problems.push(`meta.json extension ${entry} does not exist`);
  }
  return problems;
}

/**
 * Two artifacts in one file, or one inside the other's path, destroy each other mid-run.
 * Compared by what the paths really name (file-paths.ts: symlinked folders resolved, device
 * and inode of files that exist), not by their text.
 */
async function artifactClashes(meta: Partial<MetaV1>): Promise<string[]> {
  const named = ARTIFACTS.filter((key) => meta[key] !== undefined);
  const identities = await Promise.all(named.map((key) => fileIdentity(meta[key]!)));
  const problems: string[] = [];
  for (let i = 0; i < named.length; i++) {
    for (let j = 0; j < named.length; j++) {
      const [a, b] = [named[i]!, named[j]!];
      if (a >= b) continue;
      const [pa, pb] = [meta[a]!, meta[b]!];
      const clash = identityClash(identities[i]!, identities[j]!);
      if (clash === "same") {
        problems.push(
          pa === pb
            ? `meta.json ${a} and ${b} name the same file ${pa}`
            : `meta.json ${a} and ${b} name the same file through a link: ${pa}, ${pb}`,
        );
      } else if (clash === "nested") problems.push(`meta.json ${a} and ${b} overlap: ${pa}, ${pb}`);
    }
  }
  return problems;
}
