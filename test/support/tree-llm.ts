/**
 * Routes the scripted LLM's requests by agent: a child's system prompt names its canonical
 * path ("You are the agent /root/x"), the root's names none. Each agent has its own script:
 * replies in order, or a function of the request (to echo what the agent was sent).
 */
import type { ChatRequest, Reply, ScriptedLlm } from "./scripted-llm.js";
import { reply, systemText, userTexts } from "./scripted-llm.js";

export type AgentStep = Reply | ((req: ChatRequest) => Reply);

export function agentOf(req: ChatRequest): string {
  const agent = /You are the agent (\/root\/[a-z0-9_/]+) /.exec(systemText(req))?.[1];
  if (agent) return agent;
  // A verify review's reviewer (its task names the agent it reviews): `<path>:review`.
  const reviewed = /^You review the agent (\/root\/[a-z0-9_/]+)'s work/.exec(userTexts(req)[0] ?? "")?.[1];
  return reviewed ? `${reviewed}:review` : "/root";
}

export interface TreeScript {
  /** Requests each agent made, in order. */
  requests: Map<string, ChatRequest[]>;
  /** Appends steps to an agent's script. */
  add(agent: string, ...steps: AgentStep[]): void;
}

/** Installs the router; an agent whose script ran out answers `(<path> has no scripted reply)`. */
export function routeByAgent(llm: ScriptedLlm, scripts: Record<string, AgentStep[]> = {}): TreeScript {
  const queues = new Map<string, AgentStep[]>(Object.entries(scripts).map(([agent, steps]) => [agent, [...steps]]));
  const requests = new Map<string, ChatRequest[]>();
  llm.onRequest((req) => {
    const agent = agentOf(req);
    requests.set(agent, [...(requests.get(agent) ?? []), req]);
    const step = queues.get(agent)?.shift();
    if (!step) return reply.text(`(${agent} has no scripted reply)`);
    return typeof step === "function" ? step(req) : step;
  });
  return {
    requests,
    add: (agent, ...steps) => queues.set(agent, [...(queues.get(agent) ?? []), ...steps]),
  };
}

/** The tool results (role "tool") a request carries, parsed as JSON when they are. */
export function toolResults(req: ChatRequest): unknown[] {
  return (req.messages ?? [])
    .filter((m) => m.role === "tool")
    .map((m) => {
      const text = typeof m.content === "string" ? m.content : JSON.stringify(m.content);
      try {
        return JSON.parse(text);
      } catch {
        return text;
      }
    });
}

export function lastToolResult(req: ChatRequest): unknown {
  return toolResults(req).at(-1);
}

export { userTexts };
