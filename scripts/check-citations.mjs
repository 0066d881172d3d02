#!/usr/bin/env node
/**
 * Part of `npm run lint`: fails on any text in the repository that cites a document outside it
 * (scripts/citations.mjs says which forms count). Every tracked or new, not ignored, text file
 * is read except package-lock.json (npm's, all version numbers), fixtures/reports (a model's
 * made-up answer the benches and tests measure, kept byte for byte) and the checker's own test
 * (it holds every form of citation on purpose). Prints each hit as
 * `path:line: text`, then what to do; exits 1 on a hit, 0 when the tree is clean, 2 when git
 * cannot list the files.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { findCitations } from "./citations.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SKIPPED = ["package-lock.json", "fixtures/reports/", "test/unit/check-citations.test.ts"];

/** Tracked files and new ones git does not ignore, as git lists them (paths from the root). */
function repositoryFiles() {
  let listed;
  try {
    listed = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
      cwd: root,
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
      stdio: ["ignore", "pipe", "pipe"],
    });
  } catch (error) {
    // Not a git checkout (an unpacked tarball) or no git: say so in one line, not a stack trace.
    const reason = String(error.stderr || error.message)
      .trim()
      .split("\n")[0];
    console.error(`check-citations: cannot list the files of ${root} with git: ${reason}`);
    process.exit(2);
  }
  const skipped = (file) => SKIPPED.some((skip) => file.startsWith(skip));
  return [...new Set(listed.split("\0").filter((file) => file !== "" && !skipped(file)))].sort();
}

let hits = 0;
for (const file of repositoryFiles()) {
  let bytes;
  try {
    bytes = fs.readFileSync(path.join(root, file));
  } catch {
    continue; // listed by git but deleted in the working tree: nothing to read
  }
  if (bytes.includes(0)) continue; // binary
  for (const hit of findCitations(bytes.toString("utf8"))) {
    console.log(`${file}:${hit.line}: ${hit.text}`);
    hits++;
  }
}
if (hits > 0) {
  console.log(
    `${hits} reference${hits === 1 ? "" : "s"} to documents outside the repository: a reader here cannot follow them. ` +
      "Say the rule and its reason where it is used instead (often just drop the parenthesis).",
  );
  process.exit(1);
}
