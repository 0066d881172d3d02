/**
 * spawn_agent: validate (validate.ts, rules in a fixed order; rule 13 asks git), claim the
 * path, a spawn slot and a nickname in the tree directory, make an isolated child's worktree
 * (isolate.ts), write the forked history, record the agent and queue its first turn. A
 * rejected spawn leaves nothing behind: every step taken is undone in reverse order.
 */
import fs from "node:fs/promises";
import path from "node:path";
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { TREE_FILES } from "../../contracts/layout.js";
import type { ThinkingLevel } from "../../contracts/meta.js";
import type { AgentRecordV1 } from "../../contracts/tree.js";
import { emptyUsage } from "../../contracts/usage.js";
import { EXTENSION_ENTRY } from "../config.js";
import { loadRoleCatalog } from "../roles/agent-definitions.js";
import { type ModelInfo, modelRef, parseModelRef } from "../roles/models.js";
import { describeRegistry, lookupRole, resolveChildTools } from "../roles/roles.js";
import { COORDINATION_TOOLS } from "../roles/tool-names.js";
import { pickNickname } from "../tree/paths.js";
import { childState } from "../turns/child-state.js";
import type { ChildState, TreeRuntime } from "../turns/runtime.js";
import { forkMessages, hasAssistant, renderForkTranscript, writeForkSession } from "./fork.js";
import { createIsolatedWorktree, repositoryFor, setupCommandFromEnv } from "./isolate.js";
import { type SpawnRequest, validateSpawn } from "./validate.js";

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

