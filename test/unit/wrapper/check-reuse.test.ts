/**
 * The workspace fingerprint a check's result is reused on: the content (tracked and untracked,
 * not ignored), not the commits — the same files before and after a commit fingerprint alike,
 * any change of a file, its mode, a new or a removed file is another workspace.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { workspaceFingerprint } from "../../../src/wrapper/check-reuse.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function repository(): { dir: string; git: (...args: string[]) => void; write: (file: string, text: string) => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "psa-fingerprint-"));
  dirs.push(dir);
  const git = (...args: string[]) =>
    void execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: dir, stdio: "ignore" });
  const write = (file: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
  };
  git("init", "-q");
  write("a.txt", "a\n");
  write("src/b.txt", "b\n");
  write("src/c.txt", "c\n");
  write(".gitignore", "build/\n");
  git("add", "-A");
  git("commit", "-qm", "start");
  return { dir, git, write };
}

describe("workspaceFingerprint", () => {
  it("the same content before and after its commit is the same workspace; from a subfolder too", async () => {
    const { dir, git, write } = repository();
    const clean = await workspaceFingerprint(dir);
    write("src/b.txt", "b changed\n");
    write("new.txt", "new\n");
    write("src/a-new.txt", "new in src\n");
    fs.rmSync(path.join(dir, "src/c.txt"));
    const dirty = await workspaceFingerprint(dir);
    expect(dirty).not.toBe(clean);
    expect(await workspaceFingerprint(path.join(dir, "src"))).toBe(dirty);
    git("add", "-A");
    expect(await workspaceFingerprint(dir)).toBe(dirty);
    git("commit", "-qm", "work");
    expect(await workspaceFingerprint(dir)).toBe(dirty);
  });

  it("a changed file, mode, a new file or a removed one is another workspace; an ignored file is not", async () => {
    const { dir, write } = repository();
    const seen = new Set([await workspaceFingerprint(dir)]);
    write("build/out.js", "ignored\n");
    expect(seen.has(await workspaceFingerprint(dir))).toBe(true);
    write("a.txt", "A\n");
    seen.add(await workspaceFingerprint(dir));
    fs.chmodSync(path.join(dir, "a.txt"), 0o755);
    seen.add(await workspaceFingerprint(dir));
    write("z.txt", "z\n");
    seen.add(await workspaceFingerprint(dir));
    fs.rmSync(path.join(dir, "src/b.txt"));
    seen.add(await workspaceFingerprint(dir));
    expect(seen.size).toBe(5);
  });

  it("outside a git repository: none (nothing is reused)", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "psa-fingerprint-"));
    dirs.push(dir);
    expect(await workspaceFingerprint(dir)).toBeUndefined();
  });
});
