#!/usr/bin/env node
/**
 * schemas/*.json are generated from the TypeScript contracts in src/contracts, the one
 * source of truth: edit a type there, then run `npm run schemas`. `--check` writes nothing
 * and exits 1 when a committed schema differs from what the types say (a test runs it).
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createGenerator } from "ts-json-schema-generator";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Each published schema: its file, the type it is generated from and what it describes. */
export const SCHEMAS = [
  {
    file: "meta.schema.json",
    type: "MetaFileV1",
    source: "src/contracts/meta.ts",
    title: "pi-subagent-tree meta.json, version 1",
  },
  {
    file: "result.schema.json",
    type: "ResultV1",
    source: "src/contracts/result.ts",
    title: "pi-subagent-tree result.json, version 1",
  },
  {
    file: "event.schema.json",
    type: "EventRecord",
    source: "src/contracts/events.ts",
    title: "pi-subagent-tree events.jsonl record (one line), version 1",
  },
];

/** The schema files' text, by file name. */
export function generateSchemas() {
  const generator = createGenerator({
    path: path.join(ROOT, "src/contracts/index.ts"),
    tsconfig: path.join(ROOT, "tsconfig.json"),
    // The types are checked by tsc; this run only reads them.
    skipTypeCheck: true,
    // Interfaces are closed (additionalProperties: false) unless they say otherwise with an
    // index signature, as MetaFileV1 does (meta.json ignores unknown fields).
    additionalProperties: false,
    topRef: false,
  });
  const out = {};
  for (const { file, type, source, title } of SCHEMAS) {
    const { $schema, ...body } = generator.createSchema(type);
    const schema = {
      $schema,
      $id: `pi-subagent-tree/schemas/${file}`,
      title,
      $comment: `Generated from ${type} in ${source} by scripts/gen-schemas.mjs; do not edit by hand.`,
      ...body,
    };
    out[file] = `${JSON.stringify(schema, null, 2)}\n`;
  }
  return out;
}

function main(argv) {
  const check = argv.includes("--check");
  const dir = path.join(ROOT, "schemas");
  const drifted = [];
  for (const [file, text] of Object.entries(generateSchemas())) {
    const target = path.join(dir, file);
    const current = fs.existsSync(target) ? fs.readFileSync(target, "utf8") : undefined;
    if (current === text) continue;
    if (check) drifted.push(file);
    else {
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(target, text);
      console.log(`wrote schemas/${file}`);
    }
  }
  if (drifted.length > 0) {
    console.error(
      `schemas out of date with src/contracts: ${drifted.join(", ")}; run "npm run schemas" and commit the result`,
    );
    return 1;
  }
  return 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  process.exit(main(process.argv.slice(2)));
