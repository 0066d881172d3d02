/** folderNames on a real temp folder: its names, and none for what cannot be read as a folder. */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { folderNames } from "../../../src/lib/folder-names.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "psa-folder-names-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

it("gives every name in the folder, files and folders alike", async () => {
  await writeFile(path.join(dir, "1.json"), "{}");
  await mkdir(path.join(dir, "delivered"));
  expect(folderNames(dir).sort()).toEqual(["1.json", "delivered"]);
});

it.each([
  ["a folder not made yet", "missing"],
  ["a file", "plain.txt"],
])("gives none for %s, without throwing", async (_what, name) => {
  await writeFile(path.join(dir, "plain.txt"), "x");
  expect(folderNames(path.join(dir, name))).toEqual([]);
});
