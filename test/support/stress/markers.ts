/**
 * Strict pass/fail markers: a marker quoted inside other text must never count as a pass:
 * substring matching turned "## STRESS_08_OK", "STRESS_09_OK emitted" and "STRESS_11_OK must
 * NOT be returned" into false passes. A marker counts only when it is alone on its own line
 * (white space around it aside): `STRESS_<id>_OK`, or `STRESS_<id>_FAIL: <why>`.
 */

export interface MarkerVerdict {
  pass: boolean;
  /** The marker line that decided (the OK line, or the first FAIL line). */
  line?: string;
  /** Why it did not pass, in words. */
  reason?: string;
}

export const okMarker = (id: string): string => `STRESS_${id}_OK`;
export const failMarker = (id: string): string => `STRESS_${id}_FAIL`;

/** Reads the verdict of scenario `id` from a final answer. A FAIL line wins over an OK line. */
export function readMarker(text: string, id: string): MarkerVerdict {
  const ok = okMarker(id);
  const fail = failMarker(id);
  const lines = text.split(/\r?\n/).map((line) => line.trim());
  const failLine = lines.find((line) => line === fail || line.startsWith(`${fail}:`));
  if (failLine !== undefined) {
    const why = failLine.slice(fail.length).replace(/^:\s*/, "");
    return { pass: false, line: failLine, reason: `the root reported ${fail}${why ? `: ${why}` : ""}` };
  }
  if (lines.includes(ok)) return { pass: true, line: ok };
  const inProse = lines.find((line) => line.includes(ok));
  return {
    pass: false,
    reason: inProse
      ? `${ok} appears only inside a line, not alone on its own: ${JSON.stringify(inProse.slice(0, 200))}`
      : `no line holding exactly ${ok}`,
  };
}

/** The sentence every live prompt ends with, so a model knows the exact format. */
export function markerInstruction(id: string): string {
  return (
    `When every condition above holds, end your answer with a line that holds exactly ${okMarker(id)} and nothing else ` +
    `(no markdown, no quotes, no other words on that line). If a condition does not hold, end instead with one line ` +
    `${failMarker(id)}: <the condition that failed>. Never write either marker anywhere else.`
  );
}
