/**
 * The tree directory: the one source of truth every process of a tree shares.
 *
 *   <treeDir>/tree.json                      who the root is, and the tree tag
 *   <treeDir>/spawns/<n>                     one claim per spawn (the per-tree cap)
 *   <treeDir>/nicknames/<name>               one claim per nickname (unique in the tree)
 *   <treeDir>/inbox/                         messages to the root from its children
 *   <treeDir>/agents/<seg>/…/agent.json      one record per agent, written by its parent
 *   <treeDir>/agents/<seg>/…/session.jsonl   the agent's pi session
 *   <treeDir>/agents/<seg>/…/runs/0001-spawn the wrapper's files of each turn
 *   <treeDir>/agents/<seg>/…/reports/        full answers (reports.ts)
 *   <treeDir>/agents/<seg>/…/inbox/          messages to this agent from its children
 *   <treeDir>/worktrees/<seg>-<seg>          isolated agents' git worktrees (flat)
 *
 * Claims use exclusive file creation, so processes racing for a nickname or the last spawn
 * slot never both win. Every write of a record is atomic (temp file + rename).
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { AGENT_SUBFOLDERS, TREE_FILES } from "../../contracts/layout.js";
import type { AgentRecordV1, Notice } from "../../contracts/tree.js";
import { ROOT_PATH } from "../../contracts/tree.js";
import { writeFileAtomic } from "../../lib/atomic-file.js";
import { isTreeTag, treeTag } from "../isolation/names.js";
import { agentFolderSegments } from "./paths.js";

async function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  await writeFileAtomic(file, `${JSON.stringify(value, null, 2)}\n`);
}

async function readJson<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await fs.promises.readFile(file, "utf8")) as T;
  } catch {
    return undefined;
  }
}

async function exclusiveCreate(file: string, content: string): Promise<boolean> {
  try {
    await fs.promises.writeFile(file, content, { flag: "wx" });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  }
}

/** Orders this process's inbox posts within one millisecond. */
let inboxSeq = 0;

export class TreeDir {
  constructor(readonly root: string) {}

  async init(rootSession: string): Promise<void> {
    await Promise.all(
      [TREE_FILES.spawns, TREE_FILES.nicknames, TREE_FILES.inbox, TREE_FILES.agents].map((dir) =>
        fs.promises.mkdir(path.join(this.root, dir), { recursive: true }),
      ),
    );
    const marker = path.join(this.root, TREE_FILES.marker);
    // The tag is drawn with the tree, before any child exists, so every process reads the same one.
    if (!fs.existsSync(marker)) await writeJsonAtomic(marker, { version: 1, rootSession, createdAt: new Date().toISOString(), tag: treeTag() });
  }

  /**
   * The tree tag: 8 hex characters unique to this tree that keep its branches apart from
   * other trees' in one repository (`subagent/<tag>-<name>`). From tree.json; a tree made
   * before tags claims one once in `tree-tag` (exclusive creation: racing processes agree).
   */
  async treeTag(): Promise<string> {
    const marker = await readJson<{ tag?: unknown }>(path.join(this.root, TREE_FILES.marker));
    if (typeof marker?.tag === "string" && isTreeTag(marker.tag)) return marker.tag;
    const claim = path.join(this.root, TREE_FILES.treeTag);
    for (let attempt = 0; attempt < 50; attempt++) {
      await exclusiveCreate(claim, treeTag());
      // Whoever won wrote the file in one call; read back what it holds.
      const claimed = (await fs.promises.readFile(claim, "utf8").catch(() => "")).trim();
      if (isTreeTag(claimed)) return claimed;
      // Another process created the file and is writing it: read again shortly.
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`the tree tag in ${claim} is not 8 lowercase hex characters`);
  }

  /** The folder of an agent (`/root` is the tree directory itself). */
  agentDir(agentPath: string): string {
    if (agentPath === ROOT_PATH) return this.root;
    return path.join(this.root, TREE_FILES.agents, ...agentFolderSegments(agentPath));
  }

  inboxDir(agentPath: string): string {
    return path.join(this.agentDir(agentPath), TREE_FILES.inbox);
  }

  async readRecord(agentPath: string): Promise<AgentRecordV1 | undefined> {
    if (agentPath === ROOT_PATH) return undefined;
    return readJson<AgentRecordV1>(path.join(this.agentDir(agentPath), TREE_FILES.record));
  }

  async writeRecord(record: AgentRecordV1): Promise<void> {
    record.updatedAt = new Date().toISOString();
    await writeJsonAtomic(path.join(this.agentDir(record.path), TREE_FILES.record), record);
  }

