/**
 * spawn_agent: validate (validate.ts, rules in a fixed order; rule 13 asks git), claim the
 * path, a spawn slot and a nickname in the tree directory, make an isolated child's worktree
 * (isolate.ts), write the forked history, record the agent and queue its first turn. A
 * rejected spawn leaves nothing behind: each step registers its undo (rollback.ts), and a
 * failure undoes every step taken, in reverse order.
 */
import fs from "node:fs/promises";
import path from "node:path";
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { TREE_FILES } from "../../contracts/layout.js";
import type { ThinkingLevel } from "../../contracts/meta.js";
import type { ResolvedRunner } from "../../contracts/runners.js";
import type { AgentRecordV1, AgentWorktreeV1, FallbackModel } from "../../contracts/tree.js";
import { isoNow } from "../../lib/clock.js";
import { errorText } from "../../lib/values.js";
import { EXTENSION_ENTRY } from "../config.js";
import { type Repository, SnapshotReuse } from "../isolation/index.js";
import { loadRoleCatalog } from "../roles/definition-files.js";
import { type ModelInfo, modelRef, parseModelRef } from "../roles/models.js";
import { describeRegistry, lookupRole, resolveChildTools } from "../roles/roles.js";
import { COORDINATION_TOOLS } from "../roles/tool-names.js";
import { readSubagentSettings } from "../settings.js";
import { readCooldowns } from "../tree/cooldowns.js";
import { pickNickname } from "../tree/paths.js";
import { childState } from "../turns/child-state.js";
import type { ChildState, TreeRuntime } from "../turns/runtime.js";
import { resolveFallbacks } from "./fallbacks.js";
import { forkMessages, hasAssistant, renderForkTranscript, writeForkSession } from "./fork.js";
import { gateExtensions } from "./gate-extensions.js";
import { createIsolatedWorktree, repositoryFor, setupCommandFromEnv } from "./isolate.js";
import { newRecord } from "./new-record.js";
import { type Rollback, withRollback } from "./rollback.js";
import { chooseRunner, delegationRefusal, runnerNeedsGit } from "./runner.js";
import { noRepositoryError, type SpawnPlan, type SpawnRequest, validateSpawn } from "./validate.js";
import { spawnVerify } from "./verify.js";

export interface SpawnResult {
  agent_name: string;
  nickname: string;
  role: string;
  model: string;
  reasoning: ThinkingLevel;
  agent_status: string;
  queue_position?: number;
  /** An isolated child's worktree: where it works, its branch, and the commit it starts from. */
  worktree?: { path: string; branch: string; base_commit: string };
  /** Why the child is not on the model its role asked for (a Claude Code alias no usable model matched). */
  model_note?: string;
}

/** The caller's model registry lookup: a model pi knows and can authenticate, else undefined. */
export function modelFinder(ctx: ExtensionContext): (ref: string) => ModelInfo | undefined {
  return (ref) => {
    const parsed = parseModelRef(ref);
    if (!parsed) return undefined;
    const model = ctx.modelRegistry.find(parsed.provider, parsed.id);
    if (!model || !ctx.modelRegistry.hasConfiguredAuth(model)) return undefined;
    return model as ModelInfo;
  };
}

/** Children load this package's extension from one place; another copy's tools would clash. */
function childExtensions(extensions: string[], registry: ReturnType<typeof describeRegistry>): string[] {
  const ours = new Set(
    registry.filter((tool) => COORDINATION_TOOLS.has(tool.name) && tool.sourcePath).map((tool) => tool.sourcePath!),
  );
  return [...extensions.filter((entry) => !ours.has(entry) && entry !== EXTENSION_ENTRY), EXTENSION_ENTRY];
}
/** What spawnAgent uses of the runtime: TreeRuntime has it all, and a test can hand a small fake. */
export type SpawnRuntime = Pick<
  TreeRuntime,
  "tree" | "self" | "cwd" | "children" | "limits" | "worktrees" | "requestTurn" | "queuePosition" | "clock"
> &
  Partial<Pick<TreeRuntime, "report">>;

