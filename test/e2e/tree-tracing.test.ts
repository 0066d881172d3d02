/**
 * The tree as one OpenTelemetry trace, end to end with the real pi and the scripted LLM: a
 * root, two children and a grandchild, exported over OTLP/HTTP to a receiver in the test
 * that decodes what the SDK sends. Every span is in one trace; each child's turn hangs off
 * its parent's spawn_agent call (across the wrapper's process boundary), and pi inside a
 * child sees its own turn's TRACEPARENT.
 */
import { afterEach, describe, expect, it } from "vitest";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../support/otlp-receiver.js";
import { reply } from "../support/scripted-llm.js";
import {
  expectCleanExit,
  expectNoSurvivors,
  Program,
  spawn,
  useTrees,
  waitForAll,
} from "../support/tree-harness-extra.js";

const tree = useTrees();
const SCENARIO_MS = 150_000;

let receiver: OtlpReceiver | undefined;
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

const TURNS = ["/root", "/root/alpha", "/root/beta", "/root/alpha/gamma"];

function turnOf(spans: ReceivedSpan[], agent: string): ReceivedSpan {
  const found = spans.filter((span) => span.name === `invoke_agent ${agent}`);
  expect(found, agent).toHaveLength(1);
  return found[0]!;
}

describe("tracing a tree", () => {
  it(
    "a root, two children and a grandchild are one trace, each turn under its parent's spawn_agent call",
    async () => {
      receiver = await startOtlpReceiver();
      const alpha = new Program([
        spawn({ task_name: "gamma", fork_turns: "none", message: "leaf work" }),
        waitForAll(["/root/alpha/gamma"], 30_000),
        reply.text("ALPHA DONE"),
      ]);
      const h = await tree({
        scripts: {
          "/root": new Program([
            spawn({ task_name: "alpha", fork_turns: "none", message: "lead" }),
            spawn({ task_name: "beta", fork_turns: "none", message: "side" }),
            waitForAll(["/root/alpha", "/root/beta"], 60_000),
            reply.text("ROOT DONE"),
          ]).steps(),
          "/root/alpha": alpha.steps(),
          "/root/beta": [reply.text("BETA DONE")],
          "/root/alpha/gamma": [
            reply.toolCall("bash", { command: 'echo "TP=$TRACEPARENT"' }),
            reply.text("GAMMA DONE"),
          ],
        },
        env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: "tree-under-test" },
      });
      expectCleanExit(await h.runRoot("go", { timeoutMs: 120_000 }));
      const spans = await receiver.waitUntil((all) =>
        TURNS.every((agent) => all.some((s) => s.name === `invoke_agent ${agent}`)),
      );

      expect(new Set(spans.map((span) => span.traceId)).size).toBe(1);
      const byId = new Map(spans.map((span) => [span.spanId, span]));
      const parentOf = (span: ReceivedSpan) => byId.get(span.parentSpanId ?? "");
      const root = turnOf(spans, "/root");
      expect(root.parentSpanId).toBeUndefined();
      expect(root.resource["service.name"]).toBe("tree-under-test");

      for (const [agent, parentAgent] of [
        ["/root/alpha", "/root"],
        ["/root/beta", "/root"],
        ["/root/alpha/gamma", "/root/alpha"],
      ] as const) {
        const turn = turnOf(spans, agent);
        const call = parentOf(turn);
        expect(call?.name, agent).toBe("execute_tool spawn_agent");
        expect(call!.parentSpanId, agent).toBe(turnOf(spans, parentAgent).spanId);
        expect(turn.attributes).toMatchObject({
          "gen_ai.operation.name": "invoke_agent",
          "gen_ai.agent.name": agent,
          "pi_subagent.status": "completed",
        });
        expect(turn.attributes["gen_ai.request.model"]).toEqual(expect.any(String));
        expect(turn.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0);
        // Its model requests are inside it.
        expect(
          spans.some((span) => span.name.startsWith("chat") && span.parentSpanId === turn.spanId),
          agent,
        ).toBe(true);
      }
      // The two spawn calls of the root are two spans: alpha and beta hang off different ones.
      expect(turnOf(spans, "/root/alpha").parentSpanId).not.toBe(turnOf(spans, "/root/beta").parentSpanId);

      // pi in the grandchild ran with its own turn's TRACEPARENT (what a tracing extension there would nest under).
      const gamma = turnOf(spans, "/root/alpha/gamma");
      const seen = JSON.stringify(h.allResultsOf("/root/alpha/gamma"));
      expect(seen).toContain(`TP=00-${gamma.traceId}-${gamma.spanId}-01`);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );
});
