/**
 * The fake pi's steps for a run that reaches a limit or a budget (test/wrapper/limits.test.ts,
 * period-budget.test.ts): the real task extension loaded, a pi that does not settle (0.73.1),
 * a bash call, and pi running it while the wrapper writes the wrap-up that it then steers in.
 */

/** The fake pi's environment: the real task extension loaded, and a pi of the line without agent_settled. */
export const LOAD = { FAKE_PI_LOAD_EXTENSIONS: "task-extension.js", PI_SUBAGENTS_PI_VERSION: "0.73.1" };

/** A run's first steps: agent_start, turn_start, the user's prompt. */
export const start = [{ agentStart: true }, { turnStart: true }, { user: true }];

/** A final answer. */
export const answer = (text: string) => ({ assistant: { text, stopReason: "stop" } });

/** An assistant message calling bash (`id`), with `text` before the call when given. */
export const bashCall = (id: string, text = "") => ({
  assistant: {
    ...(text && { text }),
    toolCalls: [{ id, name: "bash", arguments: { command: "true" } }],
    stopReason: "toolUse",
  },
});

/** pi runs the tool while the wrapper writes the wrap-up; the extension steers it; pi reads it before its next request. */
export const toolThenSteer = (id: string) => [
  { awaitSteer: 5000 },
  { tool: { id, name: "bash", output: "ok" } },
  { turnEnd: true },
  { turnStart: true },
  { steer: true },
];

/** pi runs the tool and starts its next turn, with nothing steered in. */
export const toolDone = (id: string) => [
  { tool: { id, name: "bash", output: "ok" } },
  { turnEnd: true },
  { turnStart: true },
];
