/**
 * The agent's workspace on its way to a far side and its turn on the way back: the base the
 * far side starts from, the `start` frame with its blobs (the workspace's bundle, the task,
 * the system prompt, the session), and the turn's commit landing on the local branch.
 */
import fs from "node:fs";
import type { MetaV1 } from "../../contracts/meta.js";
import { ARG_TOKENS, type BlobKind, type ServeStart } from "../../contracts/serve-protocol.js";
import { errorText } from "../../lib/values.js";
import { type SpawnOptions, TASK_EXTENSION_PATH } from "../child.js";
import { checkoutDone, letCheckoutGo } from "./local-side.js";
import { landTurn, type WorkspaceBase, workspaceBase } from "./workspace-bundle.js";

/**
 * The `start` frame of a run and its blobs, in the order they go: this machine's paths in
 * pi's argv (the task extension, the system prompt, the session) become the tokens the far
 * side replaces with its own.
 */
export function startFrame(
  meta: MetaV1,
  args: string[],
  options: SpawnOptions,
  workspace: WorkspaceBase,
  bundle: Buffer,
): { frame: ServeStart; blobs: Array<[BlobKind, Buffer]> } {
  const tokens = new Map<string, string>([[TASK_EXTENSION_PATH, ARG_TOKENS.taskExtension]]);
  const blobs: Array<[BlobKind, Buffer]> = [
    ["bundle", bundle],
    ["task", fs.readFileSync(options.taskFile)],
  ];
  if (meta.systemPromptPath) {
    tokens.set(meta.systemPromptPath, ARG_TOKENS.systemPrompt);
    blobs.push(["system_prompt", fs.readFileSync(meta.systemPromptPath)]);
  }
  if (meta.sessionPath) {
    tokens.set(meta.sessionPath, ARG_TOKENS.session);
    if (fs.existsSync(meta.sessionPath)) blobs.push(["session", fs.readFileSync(meta.sessionPath)]);
  }
  const frame: ServeStart = {
    t: "start",
    runId: meta.runId,
    args: args.map((arg) => tokens.get(arg) ?? arg),
    env: meta.env ?? {},
    cwd: workspace.cwd,
    base: workspace.base,
    blobs: blobs.map(([kind]) => kind),
    inbox: options.inboxDir !== undefined,
  };
  return { frame, blobs };
}

/** One run's workspace: its base, the local checkout let go on, the turn's commits landed in order. */
export class WorkspaceShipping {
  private checkoutLetGo = false;
  private landing: Promise<void> = Promise.resolve();

  constructor(
    private readonly meta: MetaV1,
    private readonly options: SpawnOptions,
    /** A line for the run's log (a commit that could not land). */
    private readonly say: (line: string) => void,
    /** The run asked the child to stop: a checkout still being written is waited for only briefly. */
    private readonly stopped: () => boolean,
  ) {}

  /**
   * The workspace's base commit. A checkout still being written (meta.json `cwdReadyPath`: a
   * new isolated worktree) is HEAD itself: its tree goes at once, and the checkout is let go
   * on (its `.started` file) once the far side's pi has started (its first output), so the two
   * do not share the CPU; the turn's commit lands once it is done (land()).
   */
  base(): Promise<WorkspaceBase> {
    return workspaceBase(this.meta.cwd, this.options.cwdReady !== undefined, this.options.tempDir);
  }

  /** The local checkout may go on (see base()): once, on pi's first output or the end. */
  letCheckoutGo(): void {
    const ready = this.options.cwdReady;
    if (!ready || this.checkoutLetGo) return;
    this.checkoutLetGo = true;
    letCheckoutGo(ready);
  }

  /** The turn's commit lands on the local branch; a failure is told on stderr (the run's warnings see it). */
  land(workspace: WorkspaceBase, bundle: Buffer): void {
    const ready = this.options.cwdReady;
    this.landing = this.landing.then(async () => {
      try {
        // A checkout still being written is waited for (after a stop, at most
        // CHECKOUT_AFTER_STOP_MS: a root that died while writing it); a commit that cannot
        // land is kept (landTurn).
        if (ready) await checkoutDone(ready, this.stopped);
        await landTurn(workspace, bundle, this.meta.runId, this.options.tempDir);
      } catch (err) {
        this.say(errorText(err));
      }
    });
  }

  /** Every commit handed to land() has landed (or failed and was told). */
  get landed(): Promise<void> {
    return this.landing;
  }
}
