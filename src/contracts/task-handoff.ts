/**
 * How a run's task reaches its child pi, between the wrapper and the task extension inside
 * the child: the wrapper writes the task's exact text to a file (named in the child's
 * environment, ENV.taskFile) and gives pi this placeholder as its message; the task
 * extension swaps the placeholder for the file's text on pi's `input` event. pi would trim,
 * parse or cap the task on its command line; the file carries it verbatim.
 */
export const TASK_PLACEHOLDER = "(subagent task: delivered by the pi-subagent-tree task extension)";
