/**
 * The process helper's own process (process-helper.ts starts it with an IPC channel): it
 * runs each program it is sent with runProcess and sends the result back. It ends when its
 * parent goes (the channel closes); what it started is in process groups of their own with
 * time limits, as when the parent starts them itself.
 */

import type { HelperReply, HelperRequest } from "./process-helper.js";
import { runProcess } from "./run-process.js";

const send = (reply: HelperReply): void => {
  process.send?.(reply);
};

process.on("message", (request: HelperRequest) => {
  runProcess(request.file, request.args, request.options).then(
    (result) => send({ id: request.id, result }),
    (error: unknown) => send({ id: request.id, error: error instanceof Error ? error.message : String(error) }),
  );
});
process.on("disconnect", () => process.exit(0));
send({ ready: true });
