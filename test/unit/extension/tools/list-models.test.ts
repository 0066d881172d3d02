import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { TREE_FILES } from "../../../../src/contracts/layout.js";
import type { ToolDeps } from "../../../../src/extension/tools/common.js";
import { enabledModelsSetting, listModelsTool } from "../../../../src/extension/tools/list-models.js";

let home: string;
let cwd: string;

beforeEach(async () => {
  home = await mkdtemp(path.join(os.tmpdir(), "list-models-home-"));
  cwd = path.join(home, "project");
  await mkdir(cwd);
  vi.stubEnv("HOME", home);
});

afterEach(async () => {
  vi.unstubAllEnvs();
  await rm(home, { recursive: true, force: true });
});

async function settings(dir: string, value: object): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, "settings.json"), JSON.stringify(value));
}

describe("enabledModels for list_models", () => {
  it("reads pi's agent dir with `~` expanded, as pi does (PI_CODING_AGENT_DIR=~/x)", async () => {
    await settings(path.join(home, "elsewhere"), { enabledModels: ["fake/*"] });
    vi.stubEnv("PI_CODING_AGENT_DIR", "~/elsewhere");
    expect(enabledModelsSetting(cwd)).toEqual({ enabledModels: ["fake/*"] });
  });

  it("defaults to ~/.pi/agent, and the project's .pi/settings.json wins over it", async () => {
    vi.stubEnv("PI_CODING_AGENT_DIR", "");
    await settings(path.join(home, ".pi", "agent"), { enabledModels: ["global/*"] });
    expect(enabledModelsSetting(cwd)).toEqual({ enabledModels: ["global/*"] });
    await settings(path.join(cwd, ".pi"), { enabledModels: ["project/*"] });
    expect(enabledModelsSetting(cwd)).toEqual({ enabledModels: ["project/*"] });
  });

  it("is empty when no settings name a scope, or a settings file is not JSON", async () => {
    vi.stubEnv("PI_CODING_AGENT_DIR", path.join(home, "agent"));
    expect(enabledModelsSetting(cwd)).toEqual({});
    await mkdir(path.join(home, "agent"));
    await writeFile(path.join(home, "agent", "settings.json"), "{ not json");
    expect(enabledModelsSetting(cwd)).toEqual({});
  });
});

describe("list_models and the tree's cool-downs", () => {
  const registry = { getAvailable: () => [{ provider: "fake", id: "fast", reasoning: false }] };
  const cooling = {
    version: 1,
    models: { "fake/fast": { until: "2999-01-01T00:00:00.000Z", error_class: "rate_limit", message: "429" } },
  };
  const call = async (env: NodeJS.ProcessEnv, runtime: () => Promise<never>) => {
    const tool = listModelsTool({ runtime } as unknown as ToolDeps, env);
    const result = await tool.execute("id", {}, undefined, undefined, { cwd, modelRegistry: registry } as never);
    return JSON.parse((result.content[0] as { text: string }).text) as { models: Array<{ cooling_until?: string }> };
  };

  it("a child reads them from the tree directory its environment names, without starting the tree", async () => {
    const treeDir = path.join(home, "tree");
    await mkdir(treeDir);
    await writeFile(path.join(treeDir, TREE_FILES.cooldowns), JSON.stringify(cooling));
    const runtime = vi.fn(async (): Promise<never> => {
      throw new Error("the tree was started");
    });
    vi.stubEnv("PI_CODING_AGENT_DIR", path.join(home, "agent"));
    const listed = await call({ PI_SUBAGENTS_TREE_DIR: treeDir, PI_SUBAGENTS_AGENT_PATH: "/root/a" }, runtime);
    expect(runtime).not.toHaveBeenCalled();
    expect(listed.models[0]?.cooling_until).toBe("2999-01-01T00:00:00.000Z");
  });

  it("a root reads them from its runtime's tree", async () => {
    const treeDir = path.join(home, "root-tree");
    await mkdir(treeDir);
    await writeFile(path.join(treeDir, TREE_FILES.cooldowns), JSON.stringify(cooling));
    const runtime = vi.fn(async () => ({ tree: { root: treeDir } }) as never);
    vi.stubEnv("PI_CODING_AGENT_DIR", path.join(home, "agent"));
    const listed = await call({}, runtime);
    expect(runtime).toHaveBeenCalledOnce();
    expect(listed.models[0]?.cooling_until).toBe("2999-01-01T00:00:00.000Z");
  });
});