  /** Published by the parent's process whenever its queue changes (the queue itself lives there). */
  async writeQueue(parentPath: string, queued: readonly string[]): Promise<void> {
    await writeJsonAtomic(path.join(this.agentDir(parentPath), TREE_FILES.queue), { queued });
  }

  async readQueue(parentPath: string): Promise<string[]> {
    const file = await readJson<{ queued?: unknown }>(path.join(this.agentDir(parentPath), TREE_FILES.queue));
    return Array.isArray(file?.queued) ? file.queued.filter((entry): entry is string => typeof entry === "string") : [];
  }

  exists(agentPath: string): boolean {
    return fs.existsSync(path.join(this.agentDir(agentPath), TREE_FILES.record));
  }

  /** Creates the agent's folder; false when another spawn already took this path. */
  async claimPath(agentPath: string): Promise<boolean> {
    const dir = this.agentDir(agentPath);
    await fs.promises.mkdir(path.dirname(dir), { recursive: true });
    try {
      await fs.promises.mkdir(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
      throw err;
    }
    return true;
  }

  async releasePath(agentPath: string): Promise<void> {
    await fs.promises.rm(this.agentDir(agentPath), { recursive: true, force: true });
  }

  async spawnCount(): Promise<number> {
    return (await fs.promises.readdir(path.join(this.root, TREE_FILES.spawns)).catch(() => [])).length;
  }

  /** Takes the next spawn number, or undefined when the cap is reached. */
  async claimSpawn(maxSpawns: number, agentPath: string): Promise<number | undefined> {
    for (let n = (await this.spawnCount()) + 1; n <= maxSpawns; n++) {
      if (await exclusiveCreate(path.join(this.root, TREE_FILES.spawns, String(n).padStart(6, "0")), agentPath)) return n;
    }
    return undefined;
  }

  async releaseSpawn(seq: number): Promise<void> {
    await fs.promises.rm(path.join(this.root, TREE_FILES.spawns, String(seq).padStart(6, "0")), { force: true });
  }

  async takenNicknames(): Promise<Set<string>> {
    return new Set(await fs.promises.readdir(path.join(this.root, TREE_FILES.nicknames)).catch(() => []));
  }

  async claimNickname(name: string, agentPath: string): Promise<boolean> {
    return exclusiveCreate(path.join(this.root, TREE_FILES.nicknames, name), agentPath);
  }

  async releaseNickname(name: string): Promise<void> {
    await fs.promises.rm(path.join(this.root, TREE_FILES.nicknames, name), { force: true });
  }

  /** Every record at or below `agentPath` (the caller excluded), in spawn order. */
  async subtree(agentPath: string): Promise<AgentRecordV1[]> {
    const records: AgentRecordV1[] = [];
    const start = agentPath === ROOT_PATH ? path.join(this.root, TREE_FILES.agents) : this.agentDir(agentPath);
    const walk = async (dir: string, depth: number): Promise<void> => {
      const entries = await fs.promises.readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const entry of entries) {
        if (!entry.isDirectory() || AGENT_SUBFOLDERS.has(entry.name)) continue;
        const child = path.join(dir, entry.name);
        const record = await readJson<AgentRecordV1>(path.join(child, TREE_FILES.record));
        if (record) records.push(record);
        if (depth < 16) await walk(child, depth + 1);
      }
    };
    await walk(start, 0);
    return records.sort((a, b) => a.spawnSeq - b.spawnSeq);
  }

  /** Drops a message notice into an agent's inbox (read by that agent's process). */
  async postToInbox(agentPath: string, notice: Notice): Promise<void> {
    // Names sort in posting order: two posts of one process in the same millisecond are
    // ordered by its counter, not by the random suffix (which only keeps processes apart).
    const seq = String(inboxSeq++).padStart(10, "0");
    const file = path.join(this.inboxDir(agentPath), `${Date.now().toString().padStart(15, "0")}-${seq}-${randomBytes(4).toString("hex")}.json`);
    await writeJsonAtomic(file, notice);
  }

  /** Takes every notice waiting in an agent's inbox, oldest first. */
  async drainInbox(agentPath: string): Promise<Notice[]> {
    const dir = this.inboxDir(agentPath);
    const names = (await fs.promises.readdir(dir).catch(() => [])).filter((name) => name.endsWith(".json")).sort();
    const notices: Notice[] = [];
    for (const name of names) {
      const file = path.join(dir, name);
      const notice = await readJson<Notice>(file);
      await fs.promises.rm(file, { force: true });
      if (notice) notices.push(notice);
    }
    return notices;
  }
}

export { readJson, writeJsonAtomic };
