/**
 * What a sandboxed child may hold of this machine's secrets (src/wrapper/remote/sandbox-env.ts):
 * the run's providers, the environment's allow-list, pi's auth.json and models.json cut down
 * to those providers, and the socket files the prefix covers. Pure functions, no sandbox.
 */
import { describe, expect, it } from "vitest";
import { unixSocketPaths } from "../../../src/wrapper/remote/prefix.js";
import {
  defaultProviderOf,
  filterAuth,
  filterModels,
  providerEnvNames,
  providerHomeFiles,
  runProviders,
  sandboxEnv,
} from "../../../src/wrapper/remote/sandbox-env.js";

describe("runProviders: the providers a run may call", () => {
  it("takes its model's and each fallback model's provider, once each", () => {
    const meta = { resolvedModel: "anthropic/claude", fallbackModels: ["openai/gpt", "anthropic/other"] };
    expect(runProviders(meta, "google")).toEqual(["anthropic", "openai"]);
  });

  it("a model without a provider, or none, is pi's default provider's", () => {
    expect(runProviders({ requestedModel: "claude" }, "anthropic")).toEqual(["anthropic"]);
    expect(runProviders({}, "anthropic")).toEqual(["anthropic"]);
    expect(runProviders({}, undefined)).toEqual([]);
  });

  it("reads defaultProvider from settings.json's text; anything else is none", () => {
    expect(defaultProviderOf('{"defaultProvider":"fake","defaultModel":"fast"}')).toBe("fake");
    expect(defaultProviderOf("{broken")).toBeUndefined();
    expect(defaultProviderOf(undefined)).toBeUndefined();
  });
});

describe("providerEnvNames: where the run's credentials are", () => {
  it("names pi's own variables of a built-in provider, and no other provider's", () => {
    const names = providerEnvNames(["anthropic"]);
    expect(names).toContain("ANTHROPIC_API_KEY");
    expect(names).toContain("ANTHROPIC_OAUTH_TOKEN");
    expect(names).not.toContain("OPENAI_API_KEY");
  });

  it("adds the variables models.json (apiKey, headers) and auth.json (key, env) name for the run's providers only", () => {
    const modelsText = JSON.stringify({
      providers: {
        mine: { apiKey: "MY_GATEWAY_KEY", headers: { "x-team": "MY_TEAM_TOKEN", "x-fixed": "literal value" } },
        theirs: { apiKey: "THEIR_KEY" },
      },
    });
    const authText = JSON.stringify({
      mine: { type: "api_key", key: "MY_AUTH_KEY_VAR", env: { region: "MY_REGION" } },
      theirs: { type: "api_key", key: "THEIR_AUTH_VAR" },
    });
    expect(providerEnvNames(["mine"], { modelsText, authText }).sort()).toEqual([
      "MY_AUTH_KEY_VAR",
      "MY_GATEWAY_KEY",
      "MY_REGION",
      "MY_TEAM_TOKEN",
    ]);
  });

  it("a literal key or a !command names no variable; unreadable files name nothing", () => {
    const modelsText = JSON.stringify({ providers: { mine: { apiKey: "sk-abc-123" } } });
    const authText = JSON.stringify({ mine: { type: "api_key", key: "!pass show key" } });
    expect(providerEnvNames(["mine"], { modelsText, authText })).toEqual([]);
    expect(providerEnvNames(["mine"], { modelsText: "{", authText: "[]" })).toEqual([]);
  });

  it("shows a provider's login file under a hidden ~/.config again only when the run uses that provider", () => {
    expect(providerHomeFiles(["google-vertex"])).toEqual(["~/.config/gcloud/application_default_credentials.json"]);
    expect(providerHomeFiles(["openai"])).toEqual([]);
  });
});