/** Where the child works: the parent's cwd, or a worktree of its own whose files may still be coming. */
interface Workplace {
  cwd: string;
  worktree?: AgentWorktreeV1;
  /** The rest of the worktree's files, written when the runtime's worktree operations decide. */
  finishCheckout?: () => Promise<void>;
}

/**
 * Validates, then takes each step of a spawn in order: claim the path, a spawn slot and a
 * nickname; make the isolated worktree; write the role text and forked history; record the
 * agent; queue its first turn. A step that fails undoes every step before it, newest first.
 */
export async function spawnAgent(
  runtime: SpawnRuntime,
  pi: ExtensionAPI,
  ctx: ExtensionContext,
  params: SpawnRequest & { fallback_models?: unknown; verify?: unknown },
): Promise<SpawnResult> {
  const refusal = delegationRefusal();
  if (refusal) throw new Error(refusal);
  if (!ctx.model) throw new Error("spawn_agent needs a model: this session has none selected");
  const registry = describeRegistry(pi.getAllTools());
  const plan = withFallbacks(runtime, ctx, params, await checkRequest(runtime, pi, ctx, params, registry));
  const runner = pickRunner(runtime.cwd, params.runner, plan.roleInfo?.runner);
  const verify = spawnVerify({
    param: params.verify,
    role: plan.roleInfo,
    settings: readSubagentSettings({ cwd: runtime.cwd }).settings.verify,
    runner,
    findRole: (name) => lookupRole(loadRoleCatalog(runtime.cwd, registry), name),
  });
  // 13, the last rule: it runs git, so it comes after every rule that does not. A child on a
  // runner always works in a worktree of its own: its turns' commits land on its branch.
  const repository =
    plan.isolation === "worktree" || runner ? await runnerRepository(runtime.cwd, runner?.name) : undefined;
  return withRollback(async (rollback) => {
    await claimPath(runtime, plan.path, rollback);
    const spawnSeq = await claimSpawnSeq(runtime, plan.path, rollback);
    const nickname = await claimNickname(runtime, plan.path, rollback);
    const place = repository ? await isolate(runtime, plan.path, repository, rollback) : { cwd: runtime.cwd };
    const tools = resolveChildTools({
      role: plan.roleInfo,
      parentActiveTools: pi.getActiveTools(),
      allTools: registry,
      ownExtensionPath: EXTENSION_ENTRY,
    });
    const sessionPath = path.join(runtime.tree.agentDir(plan.path), TREE_FILES.session);
    const forkTranscript = await writeStartingHistory(runtime, ctx, plan, sessionPath, place.cwd);
    const record = newRecord(runtime.self, plan, {
      nickname,
      spawnSeq,
      sessionPath,
      activeTools: tools.tools,
      extensions: childExtensions([...(await gateExtensions(runner, runtime.cwd, ctx)), ...tools.extensions], registry),
      forkTranscript,
      worktree: place.worktree,
      runner,
      verify,
      spawnedAt: isoNow(runtime.clock),
    });
    const state = recordChild(runtime, record, place, rollback);
    const queuePosition = await startFirstTurn(runtime, state, place);
    return spawnResult(record, queuePosition, place.worktree, plan.modelNote);
  });
}

/** The numbered rules (validate.ts) with what this session knows: its models, roles and tree. */
async function checkRequest(
  runtime: SpawnRuntime,
  pi: ExtensionAPI,
  ctx: ExtensionContext,
  params: SpawnRequest,
  registry: ReturnType<typeof describeRegistry>,
): Promise<SpawnPlan> {
  const tree = runtime.tree;
  const checked = validateSpawn(params, {
    callerPath: runtime.self,
    parentModel: ctx.model as ModelInfo,
    parentReasoning: pi.getThinkingLevel() as ThinkingLevel,
    findModel: modelFinder(ctx),
    availableModels: () => ctx.modelRegistry.getAvailable().map((m) => modelRef(m)),
    usableModels: () => ctx.modelRegistry.getAvailable() as ModelInfo[],
    // Definition files are read when a spawn names a role, so an edited file counts at once.
    findRole: (name) => lookupRole(loadRoleCatalog(runtime.cwd, registry), name),
    pathExists: (agentPath) => runtime.children.has(agentPath) || tree.exists(agentPath),
    spawnCount: await tree.spawnCount(),
    maxDepth: runtime.limits.maxDepth,
    maxSpawns: runtime.limits.maxSpawns,
    // A bad settings key is said once per process (to the user), and its default holds.
    settingsLimits: readSubagentSettings({ cwd: runtime.cwd }, (line) => runtime.report?.(line)).settings.limits,
  });
  if (!checked.ok) throw new Error(checked.error);
  return checked.plan;
}

