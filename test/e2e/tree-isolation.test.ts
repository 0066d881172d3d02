/**
 * `isolation: "worktree"` end to end: the real pi loading the extension, scripted models,
 * real git repositories inside each scenario's temporary pi home (so every worktree and
 * branch a test makes goes with that home). Each scenario checks what the models received,
 * the branches and worktrees git shows, and that the parent's own repository is untouched.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ONE_LINE_IS_ENOUGH, REPO_ROOT } from "../support/pi-home.js";
import { reply, systemText } from "../support/scripted-llm.js";
import { diag, expectCleanExit, noticesOf, ROOT_RUN, runSpans, SCENARIO_MS } from "../support/stress-scenarios.js";
import type { TreeHarness } from "../support/tree-harness.js";
import {
  expectNoSurvivors,
  type Json,
  Program,
  rootText,
  spawn,
  useTrees,
  waitForAll,
  waitUntil,
} from "../support/tree-harness-extra.js";
import { toolResults } from "../support/tree-llm.js";
import { WRAPPER_BIN } from "../support/wrapper-harness.js";

const tree = useTrees();

/** git as the test's own hand: the scenario's HOME, no system config, never a write of the index by a read. */
function gitEnv(h: TreeHarness): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith("GIT_")) env[name] = value;
  return { ...env, HOME: h.home.home, GIT_CONFIG_NOSYSTEM: "1", GIT_OPTIONAL_LOCKS: "0", GIT_ALLOW_PROTOCOL: "file" };
}

