import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LIMITS } from "../../../../../src/contracts/tree.js";
import { readReportPage, saveReport } from "../../../../../src/extension/turns/delivery/reports.js";

let agentDir: string;

beforeEach(async () => {
  agentDir = await mkdtemp(path.join(os.tmpdir(), "reports-test-"));
});

afterEach(async () => {
  await rm(agentDir, { recursive: true, force: true });
});

function save(turn: number, text: string) {
  return saveReport(agentDir, {
    runId: `run-${turn}`,
    turn,
    outcome: "completed",
    text,
    at: "2026-08-01T00:00:00.000Z",
  });
}

/** Reads every page from offset 0 and checks the paging invariants. */
async function readAll(turn = 0): Promise<string> {
  let text = "";
  let offset: number | null = 0;
  while (offset !== null) {
    const page = await readReportPage(agentDir, { turn, offset });
    expect(page.available).toBe(true);
    expect(page.offset).toBe(offset);
    expect(page.text.length).toBeLessThanOrEqual(LIMITS.reportPageChars);
    text += page.text;
    if (page.next_offset !== null) expect(page.next_offset).toBe(offset + page.text.length);
    offset = page.next_offset;
  }
  return text;
}

describe("saveReport", () => {
  it("writes a version-1 record under reports/ with a zero-padded name and no temp files", async () => {
    const saved = await save(3, "the answer");
    expect(saved).toEqual({ stored_chars: 10, original_chars: 10, complete: true });
    expect(await readdir(path.join(agentDir, "reports"))).toEqual(["000003.json"]);
    const record = JSON.parse(await readFile(path.join(agentDir, "reports", "000003.json"), "utf8"));
    expect(record).toEqual({
      version: 1,
      runId: "run-3",
      turn: 3,
      outcome: "completed",
      at: "2026-08-01T00:00:00.000Z",
      text: "the answer",
      original_chars: 10,
      complete: true,
    });
  });

  it("caps the text at 65 536 chars and marks it incomplete", async () => {
    const text = "a".repeat(LIMITS.reportChars + 1000);
    expect(await save(1, text)).toEqual({
      stored_chars: LIMITS.reportChars,
      original_chars: text.length,
      complete: false,
    });
    const page = await readReportPage(agentDir);
    expect(page).toMatchObject({ total_chars: LIMITS.reportChars, original_chars: text.length, complete: false });
    expect(await readAll()).toBe(text.slice(0, LIMITS.reportChars));
  });

  it("keeps only the newest 16 reports by turn", async () => {
    for (let turn = 1; turn <= 20; turn++) await save(turn, `report ${turn}`);
    const names = (await readdir(path.join(agentDir, "reports"))).sort();
    expect(names).toHaveLength(LIMITS.reportsKept);
    expect(names[0]).toBe("000005.json");
    expect(names.at(-1)).toBe("000020.json");
    expect((await readReportPage(agentDir, { turn: 15 })).text).toBe("report 5");
    expect((await readReportPage(agentDir, { turn: 16 })).available).toBe(false);
  });

  it("rejects a bad turn number", async () => {
    await expect(save(-1, "x")).rejects.toThrow("turn must be a non-negative integer");
    await expect(save(1.5, "x")).rejects.toThrow("turn must be a non-negative integer");
  });
});

describe("readReportPage", () => {
  it("says unavailable when the agent has no report", async () => {
    expect(await readReportPage(agentDir)).toEqual({
      available: false,
      text: "",
      offset: 0,
      next_offset: null,
      total_chars: 0,
      original_chars: 0,
      complete: false,
    });
  });

  it("picks reports newest first: turn 0 is the latest", async () => {
    await save(1, "first");
    await save(2, "second");
    await save(10, "tenth");
    expect(await readReportPage(agentDir)).toMatchObject({
      available: true,
      text: "tenth",
      turn_number: 10,
      next_offset: null,
    });
    expect(await readReportPage(agentDir, { turn: 1 })).toMatchObject({ text: "second", turn_number: 2 });
    expect(await readReportPage(agentDir, { turn: 2 })).toMatchObject({ text: "first", turn_number: 1 });
    expect((await readReportPage(agentDir, { turn: 3 })).available).toBe(false);
  });

  it("pages a long report in 6 000-char pages and ends with next_offset null", async () => {
    const text = Array.from({ length: 2000 }, (_, i) => `line ${i}\n`).join("");
    await save(1, text);
    const first = await readReportPage(agentDir);
    expect(first).toMatchObject({
      offset: 0,
      next_offset: LIMITS.reportPageChars,
      total_chars: text.length,
      complete: true,
    });
    expect(first.text).toBe(text.slice(0, LIMITS.reportPageChars));
    expect(await readAll()).toBe(text);
  });

  it("never splits a surrogate pair across pages", async () => {
    const text = `x${"🙂".repeat(LIMITS.reportPageChars)}`;
    await save(1, text);
    const first = await readReportPage(agentDir);
    expect(first.text.length).toBe(LIMITS.reportPageChars - 1);
    expect(await readAll()).toBe(text);
  });

  it("returns an empty last page past the end", async () => {
    await save(1, "short");
    expect(await readReportPage(agentDir, { offset: 5 })).toMatchObject({
      available: true,
      text: "",
      offset: 5,
      next_offset: null,
    });
    expect(await readReportPage(agentDir, { offset: 999 })).toMatchObject({
      available: true,
      text: "",
      offset: 999,
      next_offset: null,
    });
  });

  it("validates offset and turn", async () => {
    await expect(readReportPage(agentDir, { offset: -1 })).rejects.toThrow("offset must be a non-negative integer");
    await expect(readReportPage(agentDir, { offset: 0.5 })).rejects.toThrow("offset must be a non-negative integer");
    await expect(readReportPage(agentDir, { turn: -2 })).rejects.toThrow("turn must be a non-negative integer");
    await expect(readReportPage(agentDir, { turn: Number.NaN })).rejects.toThrow("turn must be a non-negative integer");
  });

  it("treats a damaged report file as unavailable", async () => {
    await save(1, "fine");
    await writeFile(path.join(agentDir, "reports", "000002.json"), "{not json");
    expect((await readReportPage(agentDir)).available).toBe(false);
    expect(await readReportPage(agentDir, { turn: 1 })).toMatchObject({ available: true, text: "fine" });
  });
});
