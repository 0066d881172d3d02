/** How the caller of a run (the CLI, an embedder, a test) sets it up. */
import type { Clock } from "../lib/clock.js";
import type { ChildOperations } from "./child.js";
import type { SparePi } from "./spare-pi.js";
import type { StandbyLauncher } from "./standby.js";

export interface RunOptions {
  /** One-line warnings and errors for the user (stderr in the CLI). */
  warn?: (line: string) => void;
  /** Handle SIGTERM/SIGINT/SIGHUP to the wrapper (the CLI does; embedders may not). */
  handleSignals?: boolean;
  /** A signal that arrived before the run could handle it (while meta.json was read). */
  earlySignal?: NodeJS.Signals;
  env?: NodeJS.ProcessEnv;
  /** The run's clock and timers (default: Node's). */
  clock?: Clock;
  /** How the child is found, started and signalled (default: the real pi, see child.ts). */
  child?: ChildOperations;
  /** How the warm standby of a run with fallbacks starts (standby.ts; default: the real one, unless `child` is given). */
  standby?: StandbyLauncher;
  /** A spare pi already started (spare-pi.ts): the run's first pi, when the turn fits it. */
  spare?: SparePi;
}
