/**
 * The tools' parameter schemas as plain JSON Schema objects, typed as TypeBox's types so pi's
 * `ToolDefinition` still infers each tool's parameters. Not TypeBox itself: pi loads an
 * extension through jiti with its module cache off, so `import { Type } from "typebox"`
 * evaluates a second TypeBox in every pi that loads the extension — about 0.17 s of CPU per
 * child start, for objects this file builds in a few lines. Both pi lines validate and coerce
 * arguments against any JSON Schema. The objects match TypeBox's key for key, in its order
 * (`type`, `required`, `properties`; `type` then the options), so the request body is as before.
 */
import type {
  TArray,
  TBoolean,
  TInteger,
  TNumber,
  TObject,
  TOptional,
  TProperties,
  TSchema,
  TString,
  TUnion,
  TUnsafe,
} from "typebox";

interface Options {
  description?: string;
}

/** The schemas `optional` marked: left out of their object's `required`. */
const optionals = new WeakSet<object>();

export const string = (options: Options = {}) => ({ type: "string", ...options }) as unknown as TString;
export const number = (options: Options = {}) => ({ type: "number", ...options }) as unknown as TNumber;
export const integer = (options: Options = {}) => ({ type: "integer", ...options }) as unknown as TInteger;
export const boolean = (options: Options = {}) => ({ type: "boolean", ...options }) as unknown as TBoolean;

export const array = <T extends TSchema>(items: T, options: Options = {}) =>
  ({ type: "array", items, ...options }) as unknown as TArray<T>;

export const union = <T extends TSchema[]>(anyOf: [...T], options: Options = {}) =>
  ({ anyOf, ...options }) as unknown as TUnion<T>;

/** A schema given as is, for a value the tool checks itself. */
export const unsafe = <T>(schema: { type: string } & Options) => ({ ...schema }) as unknown as TUnsafe<T>;

export function optional<T extends TSchema>(schema: T): TOptional<T> {
  optionals.add(schema);
  return schema as unknown as TOptional<T>;
}

export function object<P extends TProperties>(properties: P, options: Options = {}): TObject<P> {
  const required = Object.keys(properties).filter((key) => !optionals.has(properties[key] as object));
  return { type: "object", ...(required.length > 0 && { required }), properties, ...options } as unknown as TObject<P>;
}
