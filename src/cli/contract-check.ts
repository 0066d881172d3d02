/**
 * Checks meta.json, result.json and events.jsonl records against the published JSON Schemas
 * (schemas/*.json, generated from src/contracts). The validator (TypeBox's JSON Schema
 * compiler) is imported here and only here, and this module is only reached through the
 * `inspect` subcommand, so the `run` path never pays for it.
 */
import fs from "node:fs";
import { isRecord } from "../lib/values.js";

export type ContractName = "meta" | "result" | "event";

/** One way a value breaks its schema: where (a JSON pointer, "" = the whole value) and why. */
export interface ContractIssue {
  path: string;
  message: string;
}

export type ContractCheck = (value: unknown) => ContractIssue[];

export type ContractChecks = Record<ContractName, ContractCheck>;

const SCHEMA_FILES: Record<ContractName, string> = {
  meta: "meta.schema.json",
  result: "result.schema.json",
  event: "event.schema.json",
};

/** The published schema of a contract, read from the package's `schemas/` folder. */
export function readSchema(name: ContractName): Record<string, unknown> {
  const url = new URL(`../../schemas/${SCHEMA_FILES[name]}`, import.meta.url);
  return JSON.parse(fs.readFileSync(url, "utf8")) as Record<string, unknown>;
}

/** The subset of a validation error this module reads (TypeBox's shape, like Ajv's). */
interface RawError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message: string;
}

const pointerSegment = (name: string): string => name.replace(/~/g, "~0").replace(/\//g, "~1");

/** Turns validator errors into short, deduplicated issues a person can act on. */
export function describeErrors(errors: readonly RawError[]): ContractIssue[] {
  const issues: ContractIssue[] = [];
  const seen = new Set<string>();
  const add = (path: string, message: string) => {
    const key = `${path}\u0000${message}`;
    if (seen.has(key)) return;
    seen.add(key);
    issues.push({ path, message });
  };
  // A field the schema forbids (`additionalProperties: false`) fails as "schema is false" at
  // its own path; one that is allowed but has the wrong shape (an env value that is not a
  // string) fails there with its own error, which says more than "unexpected".
  const forbidden = new Set(errors.filter((error) => error.keyword === "boolean").map((error) => error.instancePath));
  for (const error of errors) {
    const params = error.params;
    switch (error.keyword) {
      case "boolean":
      case "anyOf":
        break;
      case "required":
        for (const name of (params.requiredProperties as string[] | undefined) ?? [])
          add(error.instancePath, `missing required field "${name}"`);
        break;
      case "additionalProperties":
        for (const name of (params.additionalProperties as string[] | undefined) ?? []) {
          if (forbidden.has(`${error.instancePath}/${pointerSegment(name)}`))
            add(error.instancePath, `unexpected field "${name}"`);
        }
        break;
      case "enum":
        add(
          error.instancePath,
          `must be one of ${((params.allowedValues as unknown[]) ?? []).map((v) => JSON.stringify(v)).join(", ")}`,
        );
        break;
      case "const":
        add(error.instancePath, `must be ${JSON.stringify(params.allowedValue)}`);
        break;
      case "minLength":
        add(error.instancePath, params.limit === 1 ? "must not be empty" : error.message);
        break;
      default:
        add(error.instancePath, error.message);
    }
  }
  return issues;
}

/** "/usage/cost/total: must be number" — or the message alone for the whole value. */
export function formatIssue(issue: ContractIssue): string {
  return issue.path === "" ? issue.message : `${issue.path}: ${issue.message}`;
}

interface Validator {
  Check(value: unknown): boolean;
  Errors(value: unknown): [boolean, RawError[]];
}

type Compile = (schema: Record<string, unknown>) => Validator;

const rawErrors = (validator: Validator, value: unknown): RawError[] =>
  validator.Check(value) ? [] : validator.Errors(value)[1];

const checkWith =
  (validator: Validator): ContractCheck =>
  (value) =>
    describeErrors(rawErrors(validator, value));

/**
 * events.jsonl records are a union keyed by `type`. Checking a record against the whole
 * union reports every branch's complaints; checking it against the branches of its own
 * `type` says what is actually wrong (`retry` has two: phase start and end).
 */
function eventCheck(schema: Record<string, unknown>, compile: Compile): ContractCheck {
  const branches = (schema.anyOf as Array<Record<string, unknown>> | undefined) ?? [];
  const byType = new Map<string, Validator[]>();
  for (const branch of branches) {
    const properties = branch.properties as Record<string, { const?: unknown }> | undefined;
    const type = properties?.type?.const;
    if (typeof type !== "string") continue;
    byType.set(type, [...(byType.get(type) ?? []), compile({ ...branch, definitions: schema.definitions })]);
  }
  const known = [...byType.keys()].join(", ");
  return (value) => {
    if (!isRecord(value)) return [{ path: "", message: "must be object" }];
    const group = typeof value.type === "string" ? byType.get(value.type) : undefined;
    if (!group) return [{ path: "/type", message: `${JSON.stringify(value.type)} is not a record type (${known})` }];
    // The closest branch explains best; one whose top-level constant (`phase`) differs from
    // the record's is the wrong branch, however few its complaints.
    let best: { errors: RawError[]; score: number } | undefined;
    for (const validator of group) {
      const errors = rawErrors(validator, value);
      if (errors.length === 0) return [];
      const wrongBranch = errors.some(
        (error) => error.keyword === "const" && error.instancePath.lastIndexOf("/") === 0,
      );
      const score = errors.length + (wrongBranch ? 1000 : 0);
      if (!best || score < best.score) best = { errors, score };
    }
    return describeErrors(best?.errors ?? []);
  };
}

/**
 * Why `inspect` shows a run without checking it: the validator is typebox, a peer dependency
 * (pi provides it to the extension and does not install peers), so the CLI may run without it.
 */
export const VALIDATOR_MISSING =
  'contract check skipped: its validator, typebox (a peer dependency of this package), is not installed; run "npm install typebox" beside the package, or pass --no-check';

/** TypeBox's JSON Schema compiler, or undefined when typebox is not installed. */
async function importCompile(): Promise<Compile | undefined> {
  try {
    return ((await import("typebox/schema")) as unknown as { Compile: Compile }).Compile;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ERR_MODULE_NOT_FOUND" || code === "ERR_PACKAGE_PATH_NOT_EXPORTED") return undefined;
    throw err;
  }
}

/** The three contract checks, or undefined when the validator is not installed (VALIDATOR_MISSING). */
export async function loadContractChecksIfInstalled(): Promise<ContractChecks | undefined> {
  const Compile = await importCompile();
  return Compile && compileChecks(Compile);
}

/** Compiles the three contract checks (about 50 ms, most of it importing the validator). */
export async function loadContractChecks(): Promise<ContractChecks> {
  const Compile = await importCompile();
  if (!Compile) throw new Error(VALIDATOR_MISSING);
  return compileChecks(Compile);
}

function compileChecks(Compile: Compile): ContractChecks {
  return {
    meta: checkWith(Compile(readSchema("meta"))),
    result: checkWith(Compile(readSchema("result"))),
    event: eventCheck(readSchema("event"), Compile),
  };
}
