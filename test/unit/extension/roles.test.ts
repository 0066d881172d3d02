import { describe, expect, it } from "vitest";
import { describeRegistry, getRole, resolveChildTools, ROLE_NAMES, type RegistryTool } from "../../../src/extension/roles.js";

const OWN = "/pkg/pi-subagent-tree/src/extension/index.ts";
const builtin = (name: string) => ({
  name,
  sourceInfo: { path: `<builtin:${name}>`, source: "builtin", scope: "temporary", origin: "top-level" },
});
const fromFile = (name: string, path: string) => ({
  name,
  sourceInfo: { path, source: "cli", scope: "temporary", origin: "top-level", baseDir: "/ext" },
});

// What pi 0.73.1's getAllTools() returned with `-e ./ext.ts` (checked by running pi), plus
// this package's tools, another extension and an SDK tool.
const RAW_REGISTRY = [
  ...["read", "bash", "edit", "write", "grep", "find", "ls"].map(builtin),
  fromFile("ast_grep_run", "/ext/ast-grep/index.ts"),
  fromFile("ast_grep_scan", "/ext/ast-grep/index.ts"),
  fromFile("spawn_agent", OWN),
  fromFile("wait_agent", OWN),
  fromFile("jira", "/ext/jira.ts"),
  { name: "sdk_tool", sourceInfo: { path: "<sdk:sdk_tool>", source: "sdk", scope: "temporary", origin: "top-level" } },
];
const REGISTRY = describeRegistry(RAW_REGISTRY);
// pi's default active set plus every active extension tool.
const PARENT_ACTIVE = ["read", "bash", "edit", "write", "ast_grep_run", "spawn_agent", "wait_agent", "jira", "sdk_tool"];

describe("roles", () => {
  it("has the three built-in roles with actionable descriptions", () => {
    expect(ROLE_NAMES).toEqual(["scout", "implementation", "specialist"]);
    for (const name of ROLE_NAMES) expect(getRole(name)?.description).toMatch(/\.$/);
    expect(getRole("nonexistent")).toBeUndefined();
  });

  it.each([
    ["scout", ["read", "grep", "find", "ls"], "low", true],
    ["implementation", ["read", "write", "edit", "bash", "grep", "find", "ls"], "medium", false],
    ["specialist", "parent", "high", false],
  ])("%s", (name, tools, reasoning, requiresForkNone) => {
    expect(getRole(name)).toMatchObject({ name, tools, reasoning, requiresForkNone });
  });
});

describe("describeRegistry (getAllTools sourceInfo)", () => {
  it("marks built-ins, keeps extension files, drops unloadable synthetic sources", () => {
    expect(REGISTRY.slice(6, 9)).toEqual([
      { name: "ls", builtin: true },
      { name: "ast_grep_run", sourcePath: "/ext/ast-grep/index.ts", builtin: false },
      { name: "ast_grep_scan", sourcePath: "/ext/ast-grep/index.ts", builtin: false },
    ]);
    expect(REGISTRY.at(-1)).toEqual({ name: "sdk_tool", builtin: false });
  });

  it.each([
    ["no sourceInfo", { name: "x" }, { name: "x", builtin: false }],
    ["a non-object sourceInfo", { name: "x", sourceInfo: "weird" }, { name: "x", builtin: false }],
    ["builtin by path only", { name: "x", sourceInfo: { path: "<builtin:x>" } }, { name: "x", builtin: true }],
    ["an inline extension", { name: "x", sourceInfo: { path: "<inline>", source: "inline" } }, { name: "x", builtin: false }],
    ["a package extension", { name: "x", sourceInfo: { path: "/n/pkg/ext.ts", source: "npm:pkg" } }, { name: "x", sourcePath: "/n/pkg/ext.ts", builtin: false }],
  ])("%s", (_label, tool, expected) => {
    expect(describeRegistry([tool])).toEqual([expected]);
  });
});

describe("resolveChildTools", () => {
  const resolve = (role: string | undefined, parentActiveTools = PARENT_ACTIVE, allTools: RegistryTool[] = REGISTRY) =>
    resolveChildTools({ role, parentActiveTools, allTools, ownExtensionPath: OWN });

  it("gives a scout read, grep, find, ls although the parent has only read active (F-02)", () => {
    expect(resolve("scout")).toEqual({ tools: ["read", "grep", "find", "ls"], extensions: [OWN] });
  });

  it("gives implementation its whole list, in role order, and no extension tools", () => {
    expect(resolve("implementation")).toEqual({
      tools: ["read", "write", "edit", "bash", "grep", "find", "ls"],
      extensions: [OWN],
    });
  });

  it("leaves out role tools missing from the registry (a parent started with a --tools allowlist)", () => {
    const narrow = describeRegistry([builtin("read"), builtin("bash"), fromFile("spawn_agent", OWN)]);
    expect(resolve("scout", ["read", "bash"], narrow)).toEqual({ tools: ["read"], extensions: [OWN] });
  });

  it("gives a plain child exactly the parent's loadable active tools and their extensions", () => {
    expect(resolve(undefined)).toEqual({
      tools: ["read", "bash", "edit", "write", "ast_grep_run", "spawn_agent", "wait_agent", "jira"],
      extensions: ["/ext/ast-grep/index.ts", OWN, "/ext/jira.ts"],
    });
  });

  it("treats `default` and the empty string as a plain child", () => {
    expect(resolve("default")).toEqual(resolve(undefined));
    expect(resolve("")).toEqual(resolve(undefined));
  });

  it("gives a specialist the parent's tools like a plain child", () => {
    expect(resolve("specialist")).toEqual(resolve(undefined));
  });

  it("always loads this package's extension, once", () => {
    expect(resolve(undefined, ["read", "grep"])).toEqual({ tools: ["read", "grep"], extensions: [OWN] });
    expect(resolve(undefined, ["read", "read", "jira", "jira"])).toEqual({
      tools: ["read", "jira"],
      extensions: ["/ext/jira.ts", OWN],
    });
  });

  it("drops parent tools the registry does not know", () => {
    expect(resolve(undefined, ["read", "ghost"]).tools).toEqual(["read"]);
  });

  it("throws for an unknown role (validateSpawn reports it first)", () => {
    expect(() => resolve("wizard")).toThrow("unknown agent_type: wizard");
  });
});
