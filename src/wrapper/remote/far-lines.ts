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
