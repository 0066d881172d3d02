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
 *   <treeDir>/checkouts/<seg>-<seg>.ready    while a first turn runs ahead of its worktree's checkout
 *
 * Claims use exclusive file creation, so processes racing for a nickname or the last spawn
 * slot never both win. Every write of a record is atomic (temp file + rename).
 *
 * Nothing read back is trusted: a record is checked against the contract (checkAgentRecord)
 * and against the folder it lies in, a file that is not a regular file is never opened in a
 * way that could block, and what is damaged is noted once (`onDamage`) and skipped — its
 * bytes stay where they are for a person to repair, and the rest of the tree goes on.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { ROOT_PATH, TASK_NAME_PATTERN } from "../../contracts/agent-paths.js";
import { AGENT_SUBFOLDERS, TREE_FILES } from "../../contracts/layout.js";
import type { Notice } from "../../contracts/notice.js";
import { checkNotice } from "../../contracts/notice.js";
import type { AgentRecordV1 } from "../../contracts/tree.js";
import { checkAgentRecord } from "../../contracts/tree.js";
import { writeJsonAtomic } from "../../lib/atomic-file.js";
import { type Clock, isoNow, sleep, systemClock } from "../../lib/clock.js";
import { readJsonFile } from "../../lib/regular-file.js";
import { serialized } from "../../lib/serialized.js";
import { errorText } from "../../lib/values.js";
import { agentFolderSegments, isTreeTag, treeTag } from "./paths.js";

/** Something damaged in the tree directory, as it is reported (once) and handled. */
export interface TreeDamage {
  /** The file or folder that is damaged. */
  file: string;
  /** The agent whose record it is, when it is one. */
  agentPath?: string;
  problem: string;
  /** What was done about it: "skipped", "moved aside to …". */
  handling: string;
}

/** The one line a damage is reported with. */
export function describeDamage(damage: TreeDamage): string {
  const what = damage.agentPath ? `the record of ${damage.agentPath} (${damage.file})` : damage.file;
  return `${what} is damaged: ${damage.problem} — ${damage.handling}`;
}

/** What reading one agent's record found. */
export type RecordState =
  | { kind: "ok"; record: AgentRecordV1 }
  | { kind: "absent" }
  | { kind: "damaged"; problem: string };

/** A tree directory's agents as read back: the sound records, and the damaged ones. */
export interface TreeScan {
  records: AgentRecordV1[];
  damaged: TreeDamage[];
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

/** How a damaged record is handled: left where it is (a person can repair it), and not loaded. */
const SKIPPED = "the agent is skipped, its files are kept as they are";

/** `/root/a/b` for the folder segments `a`, `b`. */
const pathOfSegments = (segments: readonly string[]): string => [ROOT_PATH, ...segments].join("/");

/** Orders this process's inbox posts within one millisecond. */
let inboxSeq = 0;

export class TreeDir {
  /** Damage noted so far (each distinct file and problem once), for listeners that come later. */
  private readonly damage: TreeDamage[] = [];
  private readonly noted = new Set<string>();
  private readonly damageListeners = new Set<(damage: TreeDamage) => void>();
  /** The root session `ensure` writes into tree.json. */
  private rootSession: string | undefined;
  /** `init` once it has been asked for; cleared when it failed, so the next need tries again. */
  private readiness: Promise<void> | undefined;