/**
 * The plan's fallback models (spawn/fallbacks.ts): the parameter, else the role's, else the
 * settings'; the child starts on the first of its models that is not cooling down.
 */
function withFallbacks(
  runtime: SpawnRuntime,
  ctx: ExtensionContext,
  params: { fallback_models?: unknown },
  plan: SpawnPlan,
): SpawnPlan & { fallbacks: FallbackModel[] } {
  const chosen = resolveFallbacks({
    param: params.fallback_models,
    role: plan.roleInfo,
    settings: readSubagentSettings({ cwd: runtime.cwd }).settings.fallbackModels,
    model: plan.model,
    reasoning: plan.reasoning,
    findModel: modelFinder(ctx),
    cooling: readCooldowns(runtime.tree.root, runtime.clock.now()),
  });
  if (!chosen.ok) throw new Error(chosen.error);
  const { model, reasoning, fallbacks, note } = chosen.value;
  const modelNote = [plan.modelNote, note].filter(Boolean).join("; ");
  return { ...plan, model, reasoning, fallbacks, ...(modelNote && { modelNote }) };
}

/** The agent's folder: a spawn racing for the same path (another process of the tree) loses here. */
async function claimPath(runtime: SpawnRuntime, agentPath: string, rollback: Rollback): Promise<void> {
  const tree = runtime.tree;
  // The first spawn makes the tree directory: a session that never delegates leaves none.
  await tree.ensure();
  if (!(await tree.claimPath(agentPath))) throw new Error(`agent task path already exists: ${agentPath}`);
  rollback.push(() => tree.releasePath(agentPath));
}

/** The next spawn number, under the tree's spawn limit (rule 11 again, now that it counts for sure). */
async function claimSpawnSeq(runtime: SpawnRuntime, agentPath: string, rollback: Rollback): Promise<number> {
  const { tree, limits } = runtime;
  const spawnSeq = await tree.claimSpawn(limits.maxSpawns, agentPath);
  if (spawnSeq === undefined) {
    throw new Error(
      `spawn limit reached: this tree has spawned ${await tree.spawnCount()} agents (limit ${limits.maxSpawns})`,
    );
  }
  rollback.push(() => tree.releaseSpawn(spawnSeq));
  return spawnSeq;
}

/** A nickname no other agent of the tree has; another spawn taking the same one meanwhile means a new pick. */
async function claimNickname(runtime: SpawnRuntime, agentPath: string, rollback: Rollback): Promise<string> {
  const tree = runtime.tree;
  let nickname = pickNickname(await tree.takenNicknames());
  while (!(await tree.claimNickname(nickname, agentPath))) nickname = pickNickname(await tree.takenNicknames());
  rollback.push(() => tree.releaseNickname(nickname));
  return nickname;
}

/**
 * The spawns of this process share their last snapshot (isolation/snapshot-reuse.ts): a
 * fan-out's spawns, one after another, each still snapshot the working tree afresh, with
 * half the git processes.
 */
const SPAWN_SNAPSHOTS = new SnapshotReuse();

/** The child's own worktree (isolate.ts); its files are finished later, so the first turn can start meanwhile. */
async function isolate(
  runtime: SpawnRuntime,
  agentPath: string,
  repository: Repository,
  rollback: Rollback,
): Promise<Workplace> {
  const tree = runtime.tree;
  const isolated = await createIsolatedWorktree({
    repository,
    treeDir: tree.root,
    agentPath,
    treeTag: await tree.treeTag(),
    parentWorktree: (await tree.readRecord(runtime.self))?.worktree,
    setup: setupCommandFromEnv(),
    deferCheckout: true,
    snapshots: SPAWN_SNAPSHOTS,
  });
  rollback.push(isolated.release);
  return { cwd: isolated.cwd, worktree: isolated.worktree, finishCheckout: isolated.finishCheckout };
}

