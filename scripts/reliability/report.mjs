// Turns the trials' results into docs/reliability.md: the page's prose is
// reliability.template.md; this fills its {{placeholders}} with what the trials counted.
// A placeholder alone on its line takes a list of lines (none: the line goes).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const TEMPLATE = path.join(path.dirname(fileURLToPath(import.meta.url)), "reliability.template.md");

const sum = (rows, field) => rows.reduce((n, row) => n + row[field], 0);
const median = (values) => (values.length ? [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] : 0);
const max = (values) => (values.length ? Math.max(...values) : 0);
const statusList = (statuses) =>
  Object.entries(statuses)
    .map(([s, n]) => `${s} ${n}`)
    .join(", ") || "—";
const codeList = (codes) =>
  Object.entries(codes)
    .map(([code, n]) => `exit ${code} ×${n}`)
    .join(", ");

/** Figures every verdict needs: processes left over and the path cases' answers. */
export function tallies(r) {
  const pathRows = r.paths.filter((row) => !row.skipped);
  const pathTrials = sum(pathRows, "trials");
  const pathWrong = pathTrials - sum(pathRows, "ok");
  const totalLeft =
    r.kills.left +
    r.terms.left +
    r.orphans.left +
    sum(r.kinds, "survivors") +
    sum(r.paths, "left") +
    sum(r.load, "left") +
    r.fuzzed.left +
    (r.diskFull.left ?? 0);
  return { pathRows, pathTrials, pathWrong, pathHung: sum(r.paths, "hung"), totalLeft };
}

/** Whether every figure is what the documentation promises (the script's exit code). */
export function allKept(r) {
  const t = tallies(r);
  const { kills, terms, fuzzed, diskFull, restored, rootKills, startKills = [] } = r;
  const bad =
    t.pathHung +
    t.pathWrong +
    kills.reserves +
    (kills.runFolders ?? 0) +
    (terms.runFolders ?? 0) +
    sum(r.kinds, "files") +
    kills.partial +
    terms.partial +
    (terms.absentAfterChild ?? 0) +
    t.totalLeft +
    kills.hung +
    terms.hung +
    fuzzed.other +
    fuzzed.multiLine +
    fuzzed.stack +
    fuzzed.hung +
    (diskFull.unhandled ?? 0) +
    (diskFull.hung ?? 0) +
    (diskFull.slotsLeft ?? 0) +
    (diskFull.skipped ? 0 : diskFull.turns - diskFull.notices) +
    (restored.agents - restored.interrupted) +
    (rootKills ? rootKills.resultsLost + rootKills.duplicated + rootKills.lost + rootKills.left : 0) +
    startKills.reduce(
      (n, row) => n + row.ranTwice + row.resultsLost + row.duplicated + row.lost + row.hung + row.left,
      0,
    );
  return bad === 0 && r.suite.ok;
}

function suiteFigures({ suite }) {
  const passed = suite.tests.filter((t) => t.status === "passed").length;
  const figure = (prefix) => suite.figures.find((f) => f.startsWith(prefix))?.slice(prefix.length) ?? "(suite skipped)";
  return {
    suite: suite.skipped
      ? "skipped"
      : `${passed}/${suite.tests.length} tests passed in ${(suite.ms / 1000).toFixed(1)} s`,
    treeCorruption: figure("tree corruption: "),
    suiteRows: suite.tests.map((t) => `| ${t.file} | ${t.title.replace(/\|/g, "\\|")} | ${t.status} | ${t.ms} |`),
    suiteFigures: suite.skipped ? ["- (suite skipped)"] : suite.figures.map((f) => `- ${f}`),
  };
}

function wrapperFigures(r, t) {
  const { kills, terms, orphans, kinds, paths, trials, spanMs, goneWithinMs } = r;
  const skippedPaths = paths.length - t.pathRows.length;
  return {
    killSpanMs: Math.round(spanMs * 1.3),
    runMs: spanMs,
    sigkill: `${trials.kill} trials: ${kills.complete} complete result.json, ${kills.absent} absent, **${kills.partial} partial**, ${kills.temps} temp files left, ${kills.reserves} result reserves left, **${kills.runFolders ?? 0} run folders left in the temp folder**, ${kills.hung} hung`,
    sigterm: `${trials.term} trials: ${terms.complete} complete (${statusList(terms.statuses)}), ${terms.absent} absent (${terms.absentBeforeChild ?? 0} before any child was started, **${terms.absentAfterChild ?? 0} after**), **${terms.partial} partial**`,
    orphanTiming: `${trials.orphan} trials: median ${median(orphans.outlived)} ms, max ${max(orphans.outlived)} ms (pi, its grandchild and the orphan guard, which waits 1 s between SIGTERM and SIGKILL)`,
    orphanKindCount: kinds.length,
    orphanKinds: `${sum(kinds, "trials")} trials: **${sum(kinds, "survivors")} processes alive ${goneWithinMs} ms later**, **${sum(kinds, "files")} run folders left in the temp folder**, ${sum(kinds, "hung")} hung`,
    pathCaseCount: `${paths.length} cases${skippedPaths > 0 ? `, ${skippedPaths} skipped: no mount permission` : ""}`,
    pathCases: `${t.pathTrials} trials: ${t.pathTrials - t.pathWrong} as documented, **${t.pathWrong} not**, **${t.pathHung} hung**`,
    goneWithinMs,
    orphanKindRows: kinds.map(
      (k) =>
        `| ${k.name} | ${k.trials} | ${k.survivors} | ${k.files} | ${median(k.gone)} ms, ${max(k.gone)} ms | ${k.hung} |`,
    ),
    pathCaseRows: paths.map((p) =>
      p.skipped
        ? `| ${p.name} | — | skipped: mounting a tmpfs needs root | — | — | — |`
        : `| ${p.name} | ${p.trials} | ${p.ok} | ${codeList(p.codes)} | ${p.hung} | ${p.left} |`,
    ),
  };
}

