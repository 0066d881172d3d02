import { describe, expect, it } from "vitest";
import {
  isRemoteRunner,
  type RemoteRunner,
  runnerArgv,
  SSH_CONTROL_PERSIST_SECONDS,
  scancelArgv,
  shellQuote,
  sshControlArgv,
  sshControlDir,
  sshControlPath,
} from "../../../src/contracts/runner-prefix.js";
import type { SshRunner } from "../../../src/contracts/runners.js";

const connection = { controlPath: "/tmp/pst-ssh-0/%C" };
const sharing = ["-o", "ControlMaster=auto", "-o", "ControlPath=/tmp/pst-ssh-0/%C", "-o", "ControlPersist=60"];

describe("runnerArgv: `<prefix> <remote_command…> serve` per kind", () => {
  const cases: Array<[string, RemoteRunner, string[]]> = [
    [
      "ssh, defaults",
      { kind: "ssh", host: "me@far", capacity: 4 },
      ["ssh", "-o", "BatchMode=yes", ...sharing, "me@far", "--", "subagent-wrapper", "serve"],
    ],
    [
      "ssh, port, identity, options and a remote command",
      {
        kind: "ssh",
        host: "far",
        port: 2222,
        identity: "/keys/id",
        ssh_options: ["-o", "ConnectTimeout=5"],
        remote_command: ["node", "/opt/pst/bin/subagent-wrapper"],
        capacity: 1,
      },
      [
        "ssh",
        "-o",
        "BatchMode=yes",
        "-o",
        "ConnectTimeout=5",
        ...sharing,
        "-p",
        "2222",
        "-i",
        "/keys/id",
        "far",
        "--",
        "node",
        "/opt/pst/bin/subagent-wrapper",
        "serve",
      ],
    ],
    [
      "ssh, remote words quoted for the far shell",
      { kind: "ssh", host: "far", remote_command: ["/opt/my tools/sw", "$HOME", "it's"], capacity: 1 },
      ["ssh", "-o", "BatchMode=yes", ...sharing, "far", "--", "'/opt/my tools/sw'", "'$HOME'", "'it'\\''s'", "serve"],
    ],
    ["slurm, defaults", { kind: "slurm", capacity: 8 }, ["srun", "--ntasks=1", "--quiet", "subagent-wrapper", "serve"]],
    [
      "slurm, options and a remote command (words go to srun as they are: no shell)",
      { kind: "slurm", srun_options: ["-p", "gpu", "--time=30"], remote_command: ["/opt/a b/sw"], capacity: 8 },
      ["srun", "-p", "gpu", "--time=30", "--ntasks=1", "--quiet", "/opt/a b/sw", "serve"],
    ],
    [
      "command",
      { kind: "command", command: ["kubectl", "exec", "-i", "pool-0", "--"], capacity: 2 },
      ["kubectl", "exec", "-i", "pool-0", "--", "subagent-wrapper", "serve"],
    ],
    [
      "command with a remote command",
      {
        kind: "command",
        command: ["podman", "run", "-i", "--rm", "img"],
        remote_command: ["node", "/sw"],
        capacity: 2,
      },
      ["podman", "run", "-i", "--rm", "img", "node", "/sw", "serve"],
    ],
  ];
  it.each(cases)("%s", (_name, definition, expected) => {
    expect(runnerArgv(definition, { connection })).toEqual(expected);
  });

  it("a definition's far pi and agent dir go before the remote command as env assignments, quoted for ssh", () => {
    const far: RemoteRunner = { kind: "ssh", host: "far", pi: "/opt/my pi/pi", agent_dir: "~/agent", capacity: 1 };
    expect(runnerArgv(far).slice(-5)).toEqual([
      "env",
      "'PI_SUBAGENTS_PI_BIN=/opt/my pi/pi'",
      "'PI_CODING_AGENT_DIR=~/agent'",
      "subagent-wrapper",
      "serve",
    ]);
    const hpc: RemoteRunner = { kind: "slurm", pi: "/p/pi", remote_command: ["/sw"], capacity: 1 };
    expect(runnerArgv(hpc).slice(-4)).toEqual(["env", "PI_SUBAGENTS_PI_BIN=/p/pi", "/sw", "serve"]);
  });

  it("ssh without a connection shares none: no ControlMaster options", () => {
    const argv = runnerArgv({ kind: "ssh", host: "far", capacity: 1 });
    expect(argv).toEqual(["ssh", "-o", "BatchMode=yes", "far", "--", "subagent-wrapper", "serve"]);
  });

  it("ssh keeps the definition's options before the sharing ones, so they win (ssh keeps the first value)", () => {
    const argv = runnerArgv(
      { kind: "ssh", host: "far", ssh_options: ["-o", "ControlMaster=no"], capacity: 1 },
      { connection },
    );
    expect(argv.indexOf("ControlMaster=no")).toBeLessThan(argv.indexOf("ControlMaster=auto"));
    expect(argv.indexOf("BatchMode=yes")).toBe(2);
  });

  it("slurm takes a job name after the definition's options (so it wins), for scancel by name", () => {
    const argv = runnerArgv(
      { kind: "slurm", srun_options: ["--job-name=theirs"], capacity: 1 },
      { jobName: "pst-run-1", connection },
    );
    expect(argv).toEqual([
      "srun",
      "--job-name=theirs",
      "--ntasks=1",
      "--quiet",
      "--job-name=pst-run-1",
      "subagent-wrapper",
      "serve",
    ]);
    expect(scancelArgv("pst-run-1")).toEqual(["scancel", "--name=pst-run-1"]);
  });

  it("persistSeconds sets ControlPersist; the default is 60 s", () => {
    expect(SSH_CONTROL_PERSIST_SECONDS).toBe(60);
    const argv = runnerArgv(
      { kind: "ssh", host: "far", capacity: 1 },
      { connection: { ...connection, persistSeconds: 5 } },
    );
    expect(argv).toContain("ControlPersist=5");
  });
});

