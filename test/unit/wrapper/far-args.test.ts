/**
 * pi's arguments on a far side (src/wrapper/remote/index.ts farArgs): only the task extension
 * goes to another machine (the tree's extension needs the tree's folder, which stays here); a
 * sandbox, on this machine, keeps every extension.
 */
import { describe, expect, it } from "vitest";
import type { ResolvedRunner } from "../../../src/contracts/runners.js";
import { TASK_EXTENSION_PATH } from "../../../src/wrapper/child.js";
import { farArgs } from "../../../src/wrapper/remote/index.js";

const ARGS = [
  "--mode",
  "json",
  "--no-extensions",
  "--extension",
  TASK_EXTENSION_PATH,
  "--extension",
  "/here/dist/extension/index.js",
  "--extension",
  "/here/other.ts",
  "--session",
  "/tree/session.jsonl",
];
const ssh: ResolvedRunner = { name: "far", kind: "ssh", host: "me@far", capacity: 2 };
const sandbox: ResolvedRunner = { name: "box", kind: "sandbox" };

describe("farArgs", () => {
  it("keeps only the task extension for a runner on another machine, every other argument as it was", () => {
    expect(farArgs(ssh, ARGS)).toEqual([
      "--mode",
      "json",
      "--no-extensions",
      "--extension",
      TASK_EXTENSION_PATH,
      "--session",
      "/tree/session.jsonl",
    ]);
    expect(farArgs({ name: "hpc", kind: "slurm", capacity: 4 }, ARGS)).toEqual(farArgs(ssh, ARGS));
  });

  it("keeps every extension for a sandbox (it sees this machine's files)", () => {
    expect(farArgs(sandbox, ARGS)).toEqual(ARGS);
  });
});
