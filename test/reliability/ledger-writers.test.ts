/**
 * The spending ledger with several processes appending at once (as the wrappers of several
 * trees do): each line goes in one O_APPEND write, so no line is lost, torn or interleaved.
 * The writers are real node processes running the built ledger code; they start together
 * (each waits for a go file) so their writes overlap.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { parseLedger, readPeriodSpend } from "../../src/contracts/budget-ledger.js";
import { ledgerFile } from "../../src/contracts/layout.js";
import { REPO_ROOT } from "../support/pi-home.js";
import { killAll, spawnProcess } from "../support/processes.js";

const WRITERS = 6;
const LINES = 1500;
const LEDGER_MODULE = pathToFileURL(path.join(REPO_ROOT, "dist", "contracts", "budget-ledger.js")).href;

let root: string | undefined;
afterEach(async () => {
  await killAll();
  if (root) fs.rmSync(root, { recursive: true, force: true });
  root = undefined;
});

/** One writer: waits for the go file, then appends LINES spends of 0.001 USD, each naming its writer and number. */
const writerScript = (ledger: string, go: string, writer: number) => `
import fs from "node:fs";
import { appendLedger } from ${JSON.stringify(LEDGER_MODULE)};
while (!fs.existsSync(${JSON.stringify(go)})) await new Promise((r) => setImmediate(r));
for (let i = 0; i < ${LINES}; i++) {
  appendLedger(${JSON.stringify(ledger)}, { at: Date.now(), usd: 0.001, run: "w${writer}-" + i, agent: "/root/" + "x".repeat(i % 200) });
}
`;

describe("the spending ledger with several writing processes", () => {
  it(`${WRITERS} processes appending ${LINES} lines each at once: every line whole, none lost, the sum exact`, async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), "ledger-writers-"));
    const ledger = path.join(root, "ledger");
    const go = path.join(root, "go");
    const writers = Array.from({ length: WRITERS }, (_, w) =>
      spawnProcess(process.execPath, ["--input-type=module", "-e", writerScript(ledger, go, w)], { timeoutMs: 60_000 }),
    );
    fs.writeFileSync(go, "");
    const results = await Promise.all(writers.map((w) => w.done));
    for (const result of results) expect(result).toMatchObject({ code: 0, stderr: "" });

    const now = Date.now();
    const text = fs.readFileSync(ledgerFile(ledger, now), "utf8");
    const lines = text.split("\n").filter(Boolean);
    expect(lines).toHaveLength(WRITERS * LINES);
    // Every line parses on its own: nothing interleaved or torn.
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    const runs = new Set(parseLedger(text).map((e) => e.run));
    expect(runs.size).toBe(WRITERS * LINES);
    expect(readPeriodSpend(ledger, now).monthly).toBeCloseTo(WRITERS * LINES * 0.001, 9);
  }, 90_000);
});
