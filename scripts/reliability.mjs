#!/usr/bin/env node
// Re-measures the reliability figures and writes docs/reliability.md. Each trial is a file
// in scripts/reliability/ (*.trial.mjs); the page's prose is scripts/reliability/reliability.template.md,
// filled by report.mjs with what the trials counted.
//  1. runs the vitest suite test/reliability (the areas `npm test` runs too);
//  2. runs the heavier loops that do not fit in `npm test`: SIGKILL and SIGTERM at random
//     moments (atomicity), SIGKILL orphan timing, SIGKILL with children that are not a
//     cooperating pi and artifact paths that used to hang, 50 concurrent wrappers in several
//     rounds, and a meta.json mutation fuzz; for the extension, the tree directory's disk
//     filling while children finish (a tmpfs, when this runs as root) and a restore of 64
//     agents whose wrapper.pid holds a live pid that is not their wrapper, the root killed
//     while its children run, and killed by its fault hook where a turn starts or a notice
//     is handed to pi;
//  3. counts processes left over from /proc (every process started here carries a tag in
//     its environment) and writes the figures.
// Options (env): RELIABILITY_KILL_TRIALS (default 240), RELIABILITY_TERM_TRIALS (100),
// RELIABILITY_ORPHAN_TRIALS (20), RELIABILITY_ORPHAN_KIND_TRIALS (10 per kind),
// RELIABILITY_PATH_TRIALS (3 per case), RELIABILITY_LOAD_ROUNDS (3), RELIABILITY_FUZZ_CASES (300),
// RELIABILITY_DISKFULL_TRIALS (10), RELIABILITY_ROOT_KILL_ROUNDS (5: 4 root kills each),
// RELIABILITY_START_KILL_TRIALS (5 per fault step), RELIABILITY_SKIP_VITEST=1, RELIABILITY_DEBUG=1 (one line per trial),
// RELIABILITY_OUT=<file> (write the page there instead of docs/reliability.md, e.g. for a short trial run).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const build = spawnSync(path.join(ROOT, "node_modules", ".bin", "tsc"), ["-p", "."], { cwd: ROOT, stdio: "inherit" });
if (build.status !== 0) {
  console.error("reliability: the build (tsc -p .) failed");
  process.exit(1);
}
// The trials import dist/ (the one /proc reader, atomic writes, the runtime): only now that it is built.
const { CONCURRENCY, LOAD_WRAPPERS, log, RESTORE_AGENTS, scratch, TRIALS } = await import("./reliability/support.mjs");
const { runVitest } = await import("./reliability/suite.trial.mjs");
const { calibrate, killTrials } = await import("./reliability/signals.trial.mjs");
const { orphanTrials } = await import("./reliability/orphan-timing.trial.mjs");
const { fsyncCost, GONE_WITHIN_MS, orphanKinds, pathCases } = await import("./reliability/wrapper-cases.trial.mjs");
const { loadRounds } = await import("./reliability/load.trial.mjs");
const { fuzz } = await import("./reliability/fuzz.trial.mjs");
const { diskFullTrials } = await import("./reliability/disk-full.trial.mjs");
const { restoreTiming } = await import("./reliability/restore.trial.mjs");
const { rootKillTrials } = await import("./reliability/root-kills.trial.mjs");
const { START_KILL_STEPS, startKillTrials } = await import("./reliability/start-kills.trial.mjs");
const { allKept, renderReport } = await import("./reliability/report.mjs");

const DOC = process.env.RELIABILITY_OUT
  ? path.resolve(process.env.RELIABILITY_OUT)
  : path.join(ROOT, "docs", "reliability.md");
const startedAt = new Date();
let suite = { tests: [], figures: [], ms: 0, ok: true, skipped: true };
if (process.env.RELIABILITY_SKIP_VITEST !== "1") {
  log("running the vitest suite test/reliability …");
  suite = { ...runVitest(), skipped: false };
}
log("calibrating …");
const spanMs = await calibrate();
log(
  `a busy run takes ${spanMs} ms at ${CONCURRENCY} at a time; kills are spread over 0–${Math.round(spanMs * 1.3)} ms`,
);
log(`SIGKILL at random moments × ${TRIALS.kill} …`);
const kills = await killTrials("SIGKILL", TRIALS.kill, spanMs);
log(`SIGTERM at random moments × ${TRIALS.term} …`);
const terms = await killTrials("SIGTERM", TRIALS.term, spanMs);
log(`SIGKILL orphan timing × ${TRIALS.orphan} …`);
const orphans = await orphanTrials(TRIALS.orphan);
log(`SIGKILL with children that are not a cooperating pi × ${TRIALS.orphanKind} per kind …`);
const kinds = await orphanKinds(TRIALS.orphanKind);
log(`artifact paths that used to hang × ${TRIALS.path} per case …`);
const paths = await pathCases(TRIALS.path);
const fsync = await fsyncCost(path.join(scratch, "fsync"));
log(`${LOAD_WRAPPERS} concurrent wrappers × ${TRIALS.loadRounds} rounds …`);
const load = await loadRounds(TRIALS.loadRounds);
log(`meta.json fuzz × ${TRIALS.fuzz} …`);
const fuzzed = await fuzz(TRIALS.fuzz);
log(`the tree directory's disk fills while children finish × ${TRIALS.diskFull} …`);
const diskFull = await diskFullTrials(TRIALS.diskFull);
log(`restore of ${RESTORE_AGENTS} agents whose wrapper.pid is a live non-wrapper …`);
const restored = await restoreTiming(RESTORE_AGENTS);
log(`the root killed while its children run × ${TRIALS.rootKills} rounds …`);
const rootKills = await rootKillTrials(TRIALS.rootKills);
log(`the root killed at ${START_KILL_STEPS.join(", ")} × ${TRIALS.startKills} each …`);
const startKills = await startKillTrials(TRIALS.startKills);
fs.rmSync(scratch, { recursive: true, force: true });

const results = {
  startedAt,
  hasProc: fs.existsSync("/proc"),
  trials: TRIALS,
  loadWrappers: LOAD_WRAPPERS,
  goneWithinMs: GONE_WITHIN_MS,
  suite,
  spanMs,
  kills,
  terms,
  orphans,
  kinds,
  paths,
  fsync,
  load,
  fuzzed,
  diskFull,
  restored,
  rootKills,
  startKills,
};
fs.writeFileSync(DOC, renderReport(results));
log(`wrote ${path.relative(ROOT, DOC)}`);
process.exit(allKept(results) ? 0 : 1);
