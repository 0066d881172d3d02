/**
 * Fallback models on the `ssh` runner, the one case on a far host: the
 * child's model answers 429 on the far host (a separate host in a network namespace,
 * test/support/ssh-host.ts), and its fallback runs as a new far side over ssh that continues
 * the session the first sent back, in a workspace holding what the first attempt changed; the
 * notice names both models and the runner; nothing is left on the far host. The other runners'
 * cases: tree-runner-matrix.test.ts.
 *
 * Needs root, `ip`, `unshare`, `sshd`, `ssh`: skipped with the reason otherwise (failing under CI).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { missingNeeds, skipOrFail } from "../support/needs.js";
import { fakeModels, ONE_LINE_IS_ENOUGH, PI_LINE } from "../support/pi-home.js";
import { type ChatRequest, reply, type ScriptedLlm, startScriptedLlm, userTexts } from "../support/scripted-llm.js";
import { SSH_HOST_TOOLS, type SshHost, sshRunnerFor, startSshHost } from "../support/ssh-host.js";
import { diag } from "../support/stress-scenarios.js";
import { expectCleanExit, expectNoSurvivors, type Json, rootResult, useTrees } from "../support/tree-harness-extra.js";
import { routeByAgent, type TreeScript, toolResults } from "../support/tree-llm.js";
import { committedRepository, treeGit } from "../support/tree-repo.js";

const missing = missingNeeds(SSH_HOST_TOOLS, { root: true });
const tree = useTrees();
const SCENARIO_MS = 180_000;

let far: SshHost | undefined;
let farLlm: ScriptedLlm | undefined;
let farTree: TreeScript | undefined;

beforeAll(async () => {
  if (missing !== undefined) return;
  far = await startSshHost({ pi: { node: PI_LINE.node, piCli: PI_LINE.piCli } });
  farLlm = await startScriptedLlm({ host: far.hostAddress });
  // No retry of pi's nor of the provider's SDK (pi 0.73's retries a 429 itself): one scripted error is one failed attempt.
  const retry = { enabled: false, provider: { maxRetries: 0 } };
  const settings = { defaultProvider: "fake", defaultModel: "fast", quietStartup: true, retry };
  await far.writePiSettings({ models: fakeModels(farLlm.url), settings });
}, 60_000);
afterAll(async () => {
  await farLlm?.close();
  await far?.stop();
});

const farRequestsOf = (agent: string): ChatRequest[] => farTree?.requests.get(agent) ?? [];

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}

describe.skipIf(ONE_LINE_IS_ENOUGH)("fallback models on the ssh runner (real pi on both sides)", () => {
  it(
    "a 429 on the far host moves the child to its fallback over ssh: same session, the first attempt's files, both models named",
    async (ctx) => {
      skipOrFail(ctx, missing);
      const host = far as SshHost;
      farTree = routeByAgent(farLlm as ScriptedLlm, {
        "/root/worker": [
          reply.toolCall("bash", { command: "echo from-deep > first.txt" }),
          reply.error(429, "Rate limit reached"),
          reply.toolCall("bash", { command: "cat first.txt; echo from-fast > second.txt" }),
          reply.text("child done on fast"),
        ],
      });
      const h = await tree({
        scripts: {
          "/root": [
            reply.toolCall("spawn_agent", {
              task_name: "worker",
              message: "do the work",
              fork_turns: "none",
              runner: "far",
              model: "fake/deep",
              fallback_models: ["fake/fast"],
            }),
            reply.toolCall("wait_agent", { timeout_ms: 120_000 }),
            reply.text("ROOT DONE"),
          ],
        },
        extraSettings: { subagents: { runners: { far: sshRunnerFor(host, { capacity: 2 }) } } },
      });
      committedRepository(h);
      expectCleanExit(await h.runRoot("delegate", { timeoutMs: 150_000 }));

      const requests = farRequestsOf("/root/worker");
      expect(
        requests.map((r) => r.model),
        diag(h),
      ).toEqual(["deep", "deep", "fast", "fast"]);
      expect(JSON.stringify(requests[2]!.messages)).toContain("echo from-deep > first.txt");
      expect(userTexts(requests[2]!).at(-1)).toMatch(/fake\/deep failed with a provider error \(rate_limit\)/);
      expect(JSON.stringify(toolResults(requests[3]!))).toContain("from-deep");

      const waited = rootResult(h, "wait_agent", { timeout_ms: 120_000 });
      const notice = (waited.notices as Json[]).find((n) => n.agent_name === "/root/worker") as Json;
      expect(notice).toMatchObject({
        type: "completed",
        model: "fake/fast",
        report: "child done on fast",
        attempts: [{ model: "fake/deep", error_class: "rate_limit" }],
        runner: { name: "far", kind: "ssh", host: host.destination },
      });
      const head = notice.worktree.head_commit as string;
      expect(treeGit(h, ["show", `${head}:first.txt`]).trim()).toBe("from-deep");
      expect(treeGit(h, ["show", `${head}:second.txt`]).trim()).toBe("from-fast");
      await expectNoSurvivors(h);
      const farPids = () => host.farPids();
      expect(await until(async () => (await farPids()).length === 0, 10_000), String(await farPids())).toBe(true);
    },
    SCENARIO_MS,
  );
});
