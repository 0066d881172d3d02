/**
 * Models, thinking levels and the session's model scope, as pi itself decides them.
 *
 * pi-ai's helpers are reimplemented rather than imported: the extension is loaded by pi's
 * jiti, which aliases only pi's own packages, so a runtime import of pi-ai could fail to
 * resolve from this package. The rules are copied from pi-ai 0.73 `models.js` (with pi 1.x's
 * `max` level) and pi's `core/model-resolver.js`; the tests pin them against both pi lines. Globs go through minimatch, the matcher pi
 * itself uses, a dependency of this package at the version pi installs.
 */
import { minimatch } from "minimatch";
import { THINKING_LEVELS, type ThinkingLevel } from "../../contracts/meta.js";

/** The fields of pi-ai's `Model` this extension needs (a `Model` is assignable to it). */
export interface ModelInfo {
  provider: string;
  id: string;
  /** Display name; pi's scope patterns also match against it. */
  name?: string;
  reasoning: boolean;
  /** Per level: omitted = supported, a string = supported (value sent), `null` = unsupported. */
  thinkingLevelMap?: Record<string, string | null | undefined>;
  contextWindow?: number;
}

export function modelRef(m: Pick<ModelInfo, "provider" | "id">): string {
  return `${m.provider}/${m.id}`;
}

/** `provider/id`, split at the first `/` because ids may contain slashes (`openrouter/openai/gpt-5`). */
export function parseModelRef(s: string): { provider: string; id: string } | undefined {
  const slash = s.indexOf("/");
  if (slash <= 0 || slash === s.length - 1) return undefined;
  return { provider: s.slice(0, slash), id: s.slice(slash + 1) };
}

export function isThinkingLevel(s: unknown): s is ThinkingLevel {
  return typeof s === "string" && (THINKING_LEVELS as readonly string[]).includes(s);
}

/**
 * pi-ai `getSupportedThinkingLevels`: `xhigh` (and pi 1.x's `max`) only when mapped explicitly,
 * `null` = unsupported. A model maps `max` only on pi 1.x, so on 0.73.1 this is 0.73.1's list.
 */
export function supportedLevels(m: ModelInfo): ThinkingLevel[] {
  if (!m.reasoning) return ["off"];
  return THINKING_LEVELS.filter((level) => {
    const mapped = m.thinkingLevelMap?.[level];
    if (mapped === null) return false;
    if (level === "xhigh" || level === "max") return mapped !== undefined;
    return true;
  });
}

/** pi-ai `clampThinkingLevel`: the nearest supported level, searching upward first; a level pi does not know gives the lowest. */
export function clampLevel(m: ModelInfo, level: ThinkingLevel): ThinkingLevel {
  const available = supportedLevels(m);
  if (available.includes(level)) return level;
  const requested = THINKING_LEVELS.indexOf(level);
  if (requested === -1) return available[0] ?? "off";
  for (let i = requested; i < THINKING_LEVELS.length; i++) {
    const candidate = THINKING_LEVELS[i]!;
    if (available.includes(candidate)) return candidate;
  }
  for (let i = requested - 1; i >= 0; i--) {
    const candidate = THINKING_LEVELS[i]!;
    if (available.includes(candidate)) return candidate;
  }
  return available[0] ?? "off";
}

// pi's own parser: these options consume the next argument, so a value that happens to read
// `--models` (e.g. `--session --models`) is not the flag.
const VALUE_OPTIONS = new Set([
  "--mode",
  "--provider",
  "--model",
  "--api-key",
  "--system-prompt",
  "--append-system-prompt",
  "--session",
  "--fork",
  "--session-dir",
  "--tools",
  "-t",
  "--thinking",
  "--export",
  "--extension",
  "-e",
  "--skill",
  "--prompt-template",
  "--theme",
]);