describe("sandboxEnv: a cleared environment with an allow-list", () => {
  const env = {
    PATH: "/usr/bin",
    HOME: "/home/u",
    USER: "u",
    LANG: "C.UTF-8",
    LC_ALL: "C.UTF-8",
    TERM: "xterm",
    TZ: "UTC",
    PI_CODING_AGENT_DIR: "/home/u/.pi/agent",
    PI_SUBAGENT_RUN_TOKEN: "t",
    PI_SUBAGENTS_TREE_DIR: "/tree",
    ANTHROPIC_API_KEY: "run-key",
    OPENAI_API_KEY: "other-key",
    GITHUB_TOKEN: "gh-secret",
    AWS_SECRET_ACCESS_KEY: "aws-secret",
    SSH_AUTH_SOCK: "/tmp/ssh-x/agent.1",
    DBUS_SESSION_BUS_ADDRESS: "unix:path=/run/user/0/bus",
    XDG_RUNTIME_DIR: "/run/user/0",
    HTTPS_PROXY: "http://proxy:3128",
  };

  it("keeps the base variables, LC_*, PI_*, the run's provider credentials and the named extras; drops the rest", () => {
    expect(sandboxEnv(env, ["ANTHROPIC_API_KEY"], ["HTTPS_PROXY"])).toEqual({
      PATH: "/usr/bin",
      HOME: "/home/u",
      USER: "u",
      LANG: "C.UTF-8",
      LC_ALL: "C.UTF-8",
      TERM: "xterm",
      TZ: "UTC",
      PI_CODING_AGENT_DIR: "/home/u/.pi/agent",
      PI_SUBAGENT_RUN_TOKEN: "t",
      PI_SUBAGENTS_TREE_DIR: "/tree",
      ANTHROPIC_API_KEY: "run-key",
      HTTPS_PROXY: "http://proxy:3128",
    });
  });

  it("a name that is not set adds nothing", () => {
    expect(sandboxEnv({ PATH: "/bin" }, ["ANTHROPIC_API_KEY"], ["NOPE"])).toEqual({ PATH: "/bin" });
  });
});

describe("filterAuth: pi's auth.json as the sandbox sees it", () => {
  const auth = {
    anthropic: { type: "oauth", access: "acc", refresh: "long-lived-refresh", expires: 1_900_000_000_000 },
    openai: { type: "api_key", key: "sk-openai" },
    fake: { type: "api_key", key: "FAKE_KEY_VAR" },
  };

  it("holds only the run's providers; an OAuth login keeps its access token but not its refresh token", () => {
    const seen = JSON.parse(filterAuth(JSON.stringify(auth), ["anthropic", "fake", "absent"]));
    expect(seen).toEqual({
      anthropic: { type: "oauth", access: "acc", refresh: "", expires: 1_900_000_000_000 },
      fake: { type: "api_key", key: "FAKE_KEY_VAR" },
    });
  });

  it("no file, a broken file or no provider gives an empty object", () => {
    expect(JSON.parse(filterAuth(undefined, ["anthropic"]))).toEqual({});
    expect(JSON.parse(filterAuth("{not json", ["anthropic"]))).toEqual({});
    expect(JSON.parse(filterAuth(JSON.stringify(auth), []))).toEqual({});
  });
});

describe("filterModels: pi's models.json as the sandbox sees it", () => {
  it("keeps the run's providers and every other setting", () => {
    const text = JSON.stringify({ providers: { fake: { apiKey: "x" }, other: { apiKey: "other-literal-key" } }, x: 1 });
    expect(JSON.parse(filterModels(text, ["fake"]))).toEqual({ providers: { fake: { apiKey: "x" } }, x: 1 });
  });

  it("text it cannot read is passed on as it was (pi reports it as it would outside)", () => {
    expect(filterModels("{broken", ["fake"])).toBe("{broken");
  });
});

describe("unixSocketPaths: the socket files /proc/net/unix lists", () => {
  it("keeps the bound paths once each, not abstract names or unnamed sockets", () => {
    const text = [
      "Num       RefCount Protocol Flags    Type St Inode Path",
      "0000000000000000: 00000002 00000000 00010000 0001 01 20001 /run/dbus/system_bus_socket",
      "0000000000000000: 00000002 00000000 00010000 0001 01 20002 @/tmp/.X11-unix/X0",
      "0000000000000000: 00000003 00000000 00000000 0001 03 20003",
      "0000000000000000: 00000002 00000000 00010000 0001 01 20004 /var/lib/app/with space.sock",
      "0000000000000000: 00000003 00000000 00000000 0001 03 20005 /run/dbus/system_bus_socket",
    ].join("\n");
    expect(unixSocketPaths(text)).toEqual(["/run/dbus/system_bus_socket", "/var/lib/app/with space.sock"]);
  });
});
