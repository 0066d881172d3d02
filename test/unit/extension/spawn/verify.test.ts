import { describe, expect, it } from "vitest";
import type { ResolvedRunner } from "../../../../src/contracts/runners.js";
import type { Verification } from "../../../../src/contracts/verify.js";
import { parseAgentDefinition } from "../../../../src/extension/roles/agent-definitions.js";
import type { Role } from "../../../../src/extension/roles/roles.js";
import { resolveVerify, type VerifyInput } from "../../../../src/extension/spawn/verify.js";
import { describeNotice, turnEndNotice } from "../../../../src/extension/turns/delivery/notices.js";
import { buildMeta } from "../../../../src/extension/turns/wrapper/launcher.js";
import { agentRecord } from "../../../support/records.js";

const reviewer = { name: "reviewer", model: "fake/deep", prompt: "Review strictly." } as unknown as Role;
const input = (over: Partial<VerifyInput> = {}): VerifyInput => ({
  param: undefined,
  role: undefined,
  settings: undefined,
  runner: undefined,
  findRole: (name) =>
    name === "reviewer" ? { ok: true, role: reviewer } : { ok: false, error: `unknown agent_type: ${name}` },
  ...over,
});

describe("spawn's verify", () => {
  it("spawn beats definition beats settings; the defaults fill what is left out", () => {
    const role = { name: "r", verify: { run: ["make check"] } } as unknown as Role;
    expect(resolveVerify(input({ param: { run: ["npm test"] }, role, settings: { run: ["x"] } }))).toEqual({
      ok: true,
      verify: { run: ["npm test"], max_repairs: 2, timeout: 600 },
    });
    expect(resolveVerify(input({ role, settings: { run: ["x"] } }))).toMatchObject({
      verify: { run: ["make check"] },
    });
    expect(resolveVerify(input({ settings: { run: ["x"], max_repairs: 0 } }))).toMatchObject({
      verify: { run: ["x"], max_repairs: 0 },
    });
    expect(resolveVerify(input())).toEqual({ ok: true, verify: undefined });
  });

  it("a malformed verify is the spawn's error, naming the field", () => {
    expect(resolveVerify(input({ param: { run: ["npm test"], max_repairs: 8 } }))).toEqual({
      ok: false,
      error: "verify.max_repairs must be a whole number from 0 to 5, not 8",
    });
    expect(resolveVerify(input({ param: { review: "nobody" } }))).toEqual({
      ok: false,
      error: "verify.review: unknown agent_type: nobody",
    });
  });

  it("the reviewer is found at spawn and kept with its model and text", () => {
    expect(resolveVerify(input({ param: { review: "reviewer", timeout: 90 } }))).toEqual({
      ok: true,
      verify: {
        review: { name: "reviewer", model: "fake/deep", prompt: "Review strictly." },
        max_repairs: 2,
        timeout: 90,
      },
    });
  });

  it("a runner's child: its commands run where it works (a sandbox, a far side); a reviewer, which would run here, is refused", () => {
    const box = { name: "box", kind: "sandbox" } as unknown as ResolvedRunner;
    const gpu = { name: "gpu", kind: "ssh" } as unknown as ResolvedRunner;
    for (const runner of [box, gpu]) {
      expect(resolveVerify(input({ param: { run: ["npm test"] }, runner }))).toMatchObject({
        ok: true,
        verify: { run: ["npm test"] },
      });
    }
    const review = resolveVerify(input({ param: { review: "reviewer" }, runner: box }));
    expect(review.ok).toBe(false);
    if (!review.ok)
      expect(review.error).toMatch(
        /^verify.review cannot run on runner "box" \(sandbox\): the reviewer would run on this machine/,
      );
    const farReview = resolveVerify(input({ param: { run: ["npm test"], review: "reviewer" }, runner: gpu }));
    expect(farReview.ok).toBe(false);
    if (!farReview.ok) expect(farReview.error).toMatch(/^verify.review cannot run on runner "gpu" \(ssh\)/);
    // The settings' default checks a sandbox's child, not a far side's.
    expect(resolveVerify(input({ settings: { run: ["npm test"] }, runner: box }))).toMatchObject({
      ok: true,
      verify: { run: ["npm test"] },
    });
    expect(resolveVerify(input({ settings: { run: ["npm test"] }, runner: gpu }))).toEqual({
      ok: true,
      verify: undefined,
    });
  });

  it("a settings default with a review does not refuse a sandbox's spawn: its commands check the child, its review is left out", () => {
    const box = { name: "box", kind: "sandbox" } as unknown as ResolvedRunner;
    const settings = { run: ["npm test"], review: "reviewer" };
    const boxed = resolveVerify(input({ settings, runner: box }));
    expect(boxed).toMatchObject({ ok: true, verify: { run: ["npm test"] } });
    if (boxed.ok) expect(boxed.verify?.review).toBeUndefined();
    expect(resolveVerify(input({ settings: { review: "reviewer" }, runner: box }))).toEqual({
      ok: true,
      verify: undefined,
    });
    // Here, the default's reviewer runs as asked.
    expect(resolveVerify(input({ settings }))).toMatchObject({ ok: true, verify: { review: { name: "reviewer" } } });
    // Asked for on the spawn, it is still refused with the reason.
    expect(resolveVerify(input({ param: settings, runner: box })).ok).toBe(false);
  });

  it("an agent definition's verify: block is read, and a bad one refuses the file naming the field", () => {
    const file = (verify: string) =>
      parseAgentDefinition(`---\nname: fixer\ndescription: Fixes.\n${verify}\n---\nFix.`, "/a/fixer.md", "user");
    expect(file("verify:\n  run: [npm test]\n  max_repairs: 1")).toMatchObject({
      ok: true,
      definition: { verify: { run: ["npm test"], max_repairs: 1 } },
    });
    const bad = file("verify:\n  run: [npm test]\n  timeout: -1");
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.rejected.problem).toContain("verify.timeout must be a positive number of seconds, not -1");
  });
});

