import fs from "node:fs";
import path from "node:path";
import { MetaError, type MetaV1, parseMeta } from "../contracts/meta.js";
import { checkResultPathWritable } from "./artifacts.js";
import { errorText } from "../lib/values.js";


/**
 * Read and fully validate meta.json: shape (pure, in contracts) and the file-system facts a
 * run needs (cwd is a directory, the system prompt file exists, result.json can be written).
 * Throws MetaError with one line for the user.
 */
export async function loadMeta(metaPath: string): Promise<MetaV1> {
  const absolute = path.resolve(metaPath);
  let text: string;
  try {
    text = await fs.promises.readFile(absolute, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a directory" : errorText(err);
    throw new MetaError(`cannot read meta file ${absolute}: ${why}`);
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
  const unwritable = await checkResultPathWritable(meta.resultPath);
  if (unwritable) throw new MetaError(`meta.json ${unwritable}`, undefined, meta.runId);
  return meta;
}


