// A tiny OpenAI-compatible chat-completions server on 127.0.0.1 that plays every agent of
// the demo tree. Each request is routed by the agent path a child's system prompt names
// ("You are the agent /root/x "); the root's names none. No network beyond loopback.
import http from "node:http";

const agentOf = (body) => {
  const system = (body.messages ?? [])
    .filter((m) => m.role === "system" || m.role === "developer")
    .map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)))
    .join("\n");
  return /You are the agent (\/root\/[a-z0-9_/]+) /.exec(system)?.[1] ?? "/root";
};

const toolMessages = (body) =>
  (body.messages ?? [])
    .filter((m) => m.role === "tool")
    .map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));

/** The demo's script: what each agent says at each of its steps (a step = one LLM call). */
const SCRIPT = {
  "/root": (body) => {
    const results = toolMessages(body).map((text) => {
      try {
        return JSON.parse(text);
      } catch {
        return {};
      }
    });
    if (results.length === 0) {
      return {
        text: "I'll send a scout to survey the repository and a lead to check the wrapper, then wait for both.",
        calls: [
          [
            "spawn_agent",
            {
              task_name: "survey",
              agent_type: "scout",
              fork_turns: "none",
              message: "List the top-level entries of the working directory and say which look like source code.",
            },
          ],
          [
            "spawn_agent",
            {
              task_name: "lead",
              fork_turns: "none",
              message: "Have a helper confirm that bin/subagent-wrapper exists, then report what it is.",
            },
          ],
        ],
      };
    }
    const notices = results.reduce((n, r) => n + (r.notices?.length ?? 0), 0);
    if (notices < 2) return { calls: [["wait_agent", { timeout_ms: 60000 }]] };
    if (!results.some((r) => Array.isArray(r.agents))) return { calls: [["list_agents", {}]] };
    return { text: "Both children reported back; the tree is complete." };
  },
  "/root/survey": [
    () => ({ calls: [["ls", { path: "." }]] }),
    (body) => {
      const entries = (toolMessages(body).at(-1) ?? "")
        .split("\n")
        .map((s) => s.trim())
        .filter(Boolean);
      const source = entries.filter((e) => /^(src|bin|test|fixtures|scripts|bench)\/?$/.test(e));
      return {
        text: `The working directory has ${entries.length} entries; source-like: ${source.join(", ") || "none"}.`,
      };
    },
  ],
  "/root/lead": [
    () => ({
      calls: [
        [
          "spawn_agent",
          {
            task_name: "checker",
            fork_turns: "none",
            message: "Read the first line of bin/subagent-wrapper and quote it.",
          },
        ],
      ],
    }),
    () => ({ calls: [["wait_agent", { timeout_ms: 60000 }]] }),
    (body) => {
      const waited = JSON.parse(toolMessages(body).at(-1) ?? "{}");
      const report = waited.notices?.[0]?.report ?? "(no report)";
      return {
        text: `My helper /root/lead/checker says: ${report} — so bin/subagent-wrapper is a Node.js executable script.`,
      };
    },
  ],
  "/root/lead/checker": [
    () => ({ calls: [["read", { path: "bin/subagent-wrapper", limit: 1 }]] }),
    (body) => ({ text: `The first line is \`${(toolMessages(body).at(-1) ?? "").split("\n")[0]}\`.` }),
  ],
};

function sse(res, { text = "", calls = [] }) {
  const chunk = (delta, finish, usage) =>
    `data: ${JSON.stringify({ id: "demo", object: "chat.completion.chunk", created: 0, model: "fast", choices: [{ index: 0, delta, finish_reason: finish ?? null }], ...(usage && { usage }) })}\n\n`;
  let out = chunk({ role: "assistant", content: text });
  calls.forEach(([name, args], index) => {
    out += chunk({
      tool_calls: [
        {
          index,
          id: `call_${Date.now()}_${index}`,
          type: "function",
          function: { name, arguments: JSON.stringify(args) },
        },
      ],
    });
  });
  out += chunk({}, calls.length ? "tool_calls" : "stop", {
    prompt_tokens: 200,
    completion_tokens: 40,
    total_tokens: 240,
  });
  res.writeHead(200, { "content-type": "text/event-stream" });
  res.end(`${out}data: [DONE]\n\n`);
}

/**
 * Serves `script` (agent path → a function of the request body, or a list of such steps
 * taken in order, the last one repeating) until close(). Each step answers `{text, calls}`.
 */
export async function startLoopbackLlm(script) {
  const steps = new Map();
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
      const agent = agentOf(body);
      const step = steps.get(agent) ?? 0;
      steps.set(agent, step + 1);
      const agentSteps = script[agent] ?? [];
      const next =
        typeof agentSteps === "function"
          ? agentSteps
          : (agentSteps[Math.min(step, agentSteps.length - 1)] ?? (() => ({ text: "done" })));
      sse(res, next(body));
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** The demo tree's LLM. */
export function startDemoLlm() {
  return startLoopbackLlm(SCRIPT);
}
