/** When a command word might have meant a meta file of that name. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { subcommandShadowNote } from "../../../src/cli/commands.js";

const cwd = mkdtempSync(path.join(os.tmpdir(), "psa-commands-"));
writeFileSync(path.join(cwd, "doctor"), "{}");
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

const argv = (...words: string[]) => ["node", "subagent-wrapper", ...words];

describe("subcommandShadowNote", () => {
  it("speaks when a command word is given alone and a file of that name is here", () => {
    expect(subcommandShadowNote(argv("doctor"), cwd)).toBe(
      'subagent-wrapper: note: "doctor" is the doctor command; to run the meta file ./doctor, use: subagent-wrapper run doctor',
    );
  });

  it.each([
    ["the word has arguments", argv("doctor", "--json")],
    ["no file of that name", argv("tail")],
    ["not a command word", argv("meta.json")],
    ["nothing at all", argv()],
  ])("is silent when %s", (_name, args) => {
    expect(subcommandShadowNote(args, cwd)).toBeUndefined();
  });
});