function git(h: TreeHarness, cwd: string, args: string[]): string {
  return execFileSync(
    "git",
    ["-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "protocol.file.allow=always", ...args],
    {
      cwd,
      env: gitEnv(h),
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
}

function write(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

/** The scenario's cwd as a repository with `files` committed (paths relative to it); its path. */
function committedRepository(h: TreeHarness, files: Record<string, string>): string {
  const repo = h.home.cwd;
  git(h, repo, ["init", "-q", "-b", "main"]);
  for (const [file, text] of Object.entries(files)) write(path.join(repo, file), text);
  git(h, repo, ["add", "-A"]);
  git(h, repo, ["commit", "-q", "-m", "initial"]);
  return repo;
}

/**
 * The parent's repository in the scenario's cwd: committed files, then a dirty working
 * tree — a modified file, a staged change, an untracked file, an ignored file and an ignored
 * node_modules the setup command can link.
 */
function dirtyRepository(h: TreeHarness): string {
  const repo = h.home.cwd;
  git(h, repo, ["init", "-q", "-b", "main"]);
  write(path.join(repo, ".gitignore"), "node_modules/\nignored.txt\n");
  write(path.join(repo, "a.txt"), "a\n");
  write(path.join(repo, "src", "b.txt"), "b\n");
  git(h, repo, ["add", "-A"]);
  git(h, repo, ["commit", "-q", "-m", "initial"]);
  write(path.join(repo, "a.txt"), "a, uncommitted\n");
  write(path.join(repo, "src", "b.txt"), "b staged\n");
  git(h, repo, ["add", "src/b.txt"]);
  write(path.join(repo, "new.txt"), "new, untracked\n");
  write(path.join(repo, "ignored.txt"), "secret\n");
  write(path.join(repo, "node_modules", "dep", "index.js"), "module.exports = 1;\n");
  return repo;
}

/** What must not change in the parent's repository: HEAD, the index file byte for byte, the status, the files. */
function parentState(h: TreeHarness, repo: string) {
  return {
    head: git(h, repo, ["rev-parse", "HEAD"]),
    index: createHash("sha256")
      .update(fs.readFileSync(path.join(repo, ".git", "index")))
      .digest("hex"),
    status: git(h, repo, ["status", "--porcelain=v1", "-z", "--untracked-files=all"]),
    staged: git(h, repo, ["diff", "--cached"]),
    files: git(h, repo, ["ls-files", "-z", "--cached", "--others", "--exclude-standard"]),
    branches: git(h, repo, ["branch", "--list", "--format=%(refname:short)"]),
  };
}

const treeTag = (h: TreeHarness): string =>
  (JSON.parse(fs.readFileSync(path.join(h.treeDir(), "tree.json"), "utf8")) as Json).tag;

/** The text of the tool results an agent's last request carried (bash output). */
function toolOutput(h: TreeHarness, agent: string): string {
  return JSON.stringify(toolResults(h.requestsOf(agent).at(-1)!));
}

const isolatedSpawn = (taskName: string, message: string, extra: Json = {}) =>
  spawn({
    task_name: taskName,
    message,
    agent_type: "implementation",
    fork_turns: "none",
    isolation: "worktree",
    ...extra,
  });

/**
 * A `git` first on the root's PATH: the real one, except that the rest of a deferred checkout
 * (`read-tree -m`, run in the new worktree) first runs `before` (a shell snippet), then
 * records in `<dir>/log` whether the child had said it started and when the checkout ended.
 */
function checkoutShim(h: TreeHarness, before: string): { env: Record<string, string>; log: string } {
  const realGit = execFileSync("sh", ["-c", "command -v git"], { encoding: "utf8" }).trim();
  const dir = path.join(h.home.root, "git-shim");
  fs.mkdirSync(dir, { recursive: true });
  const log = path.join(dir, "log");
  const script = [
    "#!/bin/sh",
    'deferred=no; for arg in "$@"; do [ "$arg" = "-m" ] && deferred=yes; done',
    `if [ "$deferred" = yes ]; then`,
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansions, not a template
    '  started="${PWD%/worktrees/*}/checkouts/${PWD##*/}.ready.started"',
    // The child's word may come after a time-based start on a loaded machine: wait for it (20 s at most).
    '  i=0; while [ ! -e "$started" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done',
    `  if [ -e "$started" ]; then echo "child-started" >> ${JSON.stringify(log)}; else echo "child-not-started" >> ${JSON.stringify(log)}; fi`,
    `  ${before}`,
    `  ${JSON.stringify(realGit)} "$@"; code=$?`,
    `  echo "checkout-ended $(date +%s%N) $code" >> ${JSON.stringify(log)}`,
    "  exit $code",
    "fi",
    `exec ${JSON.stringify(realGit)} "$@"`,
    "",
  ].join("\n");
  fs.writeFileSync(path.join(dir, "git"), script, { mode: 0o755 });
  return { env: { PATH: `${dir}${path.delimiter}${h.home.env.PATH ?? process.env.PATH ?? ""}` }, log };
}

/** The root pi in `cwd` (a subdirectory of the repository), as runRoot runs it in the home's cwd. */
function runRootIn(h: TreeHarness, cwd: string, prompt: string, env: Record<string, string> = {}) {
  return h.home.runPi(["--mode", "json", "-np", "-e", REPO_ROOT, prompt], {
    timeoutMs: ROOT_RUN.timeoutMs,
    cwd,
    env: { ...h.home.env, PI_SUBAGENTS_DIR: h.baseDir, ...env },
  });
}

describe("isolation: worktree (real pi, scripted models, real git)", () => {
  it(
    "two isolated implementation children write at once, each from the parent's working state; the parent's repository is untouched",
    async () => {
      const look =
        "cat a.txt src/b.txt new.txt; test -e ignored.txt && echo IGNORED-PRESENT || echo IGNORED-ABSENT; ls node_modules/dep";
      const root = new Program([
        reply.toolCalls([
          {
            name: "spawn_agent",
            args: {
              task_name: "one",
              message: "write one",
              agent_type: "implementation",
              fork_turns: "none",
              isolation: "worktree",
            },
          },
          {
            name: "spawn_agent",
            args: {
              task_name: "two",
              message: "write two",
              agent_type: "implementation",
              fork_turns: "none",
              isolation: "worktree",
            },
          },
        ]),
        waitForAll(["/root/one", "/root/two"]),
        reply.toolCall("list_agents", {}),
        reply.text("ROOT DONE"),
      ]);
      const h = await tree({
        scripts: {
          "/root": root.steps(),
          "/root/one": [
            reply.toolCall("bash", { command: `${look}; echo one > one.txt; echo "one was here" >> a.txt` }),
            reply.text("ONE DONE"),
          ],
          "/root/two": [
            reply.toolCall("bash", { command: `${look}; echo two > two.txt; rm new.txt` }),
            reply.text("TWO DONE"),
          ],
        },
        // The documented example: link the parent's node_modules into each new worktree.
        env: { PI_SUBAGENTS_WORKTREE_SETUP: 'ln -s "$PI_SUBAGENTS_WORKTREE_SOURCE/node_modules" node_modules' },
      });
      const repo = dirtyRepository(h);
      const before = parentState(h, repo);

      const run = await h.runRoot("go", ROOT_RUN);
      expectCleanExit(run);
      const treeDir = h.treeDir();
      const tag = treeTag(h);
      expect(tag).toMatch(/^[0-9a-f]{8}$/);

      const spawns = h.allResultsOf("/root").filter((r) => (r as Json)?.agent_name && (r as Json).worktree) as Json[];
      expect(spawns.map((s) => s.worktree.branch)).toEqual([`subagent/${tag}-one`, `subagent/${tag}-two`]);
      expect(spawns.map((s) => s.worktree.path)).toEqual([
        path.join(treeDir, "worktrees", "one"),
        path.join(treeDir, "worktrees", "two"),
      ]);

      for (const child of ["/root/one", "/root/two"]) {
        // Each child saw what the parent sees: the uncommitted, staged and untracked changes, not the ignored file.
        const seen = toolOutput(h, child);
        expect(seen).toContain("a, uncommitted");
        expect(seen).toContain("b staged");
        expect(seen).toContain("new, untracked");
        expect(seen).toContain("IGNORED-ABSENT");
        expect(seen).toContain("index.js"); // node_modules, linked by the setup command
      }
      // The two ran side by side.
      const [one] = runSpans(treeDir, "one");
      const [two] = runSpans(treeDir, "two");
      expect(one!.start < two!.end && two!.start < one!.end, JSON.stringify({ one, two })).toBe(true);

      const notices = noticesOf(h);
      const byAgent = (name: string) => notices.find((n) => n.agent_name === name)!;
      const first = byAgent("/root/one").worktree as Json;
      const second = byAgent("/root/two").worktree as Json;
      expect(first).toMatchObject({
        path: path.join(treeDir, "worktrees", "one"),
        branch: `subagent/${tag}-one`,
        changed_files: ["a.txt", "one.txt"],
        insertions: 2,
        deletions: 0,
      });
      expect(second).toMatchObject({
        branch: `subagent/${tag}-two`,
        changed_files: ["new.txt", "two.txt"],
        insertions: 1,
        deletions: 1,
      });
      for (const worktree of [first, second]) {
        expect(worktree.head_commit).not.toBe(worktree.base_commit);
        // The package's own bring command, by its full path: it runs whether or not the CLI is on the PATH.
        expect(worktree.merge_hint).toBe(`${WRAPPER_BIN} bring ${worktree.base_commit} ${worktree.head_commit}`);
        // One commit per turn, on the branch.
        expect(git(h, repo, ["rev-list", "--count", `${worktree.base_commit}..${worktree.branch}`]).trim()).toBe("1");
        expect(git(h, repo, ["rev-parse", worktree.branch]).trim()).toBe(worktree.head_commit);
        // The base is the parent's working state: HEAD as its parent, the untracked file in, ignored files out.
        expect(git(h, repo, ["rev-parse", `${worktree.base_commit}^`]).trim()).toBe(before.head.trim());
        const baseFiles = git(h, repo, ["ls-tree", "-r", "--name-only", worktree.base_commit])
          .split("\n")
          .filter(Boolean);
        expect(baseFiles.sort()).toEqual([".gitignore", "a.txt", "new.txt", "src/b.txt"]);
        // The setup's node_modules link is never committed.
        expect(git(h, repo, ["ls-tree", "-r", "--name-only", worktree.head_commit])).not.toContain("node_modules");
      }
      const list = (
        h
          .allResultsOf("/root")
          .filter((r) => Array.isArray((r as Json)?.agents))
          .at(-1) as Json
      ).agents as Json[];
      expect(list.map((agent) => agent.branch)).toEqual([`subagent/${tag}-one`, `subagent/${tag}-two`]);

      // The parent's repository: HEAD, index, status and files exactly as they were; only the two branches are new.
      const after = parentState(h, repo);
      expect({ ...after, branches: undefined }).toEqual({ ...before, branches: undefined });
      expect(after.branches.split("\n").filter(Boolean).sort()).toEqual([
        "main",
        `subagent/${tag}-one`,
        `subagent/${tag}-two`,
      ]);
      expect(fs.existsSync(path.join(repo, "one.txt"))).toBe(false);

      // Bringing the work in: each merge_hint, run as given, in the parent's dirty tree — a.txt
      // with unstaged changes (which the children's base holds), src/b.txt staged, new.txt
      // untracked — takes just the child's changes, stages nothing and keeps the rest.
      const stagedBefore = git(h, repo, ["diff", "--cached"]);
      const bring = (hint: string) => {
        try {
          return { code: 0, out: execFileSync("sh", ["-c", hint], { cwd: repo, env: gitEnv(h), encoding: "utf8" }) };
        } catch (err) {
          const failed = err as { status: number; stdout: string };
          return { code: failed.status, out: failed.stdout };
        }
      };
      const broughtTwo = bring(second.merge_hint);
      expect(broughtTwo.code, broughtTwo.out).toBe(0);
      expect(broughtTwo.out).toContain("(2 files): 2 taken as the agent left them; your uncommitted work is kept");
      expect(fs.existsSync(path.join(repo, "new.txt"))).toBe(false);
      expect(fs.readFileSync(path.join(repo, "two.txt"), "utf8")).toBe("two\n");
      // Meanwhile the person changed the line of a.txt that the first child wrote below: a conflict, named.
      write(path.join(repo, "a.txt"), "a, uncommitted, and more\n");
      const broughtOne = bring(first.merge_hint);
      expect(broughtOne.code, broughtOne.out).toBe(1);
      expect(broughtOne.out.split("\n")[1]).toBe("conflicts: a.txt");
      const merged = fs.readFileSync(path.join(repo, "a.txt"), "utf8");
      expect(merged).toContain(
        "<<<<<<< yours\na, uncommitted, and more\n=======\na, uncommitted\none was here\n>>>>>>> agent ",
      );
      expect(fs.readFileSync(path.join(repo, "one.txt"), "utf8")).toBe("one\n");
      expect(fs.readFileSync(path.join(repo, "src", "b.txt"), "utf8")).toBe("b staged\n");
      expect(git(h, repo, ["diff", "--cached"])).toBe(stagedBefore);
      expect(git(h, repo, ["rev-parse", "HEAD"])).toBe(before.head);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  // git worktrees and this package's bookkeeping, the same on either line: npm test runs it on
  // pi 1.x only (ONE_LINE_IS_ENOUGH); the first case runs on both.
  it.skipIf(ONE_LINE_IS_ENOUGH)(
    "a follow-up commits again on the same branch; close_agent removes the worktrees, keeps a branch with commits and deletes one without",
    async () => {
      const root = new Program([
        isolatedSpawn("writer", "write f1"),
        waitForAll(["/root/writer"]),
        reply.toolCall("followup_task", { target: "writer", message: "write f2" }),
        waitUntil((notices) => notices.filter((n) => n.agent_name === "/root/writer").length === 2),
        isolatedSpawn("idle", "look only"),
        waitForAll(["/root/idle"]),
        reply.toolCall("close_agent", { target: "writer" }),
        reply.toolCall("close_agent", { target: "idle" }),
        reply.toolCall("list_agents", {}),
        reply.text("ROOT DONE"),
      ]);
      const h = await tree({
        scripts: {
          "/root": root.steps(),
          "/root/writer": [
            reply.toolCall("bash", { command: "echo first > f1.txt; ls sub | wc -l" }),
            reply.text("W1"),
            reply.toolCall("bash", { command: "echo second > f2.txt" }),
            reply.text("W2"),
          ],
          "/root/idle": [reply.toolCall("bash", { command: "cat a.txt" }), reply.text("nothing to change")],
        },
      });
      // A repository with a submodule: its folder is empty in a worktree, and commits work around it.
      const sub = path.join(h.home.root, "sub");
      fs.mkdirSync(sub);
      git(h, sub, ["init", "-q", "-b", "main"]);
      write(path.join(sub, "s.txt"), "s\n");
      git(h, sub, ["add", "-A"]);
      git(h, sub, ["commit", "-q", "-m", "sub"]);
      const repo = h.home.cwd;
      git(h, repo, ["init", "-q", "-b", "main"]);
      write(path.join(repo, "a.txt"), "a\n");
      git(h, repo, ["add", "-A"]);
      git(h, repo, ["submodule", "--quiet", "add", sub, "sub"]);
      git(h, repo, ["commit", "-q", "-m", "initial"]);
      const head = git(h, repo, ["rev-parse", "HEAD"]).trim();

      const run = await h.runRoot("go", ROOT_RUN);
      expectCleanExit(run);
      const tag = treeTag(h);
      const treeDir = h.treeDir();
      const writer = noticesOf(h).filter((n) => n.agent_name === "/root/writer");
      expect(writer.map((n) => n.report)).toEqual(["W1", "W2"]);
      const [w1, w2] = writer.map((n) => n.worktree as Json);
      // A clean parent: the base is its HEAD, so a plain merge would suit too.
      expect(w1!.base_commit).toBe(head);
      expect(w1!.changed_files).toEqual(["f1.txt"]);
      expect(w2!.changed_files).toEqual(["f1.txt", "f2.txt"]);
      expect(git(h, repo, ["rev-parse", `${w2!.head_commit}^`]).trim()).toBe(w1!.head_commit);
      expect(git(h, repo, ["rev-list", "--count", `${head}..subagent/${tag}-writer`]).trim()).toBe("2");
      expect(toolResults(h.requestsOf("/root/writer")[1]!)).toEqual([0]); // `ls sub | wc -l`: the submodule's folder is empty
      const idle = noticesOf(h).find((n) => n.agent_name === "/root/idle")!.worktree as Json;
      expect(idle).toMatchObject({ changed_files: [], insertions: 0, deletions: 0, head_commit: head });
      expect(idle.merge_hint).toBeUndefined();

      expect(rootText(h, "close_agent", { target: "writer" })).toContain('"agent_status":"shutdown"');
      // No worktree is left: not on disk, not in git's list. The branch with commits stays; the empty one is gone.
      expect(fs.readdirSync(path.join(treeDir, "worktrees"))).toEqual([]);
      expect(git(h, repo, ["worktree", "list", "--porcelain"]).match(/^worktree /gm)).toHaveLength(1);
      expect(
        git(h, repo, ["branch", "--list", "--format=%(refname:short)"]).split("\n").filter(Boolean).sort(),
      ).toEqual(["main", `subagent/${tag}-writer`]);
      const records = await h.readRecords();
      expect(records.map((record) => [record.path, record.status, record.worktree?.branch])).toEqual([
        ["/root/writer", "shutdown", `subagent/${tag}-writer`],
        ["/root/idle", "shutdown", `subagent/${tag}-idle`],
      ]);

      // doctor --tree lists both, neither stale.
      const doctor = execFileSync(
        process.execPath,
        [path.join(REPO_ROOT, "bin", "subagent-wrapper"), "doctor", "--tree", treeDir, "--json"],
        {
          encoding: "utf8",
          env: gitEnv(h),
        },
      );
      const report = JSON.parse(doctor) as Json;
      expect(report.ok, doctor).toBe(true);
      expect(report.worktrees.map((check: Json) => check.name)).toEqual(["/root/writer", "/root/idle"]);
      expect(report.worktrees[0].notes).toEqual([`branch subagent/${tag}-writer holds 2 commits beyond its base`]);
      expect(report.worktrees[1].notes).toEqual([`branch subagent/${tag}-idle deleted (it held no commits)`]);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  // git worktrees and this package's bookkeeping, the same on either line: npm test runs it on
  // pi 1.x only (ONE_LINE_IS_ENOUGH); the first case runs on both.
  it.skipIf(ONE_LINE_IS_ENOUGH)(
    "a nested isolated child starts from its isolated parent's worktree, in the same subdirectory",
    async () => {
      const lead = new Program([
        reply.toolCall("bash", { command: "pwd; echo from-lead > lead.txt" }),
        spawn({
          task_name: "checker",
          message: "check",
          agent_type: "implementation",
          fork_turns: "none",
          isolation: "worktree",
        }),
        waitForAll(["/root/lead/checker"]),
        reply.text("LEAD DONE"),
      ]);
      const h = await tree({
        scripts: {
          "/root": [
            spawn({ task_name: "lead", message: "lead the check", fork_turns: "none", isolation: "worktree" }),
            ...new Program([waitForAll(["/root/lead"], 60_000), reply.text("ROOT DONE")]).steps(20),
          ],
          "/root/lead": lead.steps(),
          "/root/lead/checker": [
            reply.toolCall("bash", { command: "pwd; cat lead.txt; echo c > checker.txt" }),
            reply.text("CHECKER DONE"),
          ],
        },
      });
      const repo = committedRepository(h, { "pkg/p.txt": "p\n" });
      const before = parentState(h, repo);

      const run = await runRootIn(h, path.join(repo, "pkg"), "go");
      expectCleanExit(run);
      const tag = treeTag(h);
      const treeDir = h.treeDir();
      const leadTree = path.join(treeDir, "worktrees", "lead");
      const checkerTree = path.join(treeDir, "worktrees", "lead-checker");
      // Each runs in the worktree's pkg/, as the root ran in the repository's pkg/.
      expect(toolOutput(h, "/root/lead")).toContain(path.join(leadTree, "pkg"));
      const checkerSaw = toolOutput(h, "/root/lead/checker");
      expect(checkerSaw).toContain(path.join(checkerTree, "pkg"));
      expect(checkerSaw).toContain("from-lead"); // the lead's uncommitted file

      const checker = noticesOf(h, "/root/lead").find((n) => n.agent_name === "/root/lead/checker")!.worktree as Json;
      expect(checker).toMatchObject({
        path: checkerTree,
        branch: `subagent/${tag}-lead-checker`,
        changed_files: ["pkg/checker.txt"],
      });
      const leadNotice = noticesOf(h).find((n) => n.agent_name === "/root/lead")!;
      expect(leadNotice.worktree, diag(h)).toMatchObject({
        branch: `subagent/${tag}-lead`,
        changed_files: ["pkg/lead.txt"],
      });
      // The checker's base holds the lead's work; the lead's branch never got the checker's.
      expect(git(h, repo, ["ls-tree", "-r", "--name-only", checker.base_commit])).toContain("pkg/lead.txt");
      expect(git(h, repo, ["ls-tree", "-r", "--name-only", `subagent/${tag}-lead`])).not.toContain("checker.txt");
      expect({ ...parentState(h, repo), branches: undefined }).toEqual({ ...before, branches: undefined });
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  // git worktrees and this package's bookkeeping, the same on either line: npm test runs it on
  // pi 1.x only (ONE_LINE_IS_ENOUGH); the first case runs on both.
  it.skipIf(ONE_LINE_IS_ENOUGH)(
    "refused spawns leave nothing behind: a bad isolation value, a cwd outside git, a setup command that fails",
    async () => {
      const h = await tree({
        scripts: {
          "/root": [
            isolatedSpawn("bad", "x", { isolation: "sideways" }),
            isolatedSpawn("nogit", "x"),
            reply.text("ROOT DONE"),
          ],
        },
      });
      const run = await h.runRoot("go", ROOT_RUN);
      expectCleanExit(run);
      expect(rootText(h, "spawn_agent", { task_name: "bad" })).toBe('isolation must be "none" or "worktree"');
      expect(rootText(h, "spawn_agent", { task_name: "nogit" })).toMatch(
        /^isolation "worktree" needs a git repository: \/\S+ is not inside one$/,
      );
      // No record, and not even a tree directory: it is made by the first spawn that gets that far.
      expect(fs.readdirSync(h.baseDir)).toEqual([]);

      // In a repository, with a setup command that fails: the spawn error quotes its stderr.
      const repo = committedRepository(h, { "a.txt": "a\n" });
      h.tree.add("/root", isolatedSpawn("setup", "x"), reply.toolCall("list_agents", {}), reply.text("ROOT DONE"));
      const second = await h.runRoot("again", {
        ...ROOT_RUN,
        env: { PI_SUBAGENTS_WORKTREE_SETUP: "echo 'cannot link the deps' >&2; exit 3" },
      });
      expectCleanExit(second);
      const error = rootText(h, "spawn_agent", { task_name: "setup" });
      expect(error).toMatch(/^worktree setup command .* failed \(exit 3\): cannot link the deps$/);
      expect(rootText(h, "list_agents")).toContain('"agents":[]');
      // No agent, no worktree, no branch, no registration in git.
      const entries = (dir: string) => (fs.existsSync(dir) ? fs.readdirSync(dir) : []);
      for (const dir of fs.readdirSync(h.baseDir)) {
        expect(entries(path.join(h.baseDir, dir, "worktrees")), dir).toEqual([]);
        expect(entries(path.join(h.baseDir, dir, "agents")), dir).toEqual([]);
      }
      expect(git(h, repo, ["branch", "--list", "--format=%(refname:short)"]).trim()).toBe("main");
      expect(git(h, repo, ["worktree", "list", "--porcelain"]).match(/^worktree /gm)).toHaveLength(1);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  // git worktrees and this package's bookkeeping, the same on either line: npm test runs it on
  // pi 1.x only (ONE_LINE_IS_ENOUGH); the first case runs on both.
  it.skipIf(ONE_LINE_IS_ENOUGH)(
    "a child starts before its worktree is all written: its first request has the context files, and its first tool call waits for the rest",
    async () => {
      const root = new Program([
        isolatedSpawn("reader", "read it"),
        waitForAll(["/root/reader"]),
        reply.text("ROOT DONE"),
      ]);
      const h = await tree({
        scripts: {
          "/root": root.steps(),
          // Answered at once: the tool call comes long before a 2 s checkout ends.
          "/root/reader": [
            reply.toolCall("bash", { command: "date +%s%N; cat deep/er/file_49.txt" }),
            reply.text("READ"),
          ],
        },
      });
      const deep = Object.fromEntries(
        Array.from({ length: 50 }, (_, i) => [`pkg/deep/er/file_${i}.txt`, `deep file ${i}\n`]),
      );
      const repo = committedRepository(h, {
        "AGENTS.md": "TOP-LEVEL CONTEXT\n",
        "pkg/CLAUDE.md": "PKG CONTEXT\n",
        ...deep,
      });
      const shim = checkoutShim(h, "sleep 2");

      const run = await runRootIn(h, path.join(repo, "pkg"), "go", shim.env);
      expectCleanExit(run);
      const child = h.requestsOf("/root/reader");
      // pi read the context files at its start, before the rest was written.
      expect(systemText(child[0]!)).toContain("TOP-LEVEL CONTEXT");
      expect(systemText(child[0]!)).toContain("PKG CONTEXT");
      const [, checkoutEnd] = fs.readFileSync(shim.log, "utf8").trim().split("\n");
      expect(fs.readFileSync(shim.log, "utf8")).toMatch(/^child-started\ncheckout-ended \d+ 0\n$/);
      const output = toolOutput(h, "/root/reader");
      expect(output).toContain("deep file 49");
      const toolTime = BigInt(/(\d{16,})/.exec(output)![1]!);
      expect(toolTime >= BigInt(checkoutEnd!.split(" ")[1]!), `${output} / ${checkoutEnd}`).toBe(true);
      expect(noticesOf(h).find((n) => n.agent_name === "/root/reader")).toMatchObject({
        type: "completed",
        report: "READ",
      });
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  // git worktrees and this package's bookkeeping, the same on either line: npm test runs it on
  // pi 1.x only (ONE_LINE_IS_ENOUGH); the first case runs on both.
  it.skipIf(ONE_LINE_IS_ENOUGH)(
    "a checkout that fails ends the child's turn as an error that says so, with nothing committed; a follow-up writes it again and works",
    async () => {
      const root = new Program([
        isolatedSpawn("reader", "read it"),
        waitForAll(["/root/reader"]),
        reply.toolCall("followup_task", { target: "reader", message: "again" }),
        waitUntil((notices) => notices.filter((n) => n.agent_name === "/root/reader").length === 2),
        reply.text("ROOT DONE"),
      ]);
      const h = await tree({
        scripts: {
          "/root": root.steps(),
          // The first turn ends in its tool call (the child stops there), so its steps are one.
          "/root/reader": [
            reply.toolCall("bash", { command: "cat data/d.txt" }),
            reply.toolCall("bash", { command: "cat data/d.txt" }),
            reply.text("READ AT LAST"),
          ],
        },
      });
      const repo = committedRepository(h, { "data/d.txt": "the data\n" });
      const head = git(h, repo, ["rev-parse", "HEAD"]).trim();
      const shim = checkoutShim(h, "echo 'fatal: simulated: no space left on device' >&2; exit 128");

      const run = await h.runRoot("go", { ...ROOT_RUN, env: shim.env });
      expectCleanExit(run);
      const [first, second] = noticesOf(h).filter((n) => n.agent_name === "/root/reader");
      expect(first!.type, diag(h)).not.toBe("completed");
      expect(JSON.stringify(first)).toContain("the worktree's checkout failed");
      expect(JSON.stringify(first)).toContain("no space left on device");
      expect((first!.worktree as Json).error).toMatch(/^nothing was committed: the worktree has no index/);
      expect(second).toMatchObject({ type: "completed", report: "READ AT LAST" });
      expect(toolOutput(h, "/root/reader")).toContain("the data");
      const tag = treeTag(h);
      // No commit recorded the missing files as deleted.
      expect(git(h, repo, ["rev-list", "--count", `${head}..subagent/${tag}-reader`]).trim()).toBe("0");
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );
});
