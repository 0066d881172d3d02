import { describe, expect, it } from "vitest";
import { parseRunners, runnerCapacity, unknownRunnerMessage } from "../../../src/contracts/runners.js";

describe("parseRunners", () => {
  it("keeps a valid definition of each kind", () => {
    const runners = {
      box: { kind: "sandbox" },
      box2: { kind: "sandbox", hide: ["~/secret"], env: ["HTTPS_PROXY", "NODE_EXTRA_CA_CERTS"], capacity: 2 },
      far: { kind: "ssh", host: "me@far", port: 2222, identity: "~/.ssh/k", ssh_options: ["-4"], capacity: 12 },
      hpc: { kind: "slurm", srun_options: ["-p", "debug"], remote_command: ["/opt/sw"], capacity: 8 },
      pod: { kind: "command", command: ["kubectl", "exec", "-i", "p", "--"], capacity: 4 },
    };
    expect(parseRunners(runners)).toEqual({ runners, problems: [] });
  });

  it.each([
    [{ x: { kind: "vm" } }, 'runners.x.kind must be one of sandbox, ssh, slurm, command, not "vm"'],
    [{ x: { kind: "ssh", capacity: 1 } }, "runners.x.host is missing (a host name (user@host))"],
    [{ x: { kind: "ssh", host: "-oProxyCommand=x", capacity: 1 } }, "runners.x.host must be a host name (user@host)"],
    [{ x: { kind: "slurm" } }, "runners.x.capacity is missing (a positive whole number)"],
    [{ x: { kind: "command", command: [], capacity: 1 } }, "runners.x.command must be a non-empty list of strings"],
    [{ x: { kind: "sandbox", hide: "~/.ssh" } }, "runners.x.hide must be a list of non-empty strings"],
    [{ x: { kind: "sandbox", capacity: 0 } }, "runners.x.capacity must be a positive whole number"],
    [{ x: { kind: "sandbox", env: "GH_TOKEN" } }, "runners.x.env must be a list of environment variable names"],
    [{ x: { kind: "sandbox", env: ["GH_TOKEN=abc"] } }, "runners.x.env must be a list of environment variable names"],
    [{ x: { kind: "sandbox", env: ["LC_*"] } }, "runners.x.env must be a list of environment variable names"],
    [{ x: { kind: "ssh", host: "h", env: ["A"], capacity: 1 } }, 'runners.x: unknown field "env" for kind ssh'],
    [{ x: { kind: "sandbox", host: "h" } }, 'runners.x: unknown field "host" for kind sandbox'],
    [{ local: { kind: "sandbox" } }, 'runners.local: "local" is built in and cannot be redefined'],
    [{ "a b": { kind: "sandbox" } }, 'runners: bad runner name "a b"'],
    [{ x: 3 }, "runners.x must be an object, not a number"],
  ])("refuses %j with one line naming it", (value, problem) => {
    const parsed = parseRunners(value);
    expect(parsed.problems).toEqual([problem]);
    expect(parsed.runners).toEqual({});
  });

  it("a sandbox's capacity defaults to 3", () => {
    expect(runnerCapacity({ kind: "sandbox" })).toBe(3);
    expect(runnerCapacity({ kind: "slurm", capacity: 9 })).toBe(9);
  });

  it("an unknown runner's message lists the known names, local first", () => {
    expect(unknownRunnerMessage("gpu", { box: { kind: "sandbox" } })).toBe("unknown runner: gpu (known: local, box)");
  });
});
