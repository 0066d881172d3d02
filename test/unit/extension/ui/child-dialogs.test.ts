import { describe, expect, it } from "vitest";
import { dialogRouteOf, rootSessionId } from "../../../../src/extension/ui/child-dialogs.js";

const root = { self: "/root", isRoot: true, treeDir: undefined };
const child = { self: "/root/mid", isRoot: false, treeDir: "/trees/sess-root" };

describe("a child's dialogs: what this process decides and hands down", () => {
  it("the root decides the route from its setting and its UI; a child takes what was handed down", () => {
    expect(dialogRouteOf(root, undefined, true, {})).toBe("person");
    expect(dialogRouteOf(root, undefined, false, {})).toBe("parent");
    expect(dialogRouteOf(root, "deny", true, {})).toBe("deny");
    // A child in RPC mode has a UI, but its own settings and UI do not decide: the root's word does.
    expect(dialogRouteOf(child, "person", true, { PI_SUBAGENTS_DIALOG_ROUTE: "parent" })).toBe("parent");
    expect(dialogRouteOf(child, "deny", true, { PI_SUBAGENTS_DIALOG_ROUTE: "person" })).toBe("person");
    // A parent that handed nothing (or nonsense) down: its model answers.
    expect(dialogRouteOf(child, "person", true, {})).toBe("parent");
    expect(dialogRouteOf(child, "person", true, { PI_SUBAGENTS_DIALOG_ROUTE: "everyone" })).toBe("parent");
  });

  it("every child's environment names the root's session", () => {
    expect(rootSessionId(root, "sess-root", {})).toBe("sess-root");
    expect(rootSessionId(child, "sess-child", { PI_SUBAGENT_PARENT_SESSION: "sess-root" })).toBe("sess-root");
    // A parent that predates the variable: the tree directory is named by the root's session.
    expect(rootSessionId(child, "sess-child", {})).toBe("sess-root");
  });
});
