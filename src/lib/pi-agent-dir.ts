import os from "node:os";
import path from "node:path";

/** The variable that moves pi's agent directory (settings, models, auth, agents). */
export const PI_AGENT_DIR_ENV = "PI_CODING_AGENT_DIR";

/**
 * pi's agent directory, by pi's own rule (getAgentDir in pi's config): PI_CODING_AGENT_DIR
 * when it is set and not empty, a leading `~` (alone or before `/`) standing for the home
 * directory; else `~/.pi/agent`. The CLI cannot import pi for it: pi is only this package's
 * devDependency, and a user runs the globally installed one.
 */
export function piAgentDir(env: NodeJS.ProcessEnv, home = os.homedir()): string {
  const configured = env[PI_AGENT_DIR_ENV];
  if (!configured) return path.join(home, ".pi", "agent");
  if (configured === "~") return home;
  if (configured.startsWith("~/")) return home + configured.slice(1);
  return configured;
}