export async function spawnAgent(
  runtime: TreeRuntime,
  pi: ExtensionAPI,
  ctx: ExtensionContext,
  params: SpawnRequest,
): Promise<SpawnResult> {
  const tree = runtime.tree;
  if (!ctx.model) throw new Error("spawn_agent needs a model: this session has none selected");
  const registry = describeRegistry(pi.getAllTools());
  const checked = validateSpawn(params, {
    callerPath: runtime.self,
    parentModel: ctx.model as ModelInfo,
    parentReasoning: pi.getThinkingLevel() as ThinkingLevel,
    findModel: modelFinder(ctx),
    availableModels: () => ctx.modelRegistry.getAvailable().map((m) => modelRef(m)),
    // Definition files are read when a spawn names a role, so an edited file counts at once.
    findRole: (name) => lookupRole(loadRoleCatalog(runtime.cwd, registry), name),
    pathExists: (agentPath) => runtime.children.has(agentPath) || tree.exists(agentPath),
    spawnCount: await tree.spawnCount(),
    maxDepth: runtime.limits.maxDepth,
    maxSpawns: runtime.limits.maxSpawns,
  });
  if (!checked.ok) throw new Error(checked.error);
  const plan = checked.plan;
  // 13, the last rule: it runs git, so it comes after every rule that does not.
  const repository = plan.isolation === "worktree" ? await repositoryFor(runtime.cwd) : undefined;

  if (!(await tree.claimPath(plan.path))) throw new Error(`agent task path already exists: ${plan.path}`);
  const releases: Array<() => Promise<void>> = [() => tree.releasePath(plan.path)];
  try {
    const spawnSeq = await tree.claimSpawn(runtime.limits.maxSpawns, plan.path);
    if (spawnSeq === undefined) {
      throw new Error(
        `spawn limit reached: this tree has spawned ${await tree.spawnCount()} agents (limit ${runtime.limits.maxSpawns})`,
      );
    }
    releases.push(() => tree.releaseSpawn(spawnSeq));
    let nickname = pickNickname(await tree.takenNicknames());
    while (!(await tree.claimNickname(nickname, plan.path))) nickname = pickNickname(await tree.takenNicknames());
    releases.push(() => tree.releaseNickname(nickname));

    let childCwd = runtime.cwd;
    let worktree: AgentRecordV1["worktree"];
    let finishCheckout: (() => Promise<void>) | undefined;
    if (repository) {
      const isolated = await createIsolatedWorktree({
        repository,
        treeDir: tree.root,
        agentPath: plan.path,
        treeTag: await tree.treeTag(),
        parentWorktree: (await tree.readRecord(runtime.self))?.worktree,
        setup: setupCommandFromEnv(),
        deferCheckout: true,
      });
      releases.push(isolated.release);
      worktree = isolated.worktree;
      childCwd = isolated.cwd;
      finishCheckout = isolated.finishCheckout;
    }

    const { tools, extensions } = resolveChildTools({
      role: plan.roleInfo,
      parentActiveTools: pi.getActiveTools(),
      allTools: registry,
      ownExtensionPath: EXTENSION_ENTRY,
    });
    const agentDir = tree.agentDir(plan.path);
    const sessionPath = path.join(agentDir, TREE_FILES.session);
    // A snapshot: every turn of this agent keeps the role text it was spawned with.
    if (plan.roleInfo?.prompt !== undefined) {
      await fs.writeFile(path.join(agentDir, TREE_FILES.rolePrompt), plan.roleInfo.prompt, "utf8");
    }
    let forkTranscript: string | undefined;
    if (plan.fork.kind !== "none") {
      const messages = forkMessages(ctx.sessionManager.getBranch(), plan.fork, { childProvider: plan.model.provider });
      if (hasAssistant(messages)) {
        await writeForkSession(sessionPath, messages, {
          cwd: childCwd,
          parentSession: ctx.sessionManager.getSessionFile(),
        });
      } else if (messages.length > 0) {
        forkTranscript = renderForkTranscript(messages);
      }
    }
    const now = new Date().toISOString();
    const record: AgentRecordV1 = {
      version: 1,
      kind: "agent",
      path: plan.path,
      parent: runtime.self,
      taskName: plan.taskName,
      nickname,
      role: plan.role,
      ...(plan.roleInfo && plan.roleInfo.source !== "builtin" && { agentSource: plan.roleInfo.source }),
      model: modelRef(plan.model),
      reasoning: plan.reasoning,
      activeTools: tools,
      extensions: childExtensions(extensions, registry),
      status: "pending_init",
      health: "healthy",
      sessionPath,
      runs: [],
      usage: emptyUsage(),
      spawnSeq,
      spawnedAt: now,
      updatedAt: now,
      inbox: [{ kind: "NEW_TASK", from: runtime.self, text: plan.message, sentAt: now }],
      followupQueued: false,
      undelivered: [],
      ...(forkTranscript !== undefined && { forkTranscript }),
      ...(worktree && { worktree }),
    };
    const state: ChildState = childState(record);
    runtime.children.set(plan.path, state);
    if (worktree && finishCheckout) {
      // The first turn starts before every file is written (its tool calls wait for them).
      void runtime.worktrees.adopt(worktree, finishCheckout);
      // Removal waits for a checkout under way (and starts one not begun), then removes.
      const adopted = worktree;
      releases.push(() => runtime.worktrees.remove(adopted).catch(() => undefined));
    }
    await runtime.requestTurn(state, "spawn");
    const queuePosition = runtime.queuePosition(plan.path);
    // Waiting for a turn slot, no child is starting: the files can be written now.
    if (worktree && finishCheckout && queuePosition !== undefined) runtime.worktrees.startCheckout(worktree);
    return {
      agent_name: plan.path,
      nickname,
      role: plan.role,
      model: record.model,
      reasoning: record.reasoning,
      agent_status: record.status,
      ...(queuePosition !== undefined && { queue_position: queuePosition }),
      ...(worktree && { worktree: { path: worktree.path, branch: worktree.branch, base_commit: worktree.baseCommit } }),
    };
  } catch (err) {
    runtime.children.delete(plan.path);
    for (const release of releases.reverse()) await release().catch(() => undefined);
    throw err;
  }
}
