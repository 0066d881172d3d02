// The vitest suite test/reliability (the areas `npm test` runs too), with its timings and
// the figures its tests print (lines starting "[reliability] ").
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { ROOT, scratch } from "./support.mjs";

export function runVitest() {
  const jsonFile = path.join(scratch, "vitest.json");
  const started = Date.now();
  const proc = spawnSync(
    path.join(ROOT, "node_modules", ".bin", "vitest"),
    ["run", "test/reliability", "--reporter=default", "--reporter=json", `--outputFile.json=${jsonFile}`],
    { cwd: ROOT, encoding: "utf8", env: process.env, maxBuffer: 64 * 1024 * 1024 },
  );
  const report = fs.existsSync(jsonFile) ? JSON.parse(fs.readFileSync(jsonFile, "utf8")) : { testResults: [] };
  const tests = [];
  for (const file of report.testResults) {
    for (const test of file.assertionResults) {
      tests.push({
        file: path.basename(file.name),
        title: [...test.ancestorTitles, test.title].join(" › "),
        status: test.status,
        ms: Math.round(test.duration ?? 0),
      });
    }
  }
  const marker = "[reliability] ";
  const figures = `${proc.stdout ?? ""}\n${proc.stderr ?? ""}`
    .split("\n")
    .filter((line) => line.includes(marker))
    .map((line) => line.slice(line.indexOf(marker) + marker.length).trim());
  return { tests, figures, ms: Date.now() - started, ok: proc.status === 0 };
}
