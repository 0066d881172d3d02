/** piAgentDir repeats pi's rule for its agent directory (the CLI cannot import pi): checked against pi's own getAgentDir. */
import { getAgentDir } from "@mariozechner/pi-coding-agent";
import { afterEach, describe, expect, it } from "vitest";
import { piAgentDir } from "../../../src/lib/pi-agent-dir.js";

const HOME = "/home/someone";

describe("piAgentDir", () => {
  it.each([
    ["unset", undefined, "/home/someone/.pi/agent"],
    ["empty", "", "/home/someone/.pi/agent"],
    ["~", "~", "/home/someone"],
    ["~/x", "~/x", "/home/someone/x"],
    ["~/x/y/", "~/x/y/", "/home/someone/x/y/"],
    ["an absolute path", "/srv/pi-agent", "/srv/pi-agent"],
    ["~user/x (not expanded)", "~user/x", "~user/x"],
    ["a ~ inside the path (not expanded)", "/tmp/~/x", "/tmp/~/x"],
  ])("PI_CODING_AGENT_DIR %s → the directory pi uses", (_name, value, expected) => {
    expect(piAgentDir(value === undefined ? {} : { PI_CODING_AGENT_DIR: value }, HOME)).toBe(expected);
  });
});

describe("piAgentDir agrees with pi's getAgentDir", () => {
  const saved = { HOME: process.env.HOME, PI_CODING_AGENT_DIR: process.env.PI_CODING_AGENT_DIR };
  afterEach(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it.each([undefined, "", "~", "~/x", "~/.config/pi", "/srv/agent", "~user/x", "relative/dir"])(
    "for PI_CODING_AGENT_DIR=%j",
    (value) => {
      process.env.HOME = HOME;
      if (value === undefined) delete process.env.PI_CODING_AGENT_DIR;
      else process.env.PI_CODING_AGENT_DIR = value;
      expect(piAgentDir(process.env)).toBe(getAgentDir());
    },
  );
});
