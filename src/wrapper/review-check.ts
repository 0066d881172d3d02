/**
 * A `review` check: a pi started for the reviewer (meta.json `verify.review`) with read-only
 * tools (it reads the work and cannot change it), in the child's cwd, without a session, given
 * the task, the child's answer and the diff of its work. The last line of its answer decides:
 * `VERDICT: pass` or `VERDICT: fail`; anything else is a failed check ("no verdict").
 */
import path from "node:path";
import type { MetaV1 } from "../contracts/meta.js";
import { CHECK_OUTPUT_CHARS, type MetaReview, REVIEW_TOOLS } from "../contracts/verify.js";
import type { Clock, TimerHandle } from "../lib/clock.js";
import { git } from "../lib/git.js";
import { tailChars } from "../lib/text.js";
import { isRecord } from "../lib/values.js";
import { buildChildArgs, type ChildOperations } from "./child.js";
import { removeTaskFile, writeTaskFile } from "./run-temp.js";

/** Reviews started by this process: each review's task file has a name of its own. */
let reviews = 0;

/** The most of the diff a reviewer is given (its start: the files in order). */
export const REVIEW_DIFF_CHARS = 60_000;

export interface ReviewResult {
  verdict: "pass" | "fail" | undefined;
  /** The end of the reviewer's answer (or why it gave none). */
  output: string;
  durationMs: number;
}

export interface ReviewContext {
  meta: MetaV1;
  review: MetaReview;
  /** The child's answer, as the turn ended. */
  answer: string;
  bin: string;
  env: Record<string, string>;
  runToken: string;
  /** The run's own folder in the temp folder: the reviewer's task file goes there, and goes with it. */
  tempDir: string;
  processes: ChildOperations;
  clock: Clock;
  timeoutMs: number;
  signal?: AbortSignal;
}

/** The verdict of an answer's last non-empty line, if it is one. */
export function parseVerdict(answer: string): "pass" | "fail" | undefined {
  const last = answer.trimEnd().split("\n").pop()?.trim() ?? "";
  const match = /^\**VERDICT:\**\s*(pass|fail)\**\.?$/i.exec(last);
  return match ? (match[1]!.toLowerCase() as "pass" | "fail") : undefined;
}

/** What the work changed against HEAD: tracked changes as a diff, new files by name. */
export async function workDiff(cwd: string): Promise<string> {
  try {
    const [diff, untracked] = await Promise.all([
      git(["diff", "HEAD", "--no-color", "--no-ext-diff"], { cwd }),
      git(["ls-files", "--others", "--exclude-standard"], { cwd }),
    ]);
    const added = untracked.trim() ? `\nNew files:\n${untracked.trim()}\n` : "";
    const text = `${diff}${added}`;
    return text.length > REVIEW_DIFF_CHARS ? `${text.slice(0, REVIEW_DIFF_CHARS)}\n[diff cut]` : text || "(no changes)";
  } catch {
    return "(not a git repository: no diff)";
  }
}

/** The reviewer's task. */
export function reviewTask(task: string, answer: string, diff: string, agentPath?: string): string {
  const whose = agentPath ? `the agent ${agentPath}'s work` : "another agent's work";
  return [
    `You review ${whose}. You can read the files; you cannot change them.`,
    `## The task it was given\n${task}`,
    `## Its answer\n${answer}`,
    `## The diff of its work\n\`\`\`diff\n${diff}\n\`\`\``,
    "Check that the work does what the task asks. End your answer with one line, exactly `VERDICT: pass` or `VERDICT: fail`.",
  ].join("\n\n");
}

/** The last assistant message's text in pi's JSON stream. */
function lastAnswer(lines: string[]): string {
  let answer = "";
  for (const line of lines) {
    if (!line.startsWith('{"type":"message_end"')) continue;
    try {
      const event: unknown = JSON.parse(line);
      const message = isRecord(event) ? event.message : undefined;
      if (!isRecord(message) || message.role !== "assistant" || !Array.isArray(message.content)) continue;
      answer = message.content
        .filter((block): block is { type: "text"; text: string } => isRecord(block) && block.type === "text")
        .map((block) => block.text)
        .join("");
    } catch {
      // not an event line
    }
  }
  return answer;
}

