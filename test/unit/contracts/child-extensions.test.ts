import { describe, expect, it } from "vitest";
import {
  enabledExtensionPaths,
  farDiscoveryPlace,
  type PiDiscoveryApi,
  type ResolvedExtension,
  resolveExtensions,
} from "../../../src/contracts/child-extensions.js";

describe("what pi discovered, as a child is handed it", () => {
  const resolved: ResolvedExtension[] = [
    { path: "/home/me/.pi/agent/extensions/permission-gate.ts", enabled: true, metadata: { source: "auto" } },
    { path: "/home/me/.pi/agent/extensions/off.ts", enabled: false, metadata: { source: "auto" } },
    { path: "/proj/.pi/extensions/guard/index.ts", enabled: true, metadata: { source: "auto" } },
    {
      path: "/npm/node_modules/pi-subagent-tree/extensions/index.js",
      enabled: true,
      metadata: { source: "npm:pi-subagent-tree" },
    },
    {
      path: "/npm/node_modules/pi-subagent-tree/x.js",
      enabled: true,
      metadata: { source: "npm:pi-subagent-tree@0.1.0" },
    },
    {
      path: "/npm/node_modules/pi-subagent-tree-extras/e.js",
      enabled: true,
      metadata: { source: "npm:pi-subagent-tree-extras" },
    },
    { path: "builtin:mcp", enabled: true, metadata: { source: "builtin:mcp" } },
  ];

  it("the enabled paths, in pi's order; not a disabled one, not this package by its name, not a built-in", () => {
    expect(enabledExtensionPaths(resolved, "pi-subagent-tree")).toEqual([
      "/home/me/.pi/agent/extensions/permission-gate.ts",
      "/proj/.pi/extensions/guard/index.ts",
      "/npm/node_modules/pi-subagent-tree-extras/e.js",
    ]);
  });

  it("pi is asked for the place as it is (trust included) and never installs: a missing package is skipped", async () => {
    const calls: unknown[] = [];
    let answer: string | undefined;
    const api: PiDiscoveryApi = {
      SettingsManager: {
        create: (cwd, agentDir, options) => {
          calls.push({ cwd, agentDir, options });
          return { settings: true };
        },
      },
      DefaultPackageManager: class {
        constructor(options: unknown) {
          calls.push(options);
        }
        async resolve(onMissing?: (source: string) => Promise<"install" | "skip" | "error">) {
          answer = await onMissing?.("npm:not-here");
          return { extensions: resolved.slice(0, 2) };
        }
      },
    };
    const got = await resolveExtensions(api, { cwd: "/proj", agentDir: "/agent", projectTrusted: false });
    expect(got).toEqual(resolved.slice(0, 2));
    expect(answer).toBe("skip");
    expect(calls).toEqual([
      { cwd: "/proj", agentDir: "/agent", options: { projectTrusted: false } },
      { cwd: "/proj", agentDir: "/agent", settingsManager: { settings: true } },
    ]);
  });
});

describe("where a far side asks", () => {
  it("its user's agent dir (PI_CODING_AGENT_DIR, ~ expanded), an empty folder as the project, untrusted", () => {
    expect(farDiscoveryPlace({ PI_CODING_AGENT_DIR: "/far/agent" }, "/scratch/run")).toEqual({
      cwd: "/scratch/run",
      agentDir: "/far/agent",
      projectTrusted: false,
    });
  });
});
