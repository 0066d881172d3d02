// Turns benchmark rows into a console table and into docs/performance.md.
import os from "node:os";

const HEADER = ["what", "input", "measured (median)", "baseline (same run)", "ratio", "target", "met"];

function lines(rows) {
  const out = [];
  for (const row of rows) {
    row.points.forEach((point, i) => {
      out.push(
        [
          i === 0 ? row.what : "″",
          point.input,
          point.value,
          point.baseline,
          point.ratio,
          i === 0 ? row.target : "″",
          point.pass === undefined ? "—" : point.pass ? "yes" : "NO",
          // A cell a bench left out (a peer that could not run, a figure not taken) reads "—".
        ].map((cell) => (cell === undefined || cell === null ? "—" : String(cell))),
      );
    });
  }
  return out;
}

/** A plain-text table for the terminal. */
export function printRows(rows) {
  const body = lines(rows).map((cells) => cells.map((cell) => (cell.length > 60 ? `${cell.slice(0, 57)}...` : cell)));
  const widths = HEADER.map((h, i) => Math.max(h.length, ...body.map((cells) => cells[i].length)));
  const format = (cells) => cells.map((cell, i) => cell.padEnd(widths[i])).join("  ");
  console.log(format(HEADER));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const cells of body) console.log(format(cells));
}

/** The machine the figures come from, for the doc. */
export function machine(loadAtStart) {
  const cpus = os.cpus();
  return `${cpus.length} × ${cpus[0]?.model.trim() ?? "unknown CPU"}, ${(os.totalmem() / 1024 ** 3).toFixed(0)} GiB RAM, ${os.type()} ${os.release()}, Node ${process.version}, 1-minute load average ${loadAtStart.toFixed(1)} at the start and ${os.loadavg()[0].toFixed(1)} at the end`;
}

/** The markdown table plus one note per row saying exactly what was measured. */
export function markdown(rows) {
  const escapeCell = (cell) => cell.replaceAll("|", "\\|");
  const table = [
    `| ${HEADER.join(" | ")} |`,
    `|${HEADER.map(() => "---").join("|")}|`,
    ...lines(rows).map((cells) => `| ${cells.map(escapeCell).join(" | ")} |`),
  ].join("\n");
  const notes = rows.map((row) => `- **${row.what}.** ${row.note}`).join("\n");
  return { table, notes };
}