/**
 * The session's scope patterns, as pi chooses them: `--models a,b` on pi's command line (the
 * last one wins, entries trimmed), else settings `enabledModels`; undefined when neither
 * gives any pattern (pi treats an empty list as "no scope").
 *
 * Difference from pi: `--models=a,b` is accepted too. pi itself parses that form as an
 * unknown (extension) flag and would normally refuse to start, so honouring it changes nothing
 * for a pi that runs.
 */
export function scopePatterns(argv: readonly string[], settings: { enabledModels?: unknown }): string[] | undefined {
  let fromArgs: string[] | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--models" && i + 1 < argv.length) {
      fromArgs = argv[++i]!.split(",").map((s) => s.trim());
    } else if (arg.startsWith("--models=")) {
      fromArgs = arg
        .slice("--models=".length)
        .split(",")
        .map((s) => s.trim());
    } else if (VALUE_OPTIONS.has(arg)) {
      i++;
    }
  }
  const patterns = fromArgs ?? stringArray(settings.enabledModels);
  return patterns && patterns.length > 0 ? patterns : undefined;
}

function stringArray(value: unknown): string[] | undefined {
  if (!Array.isArray(value)) return undefined;
  return value.filter((item): item is string => typeof item === "string");
}

const sameModel = (a: ModelInfo, b: ModelInfo): boolean => a.provider === b.provider && a.id === b.id;

/**
 * pi's `resolveModelScope` over the authenticated models, in pattern order, without
 * duplicates. Glob patterns (`*`, `?`, `[`) select every match of `provider/id` or of the bare
 * id; other patterns select ONE model: an exact `provider/id` or unambiguous id, else the best
 * substring match of id or name (an undated alias first, then the latest dated id). A
 * `:level` suffix is stripped for matching, as pi does.
 */
