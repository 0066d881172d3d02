/**
 * What a sandboxed child may know of this machine's secrets: its environment, pi's credentials
 * file and models file, all cut down to the run's own provider(s) (the provider of its model
 * and of each fallback model). Pure functions over text and maps; prefix.ts and index.ts apply
 * them. Everything left out stays outside the sandbox: an API token exported in the user's
 * shell, another provider's login, the user's cloud and tool credentials.
 */
import { effectiveModel, type MetaV1 } from "../../contracts/meta.js";
import { isRecord } from "../../lib/values.js";

/** Variables every sandboxed child keeps: what a shell and its tools need to run and read text. */
export const SANDBOX_BASE_ENV = ["PATH", "HOME", "USER", "LANG", "TERM", "TZ"] as const;

/**
 * Kept by prefix: `LC_*` (the locale), and `PI_*` — pi's own settings (`PI_CODING_AGENT_DIR`,
 * `PI_OFFLINE`, …) and this package's (`PI_SUBAGENTS_*`, `PI_SUBAGENT_*`), which the parent
 * and the wrapper set for the run.
 */
export const SANDBOX_ENV_PREFIXES = ["LC_", "PI_"] as const;

/**
 * The variables pi reads a provider's credentials from (pi-ai's env-api-keys, both pi lines),
 * with what the provider needs beside its key (a region, a project). A provider not listed
 * here (one of models.json) names its key's variable in models.json: see providerEnvNames.
 */
const PROVIDER_ENV: Record<string, readonly string[]> = {
  anthropic: [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_OAUTH_TOKEN",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_FEDERATION_RULE_ID",
    "ANTHROPIC_ORGANIZATION_ID",
    "ANTHROPIC_SERVICE_ACCOUNT_ID",
    "ANTHROPIC_IDENTITY_TOKEN_FILE",
    "ANTHROPIC_WORKSPACE_ID",
  ],
  openai: ["OPENAI_API_KEY"],
  azure: ["AZURE_OPENAI_API_KEY", "AZURE_OPENAI_BASE_URL", "AZURE_OPENAI_RESOURCE_NAME", "AZURE_OPENAI_API_VERSION"],
  "azure-openai-responses": ["AZURE_OPENAI_API_KEY", "AZURE_OPENAI_BASE_URL", "AZURE_OPENAI_RESOURCE_NAME"],
  "github-copilot": ["COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"],
  google: ["GEMINI_API_KEY"],
  "google-vertex": [
    "GOOGLE_CLOUD_API_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CLOUD_PROJECT",
    "GCLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
  ],
  "amazon-bedrock": [
    "AWS_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
  ],
  "ant-ling": ["ANT_LING_API_KEY"],
  "qwen-token-plan": ["QWEN_TOKEN_PLAN_TEAM_API_KEY", "QWEN_TOKEN_PLAN_API_KEY"],
  "qwen-token-plan-cn": ["QWEN_TOKEN_PLAN_TEAM_CN_API_KEY", "QWEN_TOKEN_PLAN_CN_API_KEY"],
  "qwen-token-plan-individual": ["QWEN_TOKEN_PLAN_INDIVIDUAL_API_KEY", "QWEN_TOKEN_PLAN_API_KEY"],
  "qwen-token-plan-individual-cn": ["QWEN_TOKEN_PLAN_INDIVIDUAL_CN_API_KEY", "QWEN_TOKEN_PLAN_CN_API_KEY"],
  nvidia: ["NVIDIA_API_KEY"],
  deepseek: ["DEEPSEEK_API_KEY"],
  groq: ["GROQ_API_KEY"],
  cerebras: ["CEREBRAS_API_KEY"],
  xai: ["XAI_API_KEY"],
  typesafe: ["TYPESAFE_API_KEY"],
  radius: ["RADIUS_API_KEY"],
  openrouter: ["OPENROUTER_API_KEY"],
  "vercel-ai-gateway": ["AI_GATEWAY_API_KEY"],
  zai: ["ZAI_API_KEY"],
  "zai-coding-cn": ["ZAI_CODING_CN_API_KEY"],
  mistral: ["MISTRAL_API_KEY"],
  minimax: ["MINIMAX_API_KEY"],
  "minimax-cn": ["MINIMAX_CN_API_KEY"],
  moonshotai: ["MOONSHOT_API_KEY"],
  "moonshotai-cn": ["MOONSHOT_API_KEY"],
  huggingface: ["HF_TOKEN"],
  fireworks: ["FIREWORKS_API_KEY"],
  together: ["TOGETHER_API_KEY"],
  baseten: ["BASETEN_API_KEY"],
  opencode: ["OPENCODE_API_KEY"],
  "opencode-go": ["OPENCODE_API_KEY"],
  "kimi-coding": ["KIMI_API_KEY"],
  meta: ["META_API_KEY"],
  "cloudflare-workers-ai": ["CLOUDFLARE_API_KEY", "CLOUDFLARE_ACCOUNT_ID"],
  "cloudflare-ai-gateway": ["CLOUDFLARE_API_KEY", "CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_GATEWAY_ID"],
  xiaomi: ["XIAOMI_API_KEY"],
  "xiaomi-token-plan-cn": ["XIAOMI_TOKEN_PLAN_CN_API_KEY"],
  "xiaomi-token-plan-ams": ["XIAOMI_TOKEN_PLAN_AMS_API_KEY"],
  "xiaomi-token-plan-sgp": ["XIAOMI_TOKEN_PLAN_SGP_API_KEY"],
};