describe("a turn's notice and its verification", () => {
  const failed: Verification = {
    status: "failed",
    repairs: 2,
    checks: [
      { name: "lint", kind: "run", exit_code: 0, duration_ms: 10, output_tail: "clean" },
      { name: "npm test", kind: "run", exit_code: 1, duration_ms: 10, output_tail: `${"x".repeat(3000)}1 failing` },
    ],
  };

  it("checks that still fail say so first: the status stays completed, the reason says verification failed", () => {
    const notice = turnEndNotice(agentRecord({ status: "completed" }), {
      outcome: "completed",
      text: "All done.",
      reportStored: true,
      verification: failed,
    });
    expect(notice.agent_status).toBe("completed");
    expect(notice.reason).toBe("completed — verification failed after 2 repairs");
    // Right after the status: what the parent's model reads first.
    expect(Object.keys(notice).slice(3, 6)).toEqual(["agent_status", "reason", "verification"]);
    // Outputs are cut: a passed check's left out, a failed one's end kept.
    expect(notice.verification?.checks[0]?.output_tail).toBe("");
    expect(notice.verification?.checks[1]?.output_tail).toHaveLength(600);
    expect(notice.verification?.checks[1]?.output_tail.endsWith("1 failing")).toBe(true);
    expect(describeNotice(notice)).toMatch(/ completed — verification failed after 2 repairs: All done\.$/);
  });

  it("a passed verification adds no reason", () => {
    const notice = turnEndNotice(agentRecord({ status: "completed" }), {
      outcome: "completed",
      text: "ok",
      reportStored: true,
      verification: { status: "passed", repairs: 1, checks: [] },
    });
    expect(notice.reason).toBeUndefined();
    expect(describeNotice(notice)).toContain("completed (verification passed after 1 repair): ok");
  });
});

describe("every turn of an agent with verify carries its checks to the wrapper", () => {
  it.each(["spawn", "followup"] as const)(
    "a %s turn's meta.json verify: milliseconds, the agent's kept results, the reviewer's text beside it",
    (kind) => {
      const record = agentRecord({
        path: "/root/w",
        verify: {
          run: ["npm test"],
          review: { name: "reviewer", model: "fake/deep", prompt: "Be strict." },
          max_repairs: 1,
          timeout: 90,
        },
      });
      const spec = {
        record,
        agentDir: "/tree/agents/w",
        treeDir: "/tree",
        prompt: "go",
        kind,
        cwd: "/work",
        instructions: "",
        limits: {},
      };
      expect(buildMeta(spec, "/tree/agents/w/runs/0002-followup").verify).toEqual({
        run: ["npm test"],
        review: {
          name: "reviewer",
          model: "fake/deep",
          systemPromptPath: "/tree/agents/w/runs/0002-followup/review-prompt.md",
        },
        maxRepairs: 1,
        timeoutMs: 90_000,
        statePath: "/tree/agents/w/verify-checks.json",
      });
    },
  );

  it("an agent without verify sends none", () => {
    const spec = {
      record: agentRecord({ path: "/root/w" }),
      agentDir: "/a",
      treeDir: "/t",
      prompt: "go",
      kind: "spawn" as const,
      cwd: "/w",
      instructions: "",
      limits: {},
    };
    expect(buildMeta(spec, "/a/runs/0001-spawn").verify).toBeUndefined();
  });
});