describe("shellQuote", () => {
  const cases: Array<[string, string]> = [
    ["subagent-wrapper", "subagent-wrapper"],
    ["/opt/pst/bin/sw", "/opt/pst/bin/sw"],
    ["--flag=a,b:c@d%e+f", "--flag=a,b:c@d%e+f"],
    ["", "''"],
    ["a b", "'a b'"],
    ["$HOME", "'$HOME'"],
    ["`id`", "'`id`'"],
    ["a;b", "'a;b'"],
    ["*", "'*'"],
    ["~", "'~'"],
    ["it's", "'it'\\''s'"],
    ["line\nbreak", "'line\nbreak'"],
  ];
  it.each(cases)("%j → %s", (word, quoted) => {
    expect(shellQuote(word)).toBe(quoted);
  });
});

describe("the shared connection's socket and control calls", () => {
  it("puts the sockets in <tmp>/pst-ssh-<uid>, one per destination (%C)", () => {
    expect(sshControlDir("/tmp", 1000)).toBe("/tmp/pst-ssh-1000");
    expect(sshControlDir("/var/tmp/", 0)).toBe("/var/tmp/pst-ssh-0");
    expect(sshControlPath("/tmp/pst-ssh-1000/")).toBe("/tmp/pst-ssh-1000/%C");
  });

  it("asks the master with the same options, -O before the destination", () => {
    const definition: SshRunner = { kind: "ssh", host: "me@far", port: 22022, capacity: 1 };
    expect(sshControlArgv(definition, connection, "exit")).toEqual([
      "ssh",
      "-o",
      "BatchMode=yes",
      ...sharing,
      "-p",
      "22022",
      "-O",
      "exit",
      "me@far",
    ]);
  });

  it("isRemoteRunner: ssh, slurm and command go through serve; sandbox does not", () => {
    expect(isRemoteRunner({ kind: "ssh", host: "h", capacity: 1 })).toBe(true);
    expect(isRemoteRunner({ kind: "slurm", capacity: 1 })).toBe(true);
    expect(isRemoteRunner({ kind: "command", command: ["x"], capacity: 1 })).toBe(true);
    expect(isRemoteRunner({ kind: "sandbox" })).toBe(false);
  });
});