/**
 * Files below the home folder that pi reads for a provider's login and that the default
 * `hide` (`~/.config`) would cover: shown again, read-only, when the run uses that provider.
 */
const PROVIDER_HOME_FILES: Record<string, readonly string[]> = {
  "google-vertex": ["~/.config/gcloud/application_default_credentials.json"],
  anthropic: ["~/.config/anthropic"],
};

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The provider of a `provider/id[:thinking]` model; undefined for a bare id. */
function providerOf(model: string): string | undefined {
  const slash = model.indexOf("/");
  return slash > 0 ? model.slice(0, slash) : undefined;
}

/**
 * The providers a run may call: those of its model and of each fallback model. A model named
 * without its provider (or none: pi's default) is pi's default provider's (`defaultProvider`
 * of pi's settings.json, given as `defaultProvider`).
 */
export function runProviders(
  meta: Pick<MetaV1, "resolvedModel" | "requestedModel" | "fallbackModels">,
  defaultProvider: string | undefined,
): string[] {
  const providers = new Set<string>();
  for (const model of [effectiveModel(meta), ...(meta.fallbackModels ?? [])]) {
    const provider = model === undefined ? defaultProvider : (providerOf(model) ?? defaultProvider);
    if (provider) providers.add(provider);
  }
  return [...providers];
}

/** pi's settings.json `defaultProvider`, from its text (undefined when absent or unreadable). */
export function defaultProviderOf(settingsText: string | undefined): string | undefined {
  const settings = parseObject(settingsText);
  return typeof settings?.defaultProvider === "string" ? settings.defaultProvider : undefined;
}

function parseObject(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The names among `values` that look like a variable (pi reads a config value that names a set variable from it). */
const namedVariables = (values: unknown[]): string[] =>
  values.filter((value): value is string => typeof value === "string" && ENV_NAME.test(value));

/**
 * The variables holding the credentials of `providers`: pi's own names for built-in
 * providers, and those a provider's entry in models.json (`apiKey`, `headers`) or auth.json
 * (`key`, `env`) names — pi takes a value that names a set variable from that variable.
 */
export function providerEnvNames(
  providers: readonly string[],
  files: { modelsText?: string; authText?: string } = {},
): string[] {
  const models = parseObject(files.modelsText);
  const modelProviders = isRecord(models?.providers) ? models.providers : {};
  const auth = parseObject(files.authText) ?? {};
  const names = new Set<string>();
  for (const provider of providers) {
    for (const name of PROVIDER_ENV[provider] ?? []) names.add(name);
    const entry = modelProviders[provider];
    if (isRecord(entry)) {
      const headers = isRecord(entry.headers) ? Object.values(entry.headers) : [];
      for (const name of namedVariables([entry.apiKey, ...headers])) names.add(name);
    }
    const credential = auth[provider];
    if (isRecord(credential)) {
      const env = isRecord(credential.env) ? Object.values(credential.env) : [];
      for (const name of namedVariables([credential.key, ...env])) names.add(name);
    }
  }
  return [...names];
}

/** The home files pi reads for `providers` that the sandbox shows again under a hidden `~/.config`. */
export function providerHomeFiles(providers: readonly string[]): string[] {
  return providers.flatMap((provider) => [...(PROVIDER_HOME_FILES[provider] ?? [])]);
}

/**
 * The environment a sandboxed child starts with: of `env`, only the base variables, `LC_*`
 * and `PI_*`, the run's provider credentials (`providerNames`) and the definition's `env`
 * names (`extraNames`). Anything else — a token exported in the user's shell, the session
 * bus's address, an agent's socket — stays outside.
 */
export function sandboxEnv(
  env: NodeJS.ProcessEnv,
  providerNames: readonly string[],
  extraNames: readonly string[] = [],
): Record<string, string> {
  const allowed = new Set<string>([...SANDBOX_BASE_ENV, ...providerNames, ...extraNames]);
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (allowed.has(name) || SANDBOX_ENV_PREFIXES.some((prefix) => name.startsWith(prefix))) kept[name] = value;
  }
  return kept;
}

/**
 * auth.json as the sandbox sees it: only the run's providers, and an OAuth login without its
 * refresh token. The file is read-only inside, so a refresh there could not be saved; and a
 * refresh spends the refresh token at the provider, so a refresh in the child would leave the
 * real auth.json holding a spent token (the user logged out). Without it the child cannot
 * refresh at all: it uses the access token it was given, and the login stays the root's to
 * refresh. Text that is not a JSON object comes back as `{}` (pi then finds no login).
 */
export function filterAuth(authText: string | undefined, providers: readonly string[]): string {
  const auth = parseObject(authText) ?? {};
  const kept: Record<string, unknown> = {};
  for (const provider of providers) {
    const credential = auth[provider];
    if (credential === undefined) continue;
    kept[provider] = isRecord(credential) && credential.type === "oauth" ? { ...credential, refresh: "" } : credential;
  }
  return `${JSON.stringify(kept, null, 2)}\n`;
}

/**
 * models.json as the sandbox sees it: its `providers` cut to the run's (another provider's
 * entry may hold that provider's key); the rest as it was. Text that is not a JSON object is
 * kept as it was (pi reports it as it would outside).
 */
export function filterModels(modelsText: string, providers: readonly string[]): string {
  const models = parseObject(modelsText);
  if (!models || !isRecord(models.providers)) return modelsText;
  const kept = Object.fromEntries(Object.entries(models.providers).filter(([name]) => providers.includes(name)));
  return `${JSON.stringify({ ...models, providers: kept }, null, 2)}\n`;
}
