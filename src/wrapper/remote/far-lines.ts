/**
 * serve's own lines about the far side start `on far:`; here they get the far side's name,
 * so a user reads where it happened: `on far (ssh me@host): pi not found on the far PATH`.
 */
import type { ResolvedRunner } from "../../contracts/runners.js";
import { FAR_LINE_MARK } from "../../contracts/serve-protocol.js";

const MARK = Buffer.from(FAR_LINE_MARK);

/** `data` (a chunk of the far stderr) with `on far:` at its start naming the runner's far side. */
export function nameFarSide(data: Buffer, runner: ResolvedRunner): Buffer {
  if (!data.subarray(0, MARK.length).equals(MARK)) return data;
  const name = runner.kind === "ssh" ? `ssh ${runner.host}` : `${runner.kind} ${runner.name}`;
  return Buffer.concat([Buffer.from(`on far (${name}):`), data.subarray(MARK.length)]);
}

/** A line that says a runner's turn failed before pi could answer: the runner did not start, or the far side said why. */
const RUNNER_FAILURE = /^(runner \S+ \([a-z]+\) could not start\b|on far \()/m;
/** A line of the runner's own (the local wrapper's about it, or serve's): the error begins at the first. */
const RUNNER_LINE = /^(runner \S+ \([a-z]+\)[: ]|on far \()/m;

/**
 * When the stderr tail holds such a failure: the tail from the runner's first line of its own
 * on (a cluster's refusal or a protocol error comes before the `could not start` line), else
 * undefined. The run's error then says `runner far (ssh) could not start: …` or `on far (ssh
 * me@host): pi not found on the far PATH`, not `pi exited with code 1`.
 */
export function runnerFailureText(stderrTail: string): string | undefined {
  if (!RUNNER_FAILURE.test(stderrTail)) return undefined;
  const first = RUNNER_LINE.exec(stderrTail);
  return first ? stderrTail.slice(first.index).trim() : undefined;
}
