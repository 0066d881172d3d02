import { describe, expect, it } from "vitest";
import {
  agentFolderSegments,
  childPath,
  depthOf,
  isCanonicalPath,
  isStrictDescendant,
  NICKNAMES,
  parentOf,
  pickNickname,
  resolveTarget,
  TASK_NAME_PATTERN,
} from "../../../../src/extension/tree/paths.js";

describe("task names and canonical paths", () => {
  it.each([
    ["scout_one", true],
    ["a1", true],
    ["Scout", false],
    ["scout-one", false],
    ["", false],
    ["..", false],
    ["a/b", false],
    ["a b", false],
  ])("TASK_NAME_PATTERN %j → %s", (name, ok) => {
    expect(TASK_NAME_PATTERN.test(name)).toBe(ok);
  });

  it.each([
    ["/root", true],
    ["/root/a", true],
    ["/root/mid/leaf_2", true],
    ["/root/", false],
    ["/rootx", false],
    ["/rootx/a", false],
    ["root/a", false],
    ["/root//a", false],
    ["/root/../etc", false],
    ["/root/./a", false],
    ["/root/A", false],
    ["/other/a", false],
    ["", false],
  ])("isCanonicalPath(%j) → %s", (path, ok) => {
    expect(isCanonicalPath(path)).toBe(ok);
  });

  it("childPath builds below a parent and refuses bad names or parents", () => {
    expect(childPath("/root", "scout_one")).toBe("/root/scout_one");
    expect(childPath("/root/mid", "leaf")).toBe("/root/mid/leaf");
    expect(() => childPath("/root", "../x")).toThrow();
    expect(() => childPath("/root", "")).toThrow();
    expect(() => childPath("/tmp", "a")).toThrow();
  });

  it.each([
    ["/root", undefined, 0],
    ["/root/a", "/root", 1],
    ["/root/a/b", "/root/a", 2],
    ["/root/a/b/c", "/root/a/b", 3],
  ])("parentOf/depthOf(%j)", (path, parent, depth) => {
    expect(parentOf(path)).toBe(parent);
    expect(depthOf(path)).toBe(depth);
  });

  it("depthOf and parentOf reject non-canonical paths", () => {
    expect(() => depthOf("/tmp/a")).toThrow();
    expect(() => parentOf("/root/..")).toThrow();
  });
});

describe("resolveTarget", () => {
  it.each([
    ["/root", "mid", "/root/mid"],
    ["/root", "mid/leaf", "/root/mid/leaf"],
    ["/root/mid", "leaf", "/root/mid/leaf"],
    ["/root/mid", "/root/other", "/root/other"],
    ["/root/mid", "/root", "/root"],
    ["/root", "  mid  ", "/root/mid"],
    ["/root", "mid/", "/root/mid"],
    ["/root", "/root/mid/", "/root/mid"],
    ["/root", "/root/", "/root"],
    ["/root", "root", "/root/root"],
  ])("(%j, %j) → %j", (caller, target, expected) => {
    expect(resolveTarget(caller, target)).toBe(expected);
  });

  it.each([
    ["empty", ""],
    ["blank", "   "],
    ["a lone slash", "/"],
    ["parent step", ".."],
    ["relative parent step", "mid/../x"],
    ["current dir", "."],
    ["dot segment", "./mid"],
    ["uppercase", "Mid"],
    ["hyphen", "mid-1"],
    ["double slash", "mid//leaf"],
    ["two trailing slashes", "mid//"],
    ["outside the tree", "/etc/passwd"],
    ["a lookalike root", "/rootx/a"],
    ["escape through canonical", "/root/../x"],
  ])("rejects %s (%j)", (_label, target) => {
    expect(resolveTarget("/root/mid", target)).toBeUndefined();
  });

  it("rejects any target for a malformed caller", () => {
    expect(resolveTarget("/tmp", "a")).toBeUndefined();
  });
});

describe("isStrictDescendant", () => {
  it.each([
    ["/root", "/root/a", true],
    ["/root", "/root/a/b", true],
    ["/root/a", "/root/a/b", true],
    ["/root", "/root", false],
    ["/root/a", "/root/a", false],
    ["/root/a", "/root/ab", false],
    ["/root/a", "/root", false],
    ["/root/a", "/root/b/a", false],
  ])("(%j, %j) → %s", (ancestor, path, expected) => {
    expect(isStrictDescendant(ancestor, path)).toBe(expected);
  });
});

describe("agentFolderSegments", () => {
  it.each([
    ["/root", []],
    ["/root/a", ["a"]],
    ["/root/mid/leaf", ["mid", "leaf"]],
  ])("%j → %j", (path, segments) => {
    expect(agentFolderSegments(path)).toEqual(segments);
  });

  it.each(["/root/../../etc", "/root/a/..", "/etc", "", "/root/a/", "relative"])("throws for %j", (path) => {
    expect(() => agentFolderSegments(path)).toThrow();
  });
});

describe("nicknames", () => {
  it("starts with the user's six, has at least 64 unique ASCII names", () => {
    expect(NICKNAMES.slice(0, 6)).toEqual(["Euclid", "Archimedes", "Ptolemy", "Hypatia", "Avicenna", "Averroes"]);
    expect(NICKNAMES.length).toBeGreaterThanOrEqual(64);
    expect(new Set(NICKNAMES).size).toBe(NICKNAMES.length);
    for (const name of NICKNAMES) expect(name).toMatch(/^[\x20-\x7e]+$/);
  });

  it("hands out the first unused name in list order", () => {
    expect(pickNickname(new Set())).toBe("Euclid");
    expect(pickNickname(new Set(["Euclid", "Archimedes"]))).toBe("Ptolemy");
    expect(pickNickname(new Set(["Archimedes"]))).toBe("Euclid");
  });

  it("numbers names once the list runs out, and never fails", () => {
    const taken = new Set<string>(NICKNAMES);
    expect(pickNickname(taken)).toBe("Euclid II");
    taken.add("Euclid II");
    expect(pickNickname(taken)).toBe("Archimedes II");
    for (const name of NICKNAMES) taken.add(`${name} II`);
    expect(pickNickname(taken)).toBe("Euclid III");
    for (let i = 0; i < NICKNAMES.length * 3; i++) taken.add(pickNickname(taken));
    expect(pickNickname(taken)).toBe("Euclid VI");
    expect(taken.size).toBe(NICKNAMES.length * 5);
  });
});
