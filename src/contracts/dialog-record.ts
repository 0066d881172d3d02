/**
 * dialogs.jsonl in the tree directory: every child dialog of the tree and how it ended, one
 * JSON line each, appended by the agent whose child asked (the extension) and read by
 * `inspect`. Several processes of a tree append to it at once: each line is one write.
 */
import type { DialogAnswerer, DialogMethod } from "./dialogs.js";

/** One line of dialogs.jsonl: one dialog of the tree and how it ended. */
export interface DialogRecordV1 {
  version: 1;
  /** The asking agent's path (the child whose run asked). */
  agent: string;
  run: string;
  seq: number;
  method: DialogMethod;
  /** The extension's text, as it asked. */
  title: string;
  message?: string;
  options?: string[];
  askedAt: string;
  answeredBy: DialogAnswerer;
  answeredAt: string;
  value?: string;
  confirmed?: boolean;
  cancelled?: boolean;
}