  constructor(
    readonly root: string,
    /** The time its file names and its short retries use (default: the system's). */
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * Hears every damage noted from now on, after the damage noted before it subscribed (so
   * what `init` found reaches a runtime made after it). Returns the unsubscribe.
   */
  onDamage(listener: (damage: TreeDamage) => void): () => void {
    for (const damage of this.damage) listener(damage);
    this.damageListeners.add(listener);
    return () => this.damageListeners.delete(listener);
  }

  /** Records damage once per file and problem; true when it was new. */
  private noteDamage(damage: TreeDamage): boolean {
    const key = `${damage.file}\0${damage.problem}`;
    if (this.noted.has(key)) return false;
    this.noted.add(key);
    this.damage.push(damage);
    for (const listener of this.damageListeners) listener(damage);
    return true;
  }

  /**
   * Names the tree's root session without writing anything: a session that never delegates
   * leaves no tree directory behind, so the folders wait for `ensure` (the first spawn).
   */
  belongsTo(rootSession: string): void {
    this.rootSession = rootSession;
  }

  /** Whether the tree directory is on disk (made by this process or an earlier one). */
  onDisk(): boolean {
    return fs.existsSync(this.root);
  }

  /** The tree's folders exist once it resolves (`init` once per process; a failure is tried again next time). */
  ensure(): Promise<void> {
    this.readiness ??= this.init(this.rootSession ?? path.basename(this.root)).catch((err: unknown) => {
      this.readiness = undefined;
      throw err;
    });
    return this.readiness;
  }

  /**
   * Creates the tree's folders. Something else where one of them belongs (a file named
   * `agents`) is moved aside, so the tree can work and the bytes are kept.
   */
  async init(rootSession: string): Promise<void> {
    await fs.promises.mkdir(this.root, { recursive: true });
    const folders = [TREE_FILES.spawns, TREE_FILES.nicknames, TREE_FILES.inbox, TREE_FILES.agents];
    const [spawnsRemade, nicknamesRemade] = await Promise.all(
      folders.map((dir) => this.ensureFolder(path.join(this.root, dir))),
    );
    // Claims made again from the agents' records keep the spawn cap counting and nicknames unique.
    if (spawnsRemade || nicknamesRemade) {
      for (const record of (await this.scan(ROOT_PATH)).records) {
        if (spawnsRemade)
          await exclusiveCreate(
            path.join(this.root, TREE_FILES.spawns, String(record.spawnSeq).padStart(6, "0")),
            record.path,
          );
        if (nicknamesRemade)
          await exclusiveCreate(path.join(this.root, TREE_FILES.nicknames, record.nickname), record.path).catch(
            () => false,
          );
      }
    }
    const marker = path.join(this.root, TREE_FILES.marker);
    // The tag is drawn with the tree, before any child exists, so every process reads the same one.
    if (!fs.existsSync(marker))
      await writeJsonAtomic(marker, { version: 1, rootSession, createdAt: isoNow(this.clock), tag: treeTag() });
  }

  /**
   * The tree tag: 8 hex characters unique to this tree that keep its branches apart from
   * other trees' in one repository (`subagent/<tag>-<name>`). From tree.json; a tree made
   * before tags claims one once in `tree-tag` (exclusive creation: racing processes agree).
   */
  async treeTag(): Promise<string> {
    const read = await readJsonFile(path.join(this.root, TREE_FILES.marker));
    const tag = read.ok ? (read.value as { tag?: unknown } | null)?.tag : undefined;
    if (typeof tag === "string" && isTreeTag(tag)) return tag;
    const claim = path.join(this.root, TREE_FILES.treeTag);
    for (let attempt = 0; attempt < 50; attempt++) {
      await exclusiveCreate(claim, treeTag());
      // Whoever won wrote the file in one call; read back what it holds.
      const claimed = (await fs.promises.readFile(claim, "utf8").catch(() => "")).trim();
      if (isTreeTag(claimed)) return claimed;
      // Another process created the file and is writing it: read again shortly.
      await sleep(this.clock, 10);
    }
    throw new Error(`the tree tag in ${claim} is not 8 lowercase hex characters`);
  }

  /** Makes `dir` a folder; true when something else stood there and was moved aside. */
  private async ensureFolder(dir: string): Promise<boolean> {
    const stat = await fs.promises.lstat(dir).catch(() => undefined);
    const misplaced = stat !== undefined && !stat.isDirectory();
    if (misplaced) {
      const aside = `${dir}.damaged-${this.clock.now()}`;
      await fs.promises.rename(dir, aside);
      this.noteDamage({
        file: dir,
        problem: `it is ${stat.isSymbolicLink() ? "a symbolic link" : "a file"} where a folder belongs`,
        handling: `moved aside to ${path.basename(aside)}`,
      });
    }
    await fs.promises.mkdir(dir, { recursive: true });
    return misplaced;
  }

  /** The folder of an agent (`/root` is the tree directory itself). */
  agentDir(agentPath: string): string {
    if (agentPath === ROOT_PATH) return this.root;
    return path.join(this.root, TREE_FILES.agents, ...agentFolderSegments(agentPath));
  }

  inboxDir(agentPath: string): string {
    return path.join(this.agentDir(agentPath), TREE_FILES.inbox);
  }

  /** An agent's record as it is on disk: sound, absent, or damaged (noted, with the reason). */
  async recordState(agentPath: string): Promise<RecordState> {
    if (agentPath === ROOT_PATH) return { kind: "absent" };
    return this.readRecordFile(path.join(this.agentDir(agentPath), TREE_FILES.record), agentPath);
  }

  private async readRecordFile(file: string, agentPath: string): Promise<RecordState> {
    const read = await readJsonFile(file);
    if (!read.ok && read.absent) return { kind: "absent" };
    const checked = read.ok
      ? checkAgentRecord(read.value, agentPath)
      : { ok: false as const, problem: `${TREE_FILES.record} ${read.problem}` };
    if (checked.ok) return { kind: "ok", record: checked.record };
    this.noteDamage({ file, agentPath, problem: checked.problem, handling: SKIPPED });
    return { kind: "damaged", problem: checked.problem };
  }

  /** The agent's sound record; undefined when it has none or it is damaged. */
  async readRecord(agentPath: string): Promise<AgentRecordV1 | undefined> {
    const state = await this.recordState(agentPath);
    return state.kind === "ok" ? state.record : undefined;
  }

  async writeRecord(record: AgentRecordV1): Promise<void> {
    record.updatedAt = isoNow(this.clock);
    await writeJsonAtomic(path.join(this.agentDir(record.path), TREE_FILES.record), record);
  }

  /** Published by the parent's process whenever its queue changes (the queue itself lives there). */
  async writeQueue(parentPath: string, queued: readonly string[]): Promise<void> {
    await writeJsonAtomic(path.join(this.agentDir(parentPath), TREE_FILES.queue), { queued });
  }

  async readQueue(parentPath: string): Promise<string[]> {
    const read = await readJsonFile(path.join(this.agentDir(parentPath), TREE_FILES.queue));
    const queued =
      read.ok && typeof read.value === "object" && read.value !== null
        ? (read.value as { queued?: unknown }).queued
        : undefined;
    return Array.isArray(queued) ? queued.filter((entry): entry is string => typeof entry === "string") : [];
  }

  /** Whether the agent has a record file (sound or damaged): its path is taken either way. */
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
      if (await exclusiveCreate(path.join(this.root, TREE_FILES.spawns, String(n).padStart(6, "0")), agentPath))
        return n;
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

  /**
   * Every agent at or below `agentPath` (the caller excluded): the sound records in spawn
   * order, and the damaged ones. A folder without a record is a spawn still claiming its
   * path (or one that failed), not damage.
   */
  async scan(agentPath: string): Promise<TreeScan> {
    const records: AgentRecordV1[] = [];
    const damaged: TreeDamage[] = [];
    const base = agentPath === ROOT_PATH ? [] : agentFolderSegments(agentPath);
    const walk = async (dir: string, segments: string[]): Promise<void> => {
      const entries = await fs.promises.readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const entry of entries) {
        // Only a task name can be an agent's folder (runs/, reports/ and inbox/ never are).
        if (!entry.isDirectory() || AGENT_SUBFOLDERS.has(entry.name) || !TASK_NAME_PATTERN.test(entry.name)) continue;
        const child = path.join(dir, entry.name);
        const childSegments = [...segments, entry.name];
        const childPath = pathOfSegments(childSegments);
        const file = path.join(child, TREE_FILES.record);
        const state = await this.readRecordFile(file, childPath);
        if (state.kind === "ok") records.push(state.record);
        else if (state.kind === "damaged")
          damaged.push({ file, agentPath: childPath, problem: state.problem, handling: SKIPPED });
        if (childSegments.length < 16) await walk(child, childSegments);
      }
    };
    await walk(agentPath === ROOT_PATH ? path.join(this.root, TREE_FILES.agents) : this.agentDir(agentPath), base);
    return { records: records.sort((a, b) => a.spawnSeq - b.spawnSeq), damaged };
  }

