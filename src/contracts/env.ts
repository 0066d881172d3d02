/**
 * Every environment variable the package reads or sets, in one place. Users set the
 * `PI_SUBAGENTS_*` ones (README, Configuration); the extension and the wrapper set the rest
 * for the processes they start. `PI_SUBAGENT_*` (singular) are the wrapper's private channel
 * to the task extension inside its child; the task extension removes them from its own
 * environment, so the child's tools never see them — all but the run token, which is meant
 * to be inherited.
 */
import { randomBytes } from "node:crypto";

export const ENV = {
  // --- the wrapper -------------------------------------------------------------------------
  /** The pi executable: a path, or a name looked up on PATH (default `pi`). */
  piBin: "PI_SUBAGENTS_PI_BIN",
  /**
   * pi's version (e.g. `1.6.0`), for a pi build whose package.json is not above its binary:
   * the wrapper reads it there otherwise, to know whether pi emits `agent_settled`.
   */
  piVersion: "PI_SUBAGENTS_PI_VERSION",
  /**
   * The command that started pi, set by the `pi-subagent-tree` launcher (default `pi`): the
   * exit and re-attach hints name it, so a user is told `pi-subagent-tree -c`, not `pi -c`.
   */
  launcher: "PI_SUBAGENTS_LAUNCHER",
  /** A pid: the wrapper stops its run (outcome `interrupted`) once that process is gone. */
  parentPid: "PI_SUBAGENTS_PARENT_PID",
  /**
   * In every child's environment: the root's session id. pi permission extensions read this
   * name to find the session that holds the person (a child's dialog is the root's to answer).
   */
  parentSession: "PI_SUBAGENT_PARENT_SESSION",
  /** Cap of each raw log (stdout.log, stderr.log) in bytes, or `unlimited` (default 8 MiB). */
  logMaxBytes: "PI_SUBAGENTS_LOG_MAX_BYTES",
  /** Set by the wrapper for its child: the file holding the task text (read once, then removed). */
  taskFile: "PI_SUBAGENT_TASK_FILE",
  /** Set by the wrapper for its child: the wrapper's pid (the child stops when it changes). */
  wrapperPid: "PI_SUBAGENT_WRAPPER_PID",
  /**
   * Set by the wrapper for its child: a random token of the run. Unlike the two above it stays
   * in the environment, so every process below the child inherits it and the wrapper's orphan
   * guard can find (and end) the ones that left the child's process group.
   */
  runToken: "PI_SUBAGENT_RUN_TOKEN",
  /** Set by the wrapper for its child when meta.json has `inboxPath`: the folder of live messages the task extension hands to pi. */
  inboxDir: "PI_SUBAGENT_INBOX_DIR",
  /** Set by the wrapper for its child when meta.json has `cwdReadyPath`: the file the task extension waits for before pi loads the project. */
  cwdReady: "PI_SUBAGENT_CWD_READY",
  /**
   * Set by a spare wrapper for its pi (contracts/spare.ts): the hand-over file. Once a turn
   * takes the spare, the task extension finds the turn's environment there when pi loads its
   * extensions again for the turn's session, and sets it before any other extension reads it.
   */
  spareHandover: "PI_SUBAGENT_SPARE_HANDOVER",
  /** `0` turns the spare pi off whatever the settings say (setting `spare`). */
  spare: "PI_SUBAGENTS_SPARE",
  /**
   * Set by the root for a spare wrapper it starts: the run token (32 hex digits) that wrapper
   * gives its pi, so that the root can find and kill that pi — which has a process group of
   * its own — when the wrapper does not end in time.
   */
  spareRunToken: "PI_SUBAGENTS_SPARE_RUN_TOKEN",

  // --- the extension: where this process sits in the tree ---------------------------------
  /** The tree directory; set for every child by its parent's launcher. */
  treeDir: "PI_SUBAGENTS_TREE_DIR",
  /** The child's canonical path (`/root/a/b`); set for every child by its parent's launcher. */
  agentPath: "PI_SUBAGENTS_AGENT_PATH",
  /**
   * Set by the extension in the meta.json `env` of a child on a runner other than local:
   * `<name> (<kind>)`. Such a child is away from the tree directory (a sandbox sees it
   * read-only, or not at all in its default place below pi's hidden session history; ssh,
   * slurm and command runners not at all), so its spawn_agent refuses.
   */
  runner: "PI_SUBAGENTS_RUNNER",
  /** The folder that holds tree directories (default: `subagents/` beside the root's session file). */
  baseDir: "PI_SUBAGENTS_DIR",

  // --- the extension: limits and budget ----------------------------------------------------
  maxActiveChildTurns: "PI_SUBAGENTS_MAX_ACTIVE_CHILD_TURNS",
  maxDepth: "PI_SUBAGENTS_MAX_DEPTH",
  maxSpawns: "PI_SUBAGENTS_MAX_SPAWNS",
  turnTimeoutMs: "PI_SUBAGENTS_TURN_TIMEOUT_MS",
  /** A token budget for the whole tree: once spent, no new turn starts. */
  budgetTokens: "PI_SUBAGENTS_BUDGET_TOKENS",
  /** A cost budget for the whole tree (pi's cost.total units). */
  budgetCost: "PI_SUBAGENTS_BUDGET_COST",
  /**
   * Set by the extension in a turn's meta.json `env`: what was left of the tree's token budget
   * when the turn started. The wrapper wraps the turn up (`tree_budget_tokens`) once the turn
   * has used that much; only with meta.json `limits`.
   */
  budgetLeftTokens: "PI_SUBAGENTS_BUDGET_LEFT_TOKENS",
  /** The same for the cost budget (`tree_budget_cost`). */
  budgetLeftCost: "PI_SUBAGENTS_BUDGET_LEFT_COST",
  /**
   * Set by the extension in a turn's meta.json `env` beside what is left: the tree's budget
   * board, a folder where the wrapper of every running turn posts what its turn has used so
   * far. Each wrapper adds what the others spent since its turn started to its own use, so
   * turns side by side are wrapped up once the tree's total crosses the budget, not each only
   * at what was left for it alone.
   */
  budgetBoard: "PI_SUBAGENTS_BUDGET_BOARD",
  /**
   * Set by the extension in a turn's meta.json `env` when settings `confirm_every_usd` is set:
   * the tree's spend gate (contracts/spend-gate.ts). The wrapper looks at it while the turn runs
   * and wraps the turn up (`tree_budget_cost`) once the person has said no to spending more.
   */
  spendGate: "PI_SUBAGENTS_SPEND_GATE",
  /**
   * Set by the extension in every turn's meta.json `env`: the folder of the spending ledger
   * (layout.ts `ledgerDir`). The wrapper appends each model request's cost there, so the
   * settings' period budgets see what every tree of the user spends. Unset: nothing is recorded.
   */
  ledgerDir: "PI_SUBAGENTS_LEDGER",
  /**
   * Set by the extension in a turn's meta.json `env` from the settings `budgets.daily_usd` /
   * `budgets.monthly_usd`: the wrapper wraps the turn up (`daily_budget_usd` /
   * `monthly_budget_usd`) once the ledger's day or month reaches it; only with meta.json `limits`.
   */
  budgetDailyUsd: "PI_SUBAGENTS_BUDGET_DAILY_USD",
  budgetMonthlyUsd: "PI_SUBAGENTS_BUDGET_MONTHLY_USD",

  // --- the extension: interactive use ---------------------------------------------------
  /**
   * `0` (or `false`, `no`, `off`): a child that ends while the interactive root is idle is only
   * shown to the user; by default its notice wakes the root's model.
   */
  wake: "PI_SUBAGENTS_WAKE",
  /**
   * `detach` or `stop`: what a deliberate exit of the root does with running turns;
   * beats the `onExit` setting. Default: detach in interactive mode, stop in print/json/rpc.
   */
  onExit: "PI_SUBAGENTS_ON_EXIT",
  /**
   * Testing only: a step of a notice's delivery (`end_recorded`, `given`, `pushed`, `taking`,
   * `taken`) at which the root SIGKILLs itself, to prove each notice is given exactly once
   * whatever step a root dies at (test/e2e/tree-durable.test.ts).
   */
  faultAt: "PI_SUBAGENTS_TEST_KILL_AT",
  /**
   * Testing only: how long (ms) a runner turn that was stopped still waits for a local checkout
   * that never says ready (default 30 000), so the test of that wait takes seconds.
   */
  checkoutAfterStopMs: "PI_SUBAGENTS_TEST_CHECKOUT_AFTER_STOP_MS",

  // --- the extension: isolated children (docs/isolation.md) ---------------------------------
  /** A shell command run in each new worktree before the child's first turn (link node_modules, …). */
  worktreeSetup: "PI_SUBAGENTS_WORKTREE_SETUP",
  /** Time limit of that command in ms (default 120 000); over it, the spawn fails. */
  worktreeSetupTimeoutMs: "PI_SUBAGENTS_WORKTREE_SETUP_TIMEOUT_MS",
  /** Set for the setup command: the working tree the child's starting state came from (the parent's top). */
  worktreeSource: "PI_SUBAGENTS_WORKTREE_SOURCE",

  // --- the extension: a child's dialogs (docs/dialogs.md) ---------------------------------
  /**
   * Set by the extension in every child's meta.json `env`: where the tree sends a dialog
   * (`person`, `parent`, `deny`), decided by the root from its `dialogs` setting and whether it
   * has a UI. A child below the root passes a dialog up with its own pi dialog only on `person`.
   */
  dialogRoute: "PI_SUBAGENTS_DIALOG_ROUTE",

  // --- the extension: roles ----------------------------------------------------------------
  /** `1`: also read agent definitions from the project's `.pi/agents/`. */
  projectAgents: "PI_SUBAGENTS_PROJECT_AGENTS",

  // --- tracing (docs/tracing.md; the standard names, the SDK reads the other OTEL_* itself) --
  /**
   * W3C trace context. Set by the extension in each turn's meta.json `env` (the tool call that
   * started the turn), and by the wrapper for its pi (the turn's own span).
   */
  traceparent: "TRACEPARENT",
  /** Either one set: the tree is exported as OpenTelemetry traces; neither: nothing is traced or loaded. */
  otlpTracesEndpoint: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
  otlpEndpoint: "OTEL_EXPORTER_OTLP_ENDPOINT",
} as const;

export type EnvName = (typeof ENV)[keyof typeof ENV];

/** A new run token (`ENV.runToken`): 32 random hex digits. */
export function newRunToken(): string {
  return randomBytes(16).toString("hex");
}

/** `given` when it is a run token (32 hex digits: one a caller chose and passed on), else a new one. */
export function runTokenOr(given: string | undefined): string {
  return given !== undefined && /^[0-9a-f]{32}$/.test(given) ? given : newRunToken();
}

/** The environment entry that marks every process of one run (`ENV.runToken=<token>`). */
export function runTokenEntry(token: string): string {
  return `${ENV.runToken}=${token}`;
}