/** Runs the reviewer to its end (or its time-out); never rejects. */
export async function runReview(context: ReviewContext): Promise<ReviewResult> {
  const { meta, review, clock } = context;
  const started = clock.now();
  const task = reviewTask(meta.task, context.answer, await workDiff(meta.cwd), meta.agentPath);
  const reviewerMeta: MetaV1 = {
    runId: `${meta.runId}-review`,
    task,
    cwd: meta.cwd,
    resultPath: meta.resultPath,
    eventsPath: meta.eventsPath,
    tools: [...REVIEW_TOOLS],
    noExtensions: true,
    ...((review.model ?? meta.resolvedModel ?? meta.requestedModel) && {
      resolvedModel: review.model ?? meta.resolvedModel ?? meta.requestedModel,
    }),
    ...(review.systemPromptPath && { systemPromptPath: review.systemPromptPath }),
  };
  reviews += 1;
  const taskFile = path.join(context.tempDir, `review-task-${reviews}.txt`);
  await writeTaskFile(taskFile, task);
  try {
    const answer = await reviewAnswer(context, buildChildArgs(reviewerMeta), taskFile);
    const verdict = answer.ended ? undefined : parseVerdict(answer.text);
    const output = answer.ended ?? (verdict ? answer.text : `no verdict: ${answer.text || "(no answer)"}`);
    return { verdict, output: tailChars(output.trim(), CHECK_OUTPUT_CHARS), durationMs: clock.now() - started };
  } finally {
    await removeTaskFile(taskFile);
  }
}

/** The reviewer's answer, or why it has none (it could not start, its time-out, a stop). */
function reviewAnswer(
  context: ReviewContext,
  args: string[],
  taskFile: string,
): Promise<{ text: string; ended?: string }> {
  const { processes, clock } = context;
  return new Promise((resolve) => {
    const lines: string[] = [];
    let partial = "";
    let ended: string | undefined;
    const timers: TimerHandle[] = [];
    const child = processes.spawn(context.bin, args, {
      cwd: context.meta.cwd,
      env: context.env,
      taskFile,
      tempDir: context.tempDir,
      runToken: context.runToken,
    });
    const stop = (why: string) => {
      ended ??= why;
      processes.signalGroup(child.pid, "SIGTERM");
      timers.push(clock.setTimeout(() => processes.signalGroup(child.pid, "SIGKILL"), 1000));
    };
    const onAbort = () => stop("the reviewer was stopped: the run was stopped");
    child.stdout.on("data", (chunk: Buffer) => {
      const text = partial + chunk.toString("utf8");
      const parts = text.split("\n");
      partial = parts.pop() ?? "";
      lines.push(...parts.filter((line) => line.startsWith('{"type":"message_end"')));
    });
    child.stderr.resume();
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      for (const timer of timers) clock.clearTimeout(timer);
      context.signal?.removeEventListener("abort", onAbort);
      processes.signalGroup(child.pid, "SIGKILL");
      resolve({ text: lastAnswer([...lines, partial]), ...(ended && { ended }) });
    };
    child.once("error", (err) => {
      ended ??= `the reviewer could not start: ${err.message}`;
      finish();
    });
    // Its answer is whole once stdout ends; a straggler holding stdout does not hold the check.
    child.stdout.once("end", () => exited && finish());
    let exited = false;
    child.once("exit", () => {
      exited = true;
      if (child.stdout.readableEnded) finish();
      else timers.push(clock.setTimeout(finish, 1000));
    });
    timers.push(
      clock.setTimeout(
        () => stop(`the reviewer timed out after ${Math.round(context.timeoutMs / 1000)} s`),
        context.timeoutMs,
      ),
    );
    if (context.signal?.aborted) onAbort();
    else context.signal?.addEventListener("abort", onAbort, { once: true });
  });
}
