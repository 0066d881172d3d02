/**
 * pi's own examples/extensions/permission-gate.ts, unmodified, loaded in the ROOT only — given
 * by `pi -e permission-gate.ts`, or installed the usual way, in the agent dir's `extensions/`
 * folder, where pi discovers it — end to end with the real pi and the scripted LLM: a child here
 * loads the root's extensions, so the gate guards the child's `rm -rf`, and its "Allow?" goes up
 * the tree — to the RPC client of a root with a UI, headed with the child's path, and to the
 * parent model of a json root, whose send_message answer decides.
 */
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { PI_PERMISSION_GATE } from "../support/pi-home.js";
import { startRpcRoot } from "../support/rpc-root.js";
import { reply } from "../support/scripted-llm.js";
import {
  allNotices,
  expectCleanExit,
  expectNoSurvivors,
  Program,
  rootResult,
  spawn,
  toolResultFor,
  useTrees,
  waitForAll,
  waitUntil,
} from "../support/tree-harness-extra.js";

const tree = useTrees();

/** A folder with a file in the root's cwd, and the gated command that removes it. */
function victim(cwd: string, name: string): { dir: string; command: string } {
  const dir = path.join(cwd, name);
  mkdirSync(dir);
  writeFileSync(path.join(dir, "file.txt"), "keep me");
  return { dir, command: `rm -rf ${dir} && echo REMOVED` };
}

const rmThenSay = (command: string, text: string) => [reply.toolCall("bash", { command }), reply.text(text)];

describe("permission-gate loaded in the root guards its children", () => {
  it('an RPC client gets the child\'s "Allow?" headed with its path: "Yes" runs the rm, "No" blocks it', async () => {
    const root = new Program([
      spawn({ task_name: "wipe", fork_turns: "none", message: "Remove it." }),
      spawn({ task_name: "keep", fork_turns: "none", message: "Remove it." }),
      waitForAll(["/root/wipe", "/root/keep"], 60_000),
      reply.text("ROOT DONE"),
    ]);
    const h = await tree({ scripts: { "/root": root.steps() } });
    const wiped = victim(h.home.cwd, "wiped");
    const kept = victim(h.home.cwd, "kept");
    h.tree.add("/root/wipe", ...rmThenSay(wiped.command, "wipe done"));
    h.tree.add("/root/keep", ...rmThenSay(kept.command, "keep done"));
    const rpc = startRpcRoot(h, { args: ["-e", PI_PERMISSION_GATE] });
    try {
      rpc.send({ type: "prompt", message: "clean up" });
      const answers: Record<string, string> = { "/root/wipe": "Yes", "/root/keep": "No" };
      const seen: string[] = [];
      while (seen.length < 2) {
        const dialog = await rpc.rpc.waitFor(
          (line) =>
            line.type === "extension_ui_request" &&
            line.method === "select" &&
            /asks:/.test(line.title) &&
            !seen.some((agent) => line.title.startsWith(`${agent} asks:`)),
          60_000,
        );
        const agent = String(dialog.title).split(" asks:")[0]!;
        seen.push(agent);
        expect(dialog.title).toContain("Dangerous command");
        expect(dialog.title).toContain(agent === "/root/wipe" ? wiped.command : kept.command);
        expect(dialog.options).toEqual(["Yes", "No"]);
        rpc.send({ type: "extension_ui_response", id: dialog.id, value: answers[agent] });
      }
      expect(seen.sort()).toEqual(["/root/keep", "/root/wipe"]);
      await rpc.rpc.waitFor((line) => line.type === "agent_end", 90_000);
    } finally {
      await rpc.close();
    }
    expect(existsSync(wiped.dir)).toBe(false);
    expect(toolResultFor(h.requestsOf("/root/wipe").at(-1)!, "bash").join("\n")).toContain("REMOVED");
    expect(existsSync(path.join(kept.dir, "file.txt"))).toBe(true);
    expect(toolResultFor(h.requestsOf("/root/keep").at(-1)!, "bash").join("\n")).toContain("Blocked by user");
    await expectNoSurvivors(h);
  }, 180_000);

  it("a json root whose gate pi discovered (agent dir extensions/, no -e): the parent model gets the question notice, and its send_message answer decides", async () => {
    const root = new Program([
      spawn({ task_name: "wipe", fork_turns: "none", message: "Remove it." }),
      waitUntil((notices) => notices.some((n) => n.type === "question")),
      reply.toolCall("send_message", { target: "wipe", answer: { question_id: "wipe.0001.1", value: "Yes" } }),
      waitForAll(["/root/wipe"], 60_000),
      reply.text("ROOT DONE"),
    ]);
    const h = await tree({ scripts: { "/root": root.steps() } });
    const wiped = victim(h.home.cwd, "wiped");
    h.tree.add("/root/wipe", ...rmThenSay(wiped.command, "wipe done"));
    // Installed as a user installs a gate: pi discovers it in the root; the child (-ne) gets it from the root.
    mkdirSync(path.join(h.home.dir, "extensions"), { recursive: true });
    copyFileSync(PI_PERMISSION_GATE, path.join(h.home.dir, "extensions", "permission-gate.ts"));
    expectCleanExit(await h.runRoot("go", { timeoutMs: 120_000 }));

    const question = allNotices(h).find((n) => n.type === "question");
    expect(question).toMatchObject({ agent_name: "/root/wipe", question_id: "wipe.0001.1", method: "select" });
    expect(String(question?.title)).toContain(wiped.command);
    expect(rootResult(h, "send_message", { target: "wipe" })).toEqual({
      answered: "wipe.0001.1",
      answered_by: "parent",
    });
    expect(existsSync(wiped.dir)).toBe(false);
    expect(toolResultFor(h.requestsOf("/root/wipe").at(-1)!, "bash").join("\n")).toContain("REMOVED");
    await expectNoSurvivors(h);
  }, 180_000);
});