  /** Every sound record at or below `agentPath` (the caller excluded), in spawn order. */
  async subtree(agentPath: string): Promise<AgentRecordV1[]> {
    return (await this.scan(agentPath)).records;
  }

  /** Drops a message notice into an agent's inbox (read by that agent's process). */
  async postToInbox(agentPath: string, notice: Notice): Promise<void> {
    // Names sort in posting order: two posts of one process in the same millisecond are
    // ordered by its counter, not by the random suffix (which only keeps processes apart).
    const seq = String(inboxSeq++).padStart(10, "0");
    const file = path.join(
      this.inboxDir(agentPath),
      `${this.clock.now().toString().padStart(15, "0")}-${seq}-${randomBytes(4).toString("hex")}.json`,
    );
    await writeJsonAtomic(file, notice);
  }

  /**
   * Takes every notice waiting in an agent's inbox, oldest first. A damaged one is moved
   * aside (`<name>.damaged`, which is not read again) and noted, never handed on. One drain at
   * a time: a wait and a turn's end collect at once, and two drains would both read a file
   * before either removed it, handing its message on twice.
   */
  drainInbox(agentPath: string): Promise<Notice[]> {
    const dir = this.inboxDir(agentPath);
    return serialized(`inbox:${dir}`, () => this.drainNow(dir));
  }

  private async drainNow(dir: string): Promise<Notice[]> {
    const names = (await fs.promises.readdir(dir).catch(() => [])).filter((name) => name.endsWith(".json")).sort();
    const notices: Notice[] = [];
    for (const name of names) {
      const file = path.join(dir, name);
      const read = await readJsonFile(file);
      if (!read.ok && read.absent) continue;
      const checked = read.ok ? checkNotice(read.value) : { ok: false as const, problem: `the file ${read.problem}` };
      if (checked.ok) {
        await fs.promises.rm(file, { force: true });
        notices.push(checked.record);
        continue;
      }
      const moved = await fs.promises.rename(file, `${file}.damaged`).then(
        () => `moved aside to ${name}.damaged`,
        (err: unknown) => `left in place (${errorText(err)})`,
      );
      this.noteDamage({ file, problem: `it is no message notice: ${checked.problem}`, handling: moved });
    }
    return notices;
  }
}

export { writeJsonAtomic };