export function resolveScope(available: readonly ModelInfo[], patterns: readonly string[]): ModelInfo[] {
  const scoped: ModelInfo[] = [];
  const add = (m: ModelInfo): void => {
    if (!scoped.some((s) => sameModel(s, m))) scoped.push(m);
  };
  for (const pattern of patterns) {
    if (/[*?[]/.test(pattern)) {
      const glob = stripLevelSuffix(pattern);
      for (const m of available) if (globMatches(m, glob)) add(m);
    } else {
      const m = matchOne(pattern, available);
      if (m) add(m);
    }
  }
  return scoped;
}

export interface ListedModel {
  model: string;
  reasoning_levels: ThinkingLevel[];
  context_window: number | null;
}

/**
 * The `list_models` result. A scope that matches no model is no scope, as in pi (its model
 * cycling then falls back to every model).
 */
export function listModels(
  available: readonly ModelInfo[],
  patterns: readonly string[] | undefined,
): { models: ListedModel[]; scoped?: true } {
  const scoped = patterns && patterns.length > 0 ? resolveScope(available, patterns) : [];
  const chosen = scoped.length > 0 ? scoped : available;
  const models = chosen.map((m) => ({
    model: modelRef(m),
    reasoning_levels: supportedLevels(m),
    context_window: m.contextWindow ?? null,
  }));
  return scoped.length > 0 ? { models, scoped: true } : { models };
}

function stripLevelSuffix(pattern: string): string {
  const colon = pattern.lastIndexOf(":");
  return colon !== -1 && isThinkingLevel(pattern.slice(colon + 1)) ? pattern.slice(0, colon) : pattern;
}

/**
 * pi's glob test for a scope pattern: minimatch with `nocase`, against `provider/id` or the
 * bare id (so `*sonnet*` matches without naming the provider).
 */
export function globMatches(m: Pick<ModelInfo, "provider" | "id">, glob: string): boolean {
  return minimatch(modelRef(m), glob, { nocase: true }) || minimatch(m.id, glob, { nocase: true });
}

/** pi's `parseModelPattern` (scope mode): the whole pattern, then with `:suffix`es peeled off. */
function matchOne(pattern: string, available: readonly ModelInfo[]): ModelInfo | undefined {
  const found = tryMatchModel(pattern, available);
  if (found) return found;
  const colon = pattern.lastIndexOf(":");
  return colon === -1 ? undefined : matchOne(pattern.slice(0, colon), available);
}

function tryMatchModel(pattern: string, available: readonly ModelInfo[]): ModelInfo | undefined {
  const exact = exactReference(pattern, available);
  if (exact) return exact;
  const needle = pattern.toLowerCase();
  const matches = available.filter(
    (m) => m.id.toLowerCase().includes(needle) || (m.name?.toLowerCase().includes(needle) ?? false),
  );
  if (matches.length === 0) return undefined;
  const aliases = matches.filter((m) => isAlias(m.id));
  const pool = aliases.length > 0 ? aliases : matches;
  return [...pool].sort((a, b) => b.id.localeCompare(a.id))[0];
}

/** pi's `findExactModelReferenceMatch`: ambiguity at any step means no exact match. */
function exactReference(reference: string, available: readonly ModelInfo[]): ModelInfo | undefined {
  const trimmed = reference.trim();
  if (!trimmed) return undefined;
  const lower = trimmed.toLowerCase();
  const canonical = available.filter((m) => modelRef(m).toLowerCase() === lower);
  if (canonical.length > 0) return canonical.length === 1 ? canonical[0] : undefined;
  const slash = trimmed.indexOf("/");
  if (slash !== -1) {
    const provider = trimmed.slice(0, slash).trim().toLowerCase();
    const id = trimmed
      .slice(slash + 1)
      .trim()
      .toLowerCase();
    if (provider && id) {
      const byParts = available.filter((m) => m.provider.toLowerCase() === provider && m.id.toLowerCase() === id);
      if (byParts.length > 0) return byParts.length === 1 ? byParts[0] : undefined;
    }
  }
  const byId = available.filter((m) => m.id.toLowerCase() === lower);
  return byId.length === 1 ? byId[0] : undefined;
}

/** pi prefers an alias (`-latest` or no `-YYYYMMDD` suffix) over dated snapshots. */
function isAlias(id: string): boolean {
  return id.endsWith("-latest") || !/-\d{8}$/.test(id);
}

/**
 * The model a Claude Code alias (`sonnet`, `opus`, `haiku`, or a bare id such as
 * `claude-opus-4-1`) stands for among the usable models: those whose id contains it
 * (ignoring case), on the parent's provider when any is, newest first. Newest is the higher
 * version in the id (`claude-sonnet-4-5` over `claude-sonnet-4` over `claude-3-7-sonnet`),
 * then an undated alias over a dated snapshot (pi's own preference), then the later date.
 * undefined when no usable model's id contains the alias.
 */
export function bestAliasMatch(
  alias: string,
  available: readonly ModelInfo[],
  preferredProvider: string,
): ModelInfo | undefined {
  const needle = alias.trim().toLowerCase();
  if (needle === "") return undefined;
  const matches = available.filter((m) => m.id.toLowerCase().includes(needle));
  const onProvider = matches.filter((m) => m.provider === preferredProvider);
  const pool = onProvider.length > 0 ? onProvider : matches;
  return [...pool].sort(newestFirst)[0];
}

/** The release an id names: its leading short numbers (`4-5`, `4.5`), and its `YYYYMMDD` date if any. */
function releaseOf(id: string): { version: number[]; date: string } {
  const version: number[] = [];
  let date = "";
  for (const token of id.match(/\d+/g) ?? []) {
    if (token.length === 8) {
      date = token;
      break;
    }
    if (token.length > 2) break;
    version.push(Number(token));
  }
  return { version, date };
}

function newestFirst(a: ModelInfo, b: ModelInfo): number {
  const ra = releaseOf(a.id);
  const rb = releaseOf(b.id);
  for (let i = 0; i < Math.max(ra.version.length, rb.version.length); i++) {
    const diff = (rb.version[i] ?? -1) - (ra.version[i] ?? -1);
    if (diff !== 0) return diff;
  }
  if ((ra.date === "") !== (rb.date === "")) return ra.date === "" ? -1 : 1;
  return rb.date.localeCompare(ra.date) || b.id.localeCompare(a.id);
}
