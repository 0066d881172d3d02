import fs from "node:fs";
import path from "node:path";
import { MetaError, type MetaV1, parseMeta } from "../contracts/meta.js";
import { errorText } from "../lib/values.js";
import { checkResultPathWritable } from "./artifacts.js";

/**
 * The largest meta.json read (the task is most of it). Far above any prompt a model takes;
 * it keeps a runaway writer from making the wrapper buffer gigabytes.
 */
export const MAX_META_BYTES = 16 * 1024 * 1024;

/**
 * Read and fully validate meta.json: shape (pure, in contracts) and the file-system facts a
 * run needs (cwd is a directory, the system prompt file exists, result.json can be written).
 * Throws MetaError with one line for the user.
 */
export async function loadMeta(metaPath: string): Promise<MetaV1> {
  const absolute = path.resolve(metaPath);
  let bytes: Buffer;
  try {
    const size = (await fs.promises.stat(absolute)).size;
    if (size > MAX_META_BYTES) throw new MetaError(`meta file ${absolute} is too large (${size} bytes; the limit is ${MAX_META_BYTES})`);
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
    throw new MetaError(`meta file ${absolute} is not valid JSON: ${errorText(err)}`);
  }
  const baseDir = path.dirname(absolute);
  const meta = parseMeta(raw, baseDir);
  const fail = (message: string): never => {
    throw new MetaError(message, meta.resultPath, meta.runId);
  };

  const cwdStat = await fs.promises.stat(meta.cwd).catch(() => undefined);
  if (!cwdStat) fail(`meta.json cwd ${meta.cwd} does not exist`);
  if (!cwdStat!.isDirectory()) fail(`meta.json cwd ${meta.cwd} is not a directory`);
  if (meta.systemPromptPath) {
    const promptStat = await fs.promises.stat(meta.systemPromptPath).catch(() => undefined);
    if (!promptStat?.isFile()) fail(`meta.json systemPromptPath ${meta.systemPromptPath} does not exist or is not a file`);
  }
  for (const [name, value] of Object.entries(meta.env ?? {})) {
    // The OS cannot carry these; spawn would fail after the run started.
    if (name === "" || /[=\0]/.test(name) || value.includes("\0"))
      fail(`meta.json field "env" has an entry the environment cannot hold: ${JSON.stringify(name)}`);
  }
  const artifacts = (["resultPath", "eventsPath", "stdoutPath", "stderrPath", "transcriptPath"] as const).filter((key) => meta[key] !== undefined);
  for (const a of artifacts) {
    for (const b of artifacts) {
      if (a >= b) continue;
      const [pa, pb] = [meta[a]!, meta[b]!];
      // Two artifacts in one file, or one inside the other's path, destroy each other mid-run.
      if (pa === pb) fail(`meta.json ${a} and ${b} name the same file ${pa}`);
      if (pb.startsWith(`${pa}${path.sep}`) || pa.startsWith(`${pb}${path.sep}`)) fail(`meta.json ${a} and ${b} overlap: ${pa}, ${pb}`);
    }
  }
  for (const entry of meta.extensions ?? []) {
    if (path.isAbsolute(entry) && !fs.existsSync(entry)) fail(`meta.json extension ${entry} does not exist`);
  }
  const unwritable = await checkResultPathWritable(meta.resultPath);
  if (unwritable) throw new MetaError(`meta.json ${unwritable}`, undefined, meta.runId);
  return meta;
}
