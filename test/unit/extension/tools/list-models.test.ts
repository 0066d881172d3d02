import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { enabledModelsSetting } from "../../../../src/extension/tools/list-models.js";

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
