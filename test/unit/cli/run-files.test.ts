/** Finding a run's files from what a person names: a run dir, a meta file, an agent folder. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { locateRun, RunNotFoundError, readRunSnapshot } from "../../../src/cli/run-files.js";

let root: string;
beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), "psa-run-files-"));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function put(relative: string, text: string): string {
  const file = path.join(root, relative);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}

const META = {
  runId: "r1",
  task: "t",
  cwd: ".",
  resultPath: "out/result.json",
  eventsPath: "out/events.jsonl",
  stderrPath: "out/err.log",
};

describe("locateRun", () => {
  it("a meta file: its paths, resolved against its folder", () => {
    const metaPath = put("job/meta.json", JSON.stringify(META));
    expect(locateRun(metaPath)).toMatchObject({
      dir: path.join(root, "job"),
      metaPath,
      resultPath: path.join(root, "job/out/result.json"),
      eventsPath: path.join(root, "job/out/events.jsonl"),
      stderrPath: path.join(root, "job/out/err.log"),
      meta: { runId: "r1" },
    });
    expect(locateRun(path.join(root, "job")).metaPath).toBe(metaPath);
  });

  it("a folder with artifacts but no meta.json, or one of its artifacts: the conventional names", () => {
    put("out/events.jsonl", "");
    put("out/stderr.log", "oops\n");
    const expected = {
      dir: path.join(root, "out"),
      resultPath: path.join(root, "out/result.json"),
      stderrPath: path.join(root, "out/stderr.log"),
      stdoutPath: undefined,
    };
    expect(locateRun(path.join(root, "out"))).toMatchObject(expected);
    expect(locateRun("events.jsonl", path.join(root, "out"))).toMatchObject(expected);
  });

  it("an agent folder: its latest run", () => {
    put("agents/scout/runs/0001-spawn/result.json", "{}");
    put("agents/scout/runs/0002-followup/events.jsonl", "");
    put("agents/scout/session.jsonl", "");
    expect(locateRun(path.join(root, "agents/scout"))).toMatchObject({
      dir: path.join(root, "agents/scout/runs/0002-followup"),
      pickedRun: path.join(root, "agents/scout/runs/0002-followup"),
    });
  });

  it("an invalid meta.json: its one-line problem, and result.json where it said", () => {
    const metaPath = put("bad/meta.json", JSON.stringify({ ...META, thinking: "maximum" }));
    const files = locateRun(metaPath);
    expect(files.metaError).toBe(
      'meta.json field "thinking" must be one of off, minimal, low, medium, high, xhigh, max, not "maximum"',
    );
    expect(files.resultPath).toBe(path.join(root, "bad/out/result.json"));
    expect(locateRun(put("worse/meta.json", "{not json")).metaError).toMatch(/meta\.json is not valid JSON: /);
  });

  it("nothing there, or a folder that is no run: RunNotFoundError with one line", () => {
    expect(() => locateRun(path.join(root, "missing"))).toThrow(
      new RunNotFoundError(`no run directory or meta file at ${path.join(root, "missing")}`),
    );
    mkdirSync(path.join(root, "empty"));
    expect(() => locateRun(path.join(root, "empty"))).toThrow(
      /is not a run directory \(no meta\.json, result\.json or events\.jsonl in it\)$/,
    );
  });
});

describe("readRunSnapshot", () => {
  it("reads result, records (a last line without newline counts once the run is over), logs and artifacts", () => {
    put(
      "run/meta.json",
      JSON.stringify({ ...META, resultPath: "result.json", eventsPath: "events.jsonl", stderrPath: "stderr.log" }),
    );
    put("run/events.jsonl", '{"type":"run_start","pid":null,"seq":1}\n{"type":"run_end","seq":2}');
    put("run/stderr.log", "warn\n");
    const live = readRunSnapshot(locateRun(path.join(root, "run")));
    expect(live.events).toHaveLength(1);
    expect(live.partialLine).toBe('{"type":"run_end","seq":2}');
    put("run/result.json", '{"status":"completed"}');
    const done = readRunSnapshot(locateRun(path.join(root, "run")));
    expect(done.events.map((line) => line.line)).toEqual([1, 2]);
    expect(done.partialLine).toBeUndefined();
    expect(done.result).toEqual({ status: "completed" });
    expect(done.stderrTail).toBe("warn\n");
    expect(done.artifacts).toEqual(["stderr.log"]);
    put("run/result.json", "{half");
    expect(readRunSnapshot(locateRun(path.join(root, "run"))).resultError).toMatch(/result\.json is not valid JSON/);
  });
});
