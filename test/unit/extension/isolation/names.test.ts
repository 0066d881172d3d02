import path from "node:path";
import { describe, expect, it } from "vitest";
import { branchName, worktreeCwd, worktreeName, worktreePathFor } from "../../../../src/extension/isolation/names.js";
import { isTreeTag, treeTag } from "../../../../src/extension/tree/paths.js";

describe("tree tags", () => {
  it("are 8 lowercase hex characters, different each time", () => {
    const tags = new Set(Array.from({ length: 2000 }, () => treeTag()));
    for (const tag of tags) expect(tag).toMatch(/^[0-9a-f]{8}$/);
    expect(tags.size).toBeGreaterThan(1990); // 2000 draws of 2^32: a collision is ~0.05 %
  });

  it.each([
    ["7f3a9c2e", true],
    ["00000000", true],
    ["7F3A9C2E", false],
    ["7f3a9c2", false],
    ["7f3a9c2e0", false],
    ["7f3a9c2g", false],
  ])("isTreeTag(%j) → %s", (tag, ok) => {
    expect(isTreeTag(tag)).toBe(ok);
  });
});

describe("worktree and branch names", () => {
  it.each([
    ["/root/checker", "checker"],
    ["/root/lead/checker", "lead-checker"],
    ["/root/a_b/c", "a_b-c"],
    ["/root/a/b_c", "a-b_c"],
    ["/root/x1/y2/z3", "x1-y2-z3"],
  ])("worktreeName(%j) → %j", (agentPath, name) => {
    expect(worktreeName(agentPath)).toBe(name);
  });

  it.each([
    "/root",
    "/root/",
    "/rootx/a",
    "root/a",
    "/root//a",
    "/root/a/",
    "/root/../etc",
    "/root/./a",
    "/root/A",
    "/root/a-b",
    "/root/a b",
    "",
  ])("worktreeName rejects %j", (agentPath) => {
    expect(() => worktreeName(agentPath)).toThrow(/not the canonical path of an agent below \/root/);
  });

  it("branchName is subagent/<tag>-<segments>", () => {
    expect(branchName("7f3a9c2e", "/root/lead/checker")).toBe("subagent/7f3a9c2e-lead-checker");
    expect(() => branchName("7F3A9C2E", "/root/lead")).toThrow(/tree tag/);
    expect(() => branchName("7f3a9c2e", "/root")).toThrow(/canonical/);
  });

  it("worktreePathFor is flat under <treeDir>/worktrees", () => {
    expect(worktreePathFor("/trees/t1", "/root/lead/checker")).toBe(
      path.join("/trees/t1", "worktrees", "lead-checker"),
    );
    expect(worktreePathFor("/trees/t1", "/root/lead")).toBe(path.join("/trees/t1", "worktrees", "lead"));
  });

  it("worktreeCwd maps the parent's subdir into the worktree and refuses to climb out", () => {
    expect(worktreeCwd("/w/lead", "")).toBe("/w/lead");
    expect(worktreeCwd("/w/lead", "src/lib")).toBe("/w/lead/src/lib");
    expect(worktreeCwd("/w/lead", "a dir/ü")).toBe("/w/lead/a dir/ü");
    for (const bad of ["..", "../x", "a/../../x", "/etc"])
      expect(() => worktreeCwd("/w/lead", bad)).toThrow(/not a subdirectory/);
  });
});
