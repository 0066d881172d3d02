/**
 * The lint step that keeps references to documents outside the repository out of it: the
 * matcher (scripts/citations.mjs findCitations) flags each form of citation on its line and
 * passes clean text full of version numbers, durations, ratios and addresses; the script
 * (scripts/check-citations.mjs), run on a checkout in a temp dir, reports and exits accordingly.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { findCitations } from "../../scripts/citations.mjs";

describe("findCitations", () => {
  it.each([
    ["the specification's name and a section", "// Durable children (SPEC 5.2), the extension's side"],
    ["the specification's name alone", " * as SPEC says, a root that dies takes no work with it"],
    ["a section sign", "See §6.3 for the bound."],
    ["a section number in parentheses", " * One owner per tree (5.2): at most one live process"],
    ["a section number opening a parenthesis", "it no longer decides (2.3: the next terminal message does)."],
    ["a section number closing a list", "a root's turns outlive it (one owner, 5.2), or its folder"],
    ["a section number with a possessive", "git does not ignore, 4.4's starting state, made without"],
    ["a section number after a cue word", "the per-parent limit of 3.2), and each runner"],
    ["a section number named as one", "as section 5.5 says"],
    ["the end of a citation on the next line", "   * 5.2): this process only reads the tree then"],
    ["a fault id", "the lease is lost (F-03) when the disk fills"],
    ["the specification in words", "Choices where the spec is silent:"],
    ["a note kept outside the checkout", " * on the one-node cluster (../shared/RUNNERS-NOTES.md)"],
    ["a seed file", "as seeds/outcome.md lays it out"],
    ["an issue number", "What works on every runner (issue 25), end to end"],
  ])("flags %s", (_what, line) => {
    const text = `first line\n${line}\nlast line\n`;
    expect(findCitations(text)).toEqual([{ line: 2, text: line.trim(), what: expect.any(String) }]);
  });

  it("flags every citing line of a text, with its line number", () => {
    const text = "a (5.2) here\nclean\nSPEC there\n";
    expect(findCitations(text).map((hit) => hit.line)).toEqual([1, 3]);
  });

  it("passes clean text: versions, durations, ratios, addresses, decimals in code", () => {
    const clean = [
      "pi 0.73.1's whole library loads too (~0.7 s of CPU per start); pi 1.6.0 on Node 22.23.5",
      "pi 1.x needs Node ≥ 22.19, and git < 2.36 has no -z; TypeScript 5.9 is nested, Ajv 8.20 measured",
      "0001-spawn completed in 2.1 s; 0002-followup failed in 1.0 s: 500 scripted error",
      "| wrapper start-up | 1 MiB task | 179 ms | 119 ms | 1.50× | ≤ 1.5× `node -e 0` | NO |",
      "a free /30 in 10.203.0.0/16, load average about 1.5, (2.3–4 s here for `--time=10`)",
      'expect(formatCost(1.5)).toBe("$1.50"); Math.round(spanMs * 1.3); m(a, b, "Claude Sonnet 4.5")',
      'YAML 1.2, so `reasoning: off` is the word `off`; anything else (`0`, `-1`, `1.5`, `"some"`)',
      '"commander": "14.0.3", "vitest": "^4.1.12", "node": ">=20"; π ≈ 3.14',
      "const spec = buildMeta(); the spec of a tool call; a ForkSpec; shared/pi/settings.json in a test repo",
      "mulberry32, seeded: the same mutants on every run; spawn_agent's rule 13 refuses; see docs/tools.md",
    ].join("\n");
    expect(findCitations(clean)).toEqual([]);
  });
});

const SCRIPTS = fileURLToPath(new URL("../../scripts/", import.meta.url));

describe("scripts/check-citations.mjs", () => {
  let box: string | undefined;
  afterEach(() => {
    if (box) fs.rmSync(box, { recursive: true, force: true });
    box = undefined;
  });

  /** A copy of the checker in `<box>/repo` holding `files` (path → text), a git checkout if `git`. */
  function checkout(files: Record<string, string>, git: boolean): string {
    box = fs.mkdtempSync(path.join(os.tmpdir(), "psa-citations-"));
    const repo = path.join(box, "repo");
    for (const script of ["check-citations.mjs", "citations.mjs"]) {
      fs.mkdirSync(path.join(repo, "scripts"), { recursive: true });
      fs.copyFileSync(path.join(SCRIPTS, script), path.join(repo, "scripts", script));
    }
    for (const [file, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(repo, file)), { recursive: true });
      fs.writeFileSync(path.join(repo, file), text);
    }
    if (git) expect(spawnSync("git", ["init", "-q"], { cwd: repo }).status).toBe(0);
    return repo;
  }

  /** Runs the checker of `repo`; git looks no higher than the box, so no enclosing checkout is found. */
  function check(repo: string) {
    const env = { ...process.env, GIT_CEILING_DIRECTORIES: path.dirname(repo) };
    const run = spawnSync(process.execPath, [path.join(repo, "scripts", "check-citations.mjs")], {
      env,
      encoding: "utf8",
    });
    return { status: run.status, stdout: run.stdout, stderr: run.stderr };
  }

  it("prints each citation as path:line: text, then what to do, and exits 1", () => {
    const repo = checkout(
      { "src/a.ts": "// clean\n/** A root outlives it (5.2). */\n", "docs/b.md": "Runs on pi 0.73.1 in 1.5 s.\n" },
      true,
    );
    const run = check(repo);
    expect(run.status).toBe(1);
    const lines = run.stdout.trim().split("\n");
    expect(lines[0]).toBe("src/a.ts:2: /** A root outlives it (5.2). */");
    expect(lines.slice(1)).toEqual([
      expect.stringMatching(/^1 reference to documents outside the repository.*Say the rule/),
    ]);
  });

  it("exits 0 and prints nothing on a clean checkout", () => {
    const run = check(checkout({ "docs/b.md": "Runs on pi 0.73.1 in 1.5 s (Node ≥ 22.19).\n" }, true));
    expect(run).toEqual({ status: 0, stdout: "", stderr: "" });
  });

  it("outside a git checkout: one line saying so, exit 2", () => {
    const run = check(checkout({ "docs/b.md": "clean\n" }, false));
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/^check-citations: cannot list the files of .+ with git: .+\n$/);
  });
});
