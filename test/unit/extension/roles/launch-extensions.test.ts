import { describe, expect, it } from "vitest";
import {
  childGateExtensions,
  discoversExtensions,
  launchExtensions,
} from "../../../../src/extension/roles/launch-extensions.js";

describe("the extensions this pi was started with", () => {
  it("are its -e / --extension entries, paths resolved against its cwd, sources (npm:, git:) as given", () => {
    expect(
      launchExtensions(
        ["-e", "gates/permission-gate.ts", "--model", "x/y", "--extension", "/abs/q.ts", "-e", "npm:@me/guard", "-e"],
        "/work",
      ),
    ).toEqual(["/work/gates/permission-gate.ts", "/abs/q.ts", "npm:@me/guard"]);
  });
});

const OWN = { root: "/pkg", name: "pi-subagent-tree" };

describe("what a child on this machine loads of them", () => {
  const launched = [
    "/work/gates/permission-gate.ts",
    "/work/ext/protected-paths/index.ts",
    "npm:@me/noisy-status",
    "/pkg/dist/extension/index.js",
    "/pkg/dist/in-child/task-extension.js",
    "/work/gates/permission-gate.ts",
    "/pkg",
    "npm:pi-subagent-tree@0.1.0",
    "npm:pi-subagent-tree-extras",
    "/pkg/node_modules/pi-coding-agent/examples/extensions/question.ts",
  ];

  it("every one, once, but this package (its folder, its files, its name on npm; not its dependencies)", () => {
    expect(childGateExtensions(launched, [], OWN)).toEqual([
      "/work/gates/permission-gate.ts",
      "/work/ext/protected-paths/index.ts",
      "npm:@me/noisy-status",
      "npm:pi-subagent-tree-extras",
      "/pkg/node_modules/pi-coding-agent/examples/extensions/question.ts",
    ]);
  });

  it("child_extensions.exclude leaves out by path, file name, name, folder name or package", () => {
    expect(childGateExtensions(launched, ["permission-gate"], OWN)).not.toContain("/work/gates/permission-gate.ts");
    expect(childGateExtensions(launched, ["permission-gate.ts"], OWN)).not.toContain("/work/gates/permission-gate.ts");
    expect(childGateExtensions(launched, ["/work/gates/permission-gate.ts"], OWN)).not.toContain(
      "/work/gates/permission-gate.ts",
    );
    expect(childGateExtensions(launched, ["protected-paths"], OWN)).not.toContain("/work/ext/protected-paths/index.ts");
    expect(childGateExtensions(launched, ["@me/noisy-status"], OWN)).not.toContain("npm:@me/noisy-status");
    // A name that is only part of one leaves nothing out.
    expect(childGateExtensions(launched, ["gate"], OWN)).toHaveLength(5);
  });
});

describe("whether this pi loaded what it discovers", () => {
  it("yes, unless started with -ne / --no-extensions (a child of the tree is: its gates come as -e)", () => {
    expect(discoversExtensions(["--mode", "json", "-e", "/g.ts"])).toBe(true);
    expect(discoversExtensions(["--mode", "json", "-ne", "-e", "/g.ts"])).toBe(false);
    expect(discoversExtensions(["--no-extensions"])).toBe(false);
  });
});
