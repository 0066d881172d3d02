/**
 * The far host of the ssh runner tests (test/support/ssh-host.ts) can run this line's real pi
 * over ssh, as a child of an ssh runner will: pi from the install the far host sees (the
 * checkout itself is hidden there), its own pi settings in the far user's home, and an answer
 * from the scripted LLM listening on this machine's side of the veth.
 */
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { missingNeeds, skipOrFail } from "../support/needs.js";
import { fakeModels, PI_LINE } from "../support/pi-home.js";
import { lastAssistant, messageText, parseNdjson } from "../support/pi-json.js";
import { type ChatRequest, reply, type ScriptedLlm, startScriptedLlm, userTexts } from "../support/scripted-llm.js";
import { SSH_HOST_TOOLS, type SshHost, startSshHost } from "../support/ssh-host.js";

const missing = missingNeeds(SSH_HOST_TOOLS, { root: true });

describe("pi on the far host", () => {
  let far: SshHost | undefined;
  let llm: ScriptedLlm | undefined;
  beforeAll(async () => {
    if (missing !== undefined) return;
    far = await startSshHost({ pi: { node: PI_LINE.node, piCli: PI_LINE.piCli } });
    llm = await startScriptedLlm({ host: far.hostAddress });
    const settings = { defaultProvider: "fake", defaultModel: "fast", quietStartup: true, retry: { enabled: false } };
    await far.writePiSettings({ models: fakeModels(llm.url), settings });
  }, 30_000);
  afterAll(async () => {
    await llm?.close();
    await far?.stop();
  });

  it("answers a prompt over ssh: the line's pi and node, the LLM on the host side of the veth", async (ctx) => {
    skipOrFail(ctx, missing);
    const host = far as SshHost;
    const server = llm as ScriptedLlm;
    server.script([reply.text("hello from far away")]);
    const result = await host.run("cd ~ && node --version && pi --mode json -np 'say hi' </dev/null", {
      timeoutMs: 60_000,
    });
    expect(result.code, result.stderr).toBe(0);
    const [nodeVersion, ...events] = result.stdout.trim().split("\n");
    expect(nodeVersion).toBe(execFileSync(PI_LINE.node, ["--version"], { encoding: "utf8" }).trim());
    const last = lastAssistant(parseNdjson(events.join("\n")));
    expect(last && messageText(last)).toBe("hello from far away");
    expect(server.requests).toHaveLength(1);
    expect(userTexts(server.requests[0] as ChatRequest)).toContain("say hi");
  });
});
