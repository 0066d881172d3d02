/** The pure parts of `bring`: reading git's raw diff, what to do with each path, and the shell form of the command. */
import { describe, expect, it } from "vitest";
import { type ChangedPath, executableAfter, type Present, parseRawDiff, stepFor } from "../../../src/cli/bring-plan.js";
import { branchFactsText, bringCommandLine, recordBranchFacts, shellWord } from "../../../src/contracts/bring.js";

const A = "a".repeat(40);
const B = "b".repeat(40);
const C = "c".repeat(40);
const ZERO = "0".repeat(40);

const change = (base: string | null, head: string | null, mode = "100644"): ChangedPath => ({
  path: "f",
  base: base ? { kind: "blob", blob: base, mode } : { kind: "absent" },
  head: head ? { kind: "blob", blob: head, mode } : { kind: "absent" },
});
const file = (blob: string, executable = false): Present => ({ kind: "file", blob, executable });

describe("bring's plan", () => {
  it("reads git diff-tree -z output, a name with spaces and a newline included", () => {
    const raw = `:100644 100644 ${A} ${B} M\0a b.txt\0:000000 100755 ${ZERO} ${C} A\0new\nline\0:100644 000000 ${A} ${ZERO} D\0gone\0`;
    expect(parseRawDiff(raw)).toEqual([
      {
        path: "a b.txt",
        base: { kind: "blob", blob: A, mode: "100644" },
        head: { kind: "blob", blob: B, mode: "100644" },
      },
      { path: "new\nline", base: { kind: "absent" }, head: { kind: "blob", blob: C, mode: "100755" } },
      { path: "gone", base: { kind: "blob", blob: A, mode: "100644" }, head: { kind: "absent" } },
    ]);
  });

  it("takes the agent's version only where yours is still the base; merges where you changed it too", () => {
    expect(stepFor(change(A, B), file(A)).kind).toBe("take");
    expect(stepFor(change(A, B), file(B)).kind).toBe("already");
    expect(stepFor(change(A, B), file(C)).kind).toBe("merge");
    expect(stepFor(change(null, B), { kind: "absent" }).kind).toBe("take");
    expect(stepFor(change(null, B), file(C)).kind).toBe("merge");
    expect(stepFor(change(A, null), file(A)).kind).toBe("take");
    expect(stepFor(change(A, null), { kind: "absent" }).kind).toBe("already");
  });

  it("keeps yours where no line merge can join the two, and says why", () => {
    expect(stepFor(change(A, null), file(C))).toEqual({
      kind: "conflict",
      why: "the agent deleted it and you changed it: yours is kept",
      besideToo: false,
    });
    expect(stepFor(change(A, B), { kind: "absent" })).toMatchObject({ kind: "conflict", besideToo: true });
    expect(stepFor(change(A, B), { kind: "other" })).toMatchObject({ kind: "conflict", besideToo: true });
    expect(stepFor(change(A, B, "120000"), { kind: "symlink", blob: C })).toMatchObject({ kind: "conflict" });
    expect(stepFor(change(A, B, "160000"), { kind: "other" })).toMatchObject({
      kind: "conflict",
      why: "a submodule: bring it in inside the submodule",
    });
  });

  it("gives a file the agent's executable bit when only the agent changed it", () => {
    expect(executableAfter(change(A, B, "100755"), file(A, true))).toBe(true);
    // You made it not executable since the agent started: that stays.
    expect(executableAfter(change(A, B, "100755"), file(A, false))).toBe(false);
    const madeExecutable: ChangedPath = { ...change(A, A), head: { kind: "blob", blob: A, mode: "100755" } };
    expect(executableAfter(madeExecutable, file(A, false))).toBe(true);
    const youToo: ChangedPath = { ...change(A, B, "100755"), head: { kind: "blob", blob: B, mode: "100644" } };
    expect(executableAfter(youToo, file(C, false))).toBe(false);
  });
});

describe("the command and the facts a person is shown", () => {
  it("quotes the program only when the shell would read something in it", () => {
    expect(bringCommandLine("/opt/pi/bin/subagent-wrapper", A, B)).toBe(`/opt/pi/bin/subagent-wrapper bring ${A} ${B}`);
    expect(bringCommandLine("/home/Jo's files/bin/subagent-wrapper", A, B)).toBe(
      `'/home/Jo'\\''s files/bin/subagent-wrapper' bring ${A} ${B}`,
    );
    expect(shellWord("$HOME")).toBe("'$HOME'");
  });

  it("says the range, how many files changed and the first three", () => {
    const facts = { base_commit: A, head_commit: B, changed_files: ["x"] };
    expect(branchFactsText(facts)).toBe("aaaaaaa..bbbbbbb, 1 file: x");
    expect(branchFactsText({ ...facts, changed_files: ["a", "b", "c", "d"], changed_files_total: 70 })).toBe(
      "aaaaaaa..bbbbbbb, 70 files: a, b, c +67 more",
    );
    expect(branchFactsText({ ...facts, changed_files: [] })).toBe("aaaaaaa..bbbbbbb, no change");
  });

  it("reads a record's worktree tolerantly: nothing before a turn has ended or when a field is off", () => {
    const worktree = { baseCommit: A, head: { commit: B, changedFiles: ["x", 3], changedFilesTotal: 9 } };
    expect(recordBranchFacts(worktree)).toEqual({
      base_commit: A,
      head_commit: B,
      changed_files: ["x"],
      changed_files_total: 9,
    });
    expect(recordBranchFacts({ baseCommit: A })).toBeUndefined();
    expect(recordBranchFacts({ baseCommit: "main", head: { commit: B, changedFiles: [] } })).toBeUndefined();
    expect(recordBranchFacts(undefined)).toBeUndefined();
  });
});