function loadFigures({ load, fuzzed, trials, loadWrappers }) {
  return {
    loadWrappers,
    load: load.map((row, i) => `round ${i + 1}: ${row.correct}/${loadWrappers} correct in ${row.ms} ms`).join("; "),
    fuzz: `${trials.fuzz} cases: exit 0 ×${fuzzed[0]}, exit 1 ×${fuzzed[1]}, exit 2 ×${fuzzed[2]}, other ×${fuzzed.other}; ${fuzzed.multiLine} exit-2 answers with a line that is not one problem, ${fuzzed.stack} stack traces, ${fuzzed.hung} hangs`,
  };
}

function extensionFigures({ diskFull, restored, rootKills, startKills }) {
  return {
    startKills: startKills?.length
      ? startKills
          .map(
            (row) =>
              `at ${row.step} ×${row.trials}: ran twice ${row.ranTwice}, results lost ${row.resultsLost}, notices duplicated ${row.duplicated}, notices lost ${row.lost}, hung ${row.hung}, left ${row.left}`,
          )
          .join("; ")
      : "(not run)",
    rootKills: rootKills
      ? `${rootKills.rounds} rounds × 3 children, the root SIGKILLed ${rootKills.kills} times in all while they ran: results lost ${rootKills.resultsLost}, notices duplicated ${rootKills.duplicated}, notices lost ${rootKills.lost} (recorded read though the root's session does not hold them: ${rootKills.takenUnprinted}), processes left after their turns ${rootKills.left}`
      : "(not run)",
    diskFull: diskFull.skipped
      ? `skipped: ${diskFull.skipped}`
      : `${diskFull.trials} trials × 3 turns, the disk filled at moments spread over 0–2500 ms after the turns started: ${diskFull.notices}/${diskFull.turns} notices (errored ${diskFull.errored}, completed ${diskFull.completed}, other ${diskFull.other}), **${diskFull.unhandled} unhandled rejections**, ${diskFull.hung} hung, ${diskFull.slotsLeft} slots left taken, ${diskFull.lines} lines shown`,
    restoreAgents: restored.agents,
    restore: `${restored.ms} ms, ${restored.interrupted}/${restored.agents} interrupted (a 10 s wait per agent would be ${restored.agents * 10} s)`,
  };
}

/** Every placeholder's value: a string, a number, or (for a placeholder alone on its line) lines. */
export function figures(r) {
  const t = tallies(r);
  return {
    generatedAt: r.startedAt.toISOString(),
    node: process.version,
    cpus: os.cpus().length,
    platform: os.platform(),
    noProcNote: r.hasProc
      ? ""
      : "**This system has no /proc: processes left over were not counted (the figures below say 0 by construction).**\n\n",
    ...suiteFigures(r),
    ...wrapperFigures(r, t),
    ...loadFigures(r),
    ...extensionFigures(r),
    fsyncDurableMs: r.fsync.durable.toFixed(1),
    fsyncQuickMs: r.fsync.quick.toFixed(1),
    leftOver: t.totalLeft,
  };
}

/** The template with every placeholder filled; an unknown placeholder is an error, not a blank. */
export function fillTemplate(template, values) {
  const value = (key) => {
    if (!(key in values)) throw new Error(`reliability.template.md: no figure for {{${key}}}`);
    return values[key];
  };
  return template
    .replace(/^\{\{(\w+)\}\}\n/gm, (_, key) =>
      value(key)
        .map((line) => `${line}\n`)
        .join(""),
    )
    .replace(/\{\{(\w+)\}\}/g, (_, key) => String(value(key)));
}

/** docs/reliability.md's text for these results. */
export function renderReport(results) {
  return fillTemplate(fs.readFileSync(TEMPLATE, "utf8"), figures(results));
}