/**
 * The role's text and the forked part of the parent's conversation, written in the agent's
 * folder (which the path's rollback removes). Returns the fork as text when pi could not
 * continue it as a session (it holds no assistant message).
 */
async function writeStartingHistory(
  runtime: SpawnRuntime,
  ctx: ExtensionContext,
  plan: SpawnPlan,
  sessionPath: string,
  cwd: string,
): Promise<string | undefined> {
  // A snapshot: every turn of this agent keeps the role text it was spawned with.
  if (plan.roleInfo?.prompt !== undefined) {
    await fs.writeFile(
      path.join(runtime.tree.agentDir(plan.path), TREE_FILES.rolePrompt),
      plan.roleInfo.prompt,
      "utf8",
    );
  }
  if (plan.fork.kind === "none") return undefined;
  const messages = forkMessages(ctx.sessionManager.getBranch(), plan.fork, {
    childProvider: plan.model.provider,
    now: runtime.clock.now(),
  });
  if (hasAssistant(messages)) {
    await writeForkSession(sessionPath, messages, {
      cwd,
      parentSession: ctx.sessionManager.getSessionFile(),
      now: runtime.clock.now(),
    });
    return undefined;
  }
  return messages.length > 0 ? renderForkTranscript(messages) : undefined;
}

/** The spawn's runner (runner.ts), from the settings in effect for `cwd`; throws the spawn error. */
function pickRunner(cwd: string, requested: unknown, roleRunner: string | undefined): ResolvedRunner | undefined {
  const choice = chooseRunner(requested, roleRunner, readSubagentSettings({ cwd }).settings);
  if (!choice.ok) throw new Error(choice.error);
  return choice.runner;
}

/** The repository a worktree comes from; a runner's child outside git is its own spawn error. */
async function runnerRepository(cwd: string, runnerName: string | undefined): Promise<Repository> {
  try {
    return await repositoryFor(cwd);
  } catch (err) {
    if (runnerName && errorText(err) === noRepositoryError(cwd)) throw new Error(runnerNeedsGit(runnerName));
    throw err;
  }
}

/**
 * The runtime knows the child from now on, and takes charge of its worktree's checkout. On
 * rollback the child leaves the runtime before its worktree is removed.
 */
function recordChild(runtime: SpawnRuntime, record: AgentRecordV1, place: Workplace, rollback: Rollback): ChildState {
  const state: ChildState = childState(record);
  runtime.children.set(record.path, state);
  const { worktree, finishCheckout } = place;
  if (worktree && finishCheckout) {
    // The first turn starts before every file is written (its tool calls wait for them).
    void runtime.worktrees.adopt(worktree, finishCheckout);
    // Removal waits for a checkout under way (and starts one not begun), then removes.
    rollback.push(() => runtime.worktrees.remove(worktree).catch(() => undefined));
  }
  rollback.push(async () => runtime.children.delete(record.path));
  return state;
}

/** Starts or queues the first turn; returns its place in the queue when it waits for a turn slot. */
async function startFirstTurn(runtime: SpawnRuntime, state: ChildState, place: Workplace): Promise<number | undefined> {
  await runtime.requestTurn(state, "spawn");
  const queuePosition = runtime.queuePosition(state.record.path);
  // Waiting for a turn slot, no child is starting: the files can be written now.
  if (place.worktree && place.finishCheckout && queuePosition !== undefined) {
    runtime.worktrees.startCheckout(place.worktree);
  }
  return queuePosition;
}

function spawnResult(
  record: AgentRecordV1,
  queuePosition: number | undefined,
  worktree: AgentWorktreeV1 | undefined,
  modelNote: string | undefined,
): SpawnResult {
  return {
    agent_name: record.path,
    nickname: record.nickname,
    role: record.role,
    model: record.model,
    reasoning: record.reasoning,
    agent_status: record.status,
    ...(queuePosition !== undefined && { queue_position: queuePosition }),
    ...(worktree && { worktree: { path: worktree.path, branch: worktree.branch, base_commit: worktree.baseCommit } }),
    ...(modelNote !== undefined && { model_note: modelNote }),
  };
}
