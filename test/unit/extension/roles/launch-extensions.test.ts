import { describe, expect, it } from "vitest";
import { childGateExtensions, launchExtensions } from "../../../../src/extension/roles/launch-extensions.js";

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

describe("what a child on this machine loads of them", () => {
  const launched = [
    "/work/gates/permission-gate.ts",
    "/work/ext/protected-paths/index.ts",
    "npm:@me/noisy-status",
    "/pkg/dist/extension/index.js",
    "/pkg/dist/in-child/task-extension.js",
    "/work/gates/permission-gate.ts",
  ];

  it("every one, once, but this package's own files", () => {
    expect(childGateExtensions(launched, [], "/pkg")).toEqual([
      "/work/gates/permission-gate.ts",
      "/work/ext/protected-paths/index.ts",
      "npm:@me/noisy-status",
    ]);
  });

  it("child_extensions.exclude leaves out by path, file name, name, folder name or package", () => {
    expect(childGateExtensions(launched, ["permission-gate"], "/pkg")).not.toContain("/work/gates/permission-gate.ts");
    expect(childGateExtensions(launched, ["permission-gate.ts"], "/pkg")).not.toContain(
      "/work/gates/permission-gate.ts",
    );
    expect(childGateExtensions(launched, ["/work/gates/permission-gate.ts"], "/pkg")).not.toContain(
      "/work/gates/permission-gate.ts",
    );
    expect(childGateExtensions(launched, ["protected-paths"], "/pkg")).toEqual([
      "/work/gates/permission-gate.ts",
      "npm:@me/noisy-status",
    ]);
    expect(childGateExtensions(launched, ["@me/noisy-status"], "/pkg")).toEqual([
      "/work/gates/permission-gate.ts",
      "/work/ext/protected-paths/index.ts",
    ]);
    // A name that is only part of one leaves nothing out.
    expect(childGateExtensions(launched, ["gate"], "/pkg")).toHaveLength(3);
  });
});
