/**
 * The runner protocol's check run (verify checks on the far side): the capability in both
 * hellos, the `check` request each side parses and the `check_result` answer, each bounded.
 */
import { describe, expect, it } from "vitest";
import {
  MAX_CHECK_COMMAND_CHARS,
  MAX_CHECK_OUTPUT_CHARS,
  parseClientFrame,
  parseServerFrame,
} from "../../../src/contracts/serve-protocol.js";

const check = { t: "check", command: "npm test", cwd: "pkg/a", env: { CI: "1" }, timeout_ms: 600_000 };

describe("check frames", () => {
  it("both hellos may name the capability; anything but a boolean is refused", () => {
    expect(parseClientFrame('{"t":"hello","version":2,"workspace":"k","check":true}')).toMatchObject({ check: true });
    expect(parseClientFrame('{"t":"hello","version":2,"check":"yes"}')).toBe("malformed hello frame");
    expect(parseServerFrame('{"t":"hello","version":2,"server":"s","check":true}')).toMatchObject({ check: true });
  });

  it("a check names a command, a cwd inside the workspace, the child's env and a positive time-out", () => {
    expect(parseClientFrame(JSON.stringify(check))).toEqual(check);
    for (const bad of [
      { ...check, command: " " },
      { ...check, command: "x".repeat(MAX_CHECK_COMMAND_CHARS + 1) },
      { ...check, cwd: "../out" },
      { ...check, cwd: "/etc" },
      { ...check, env: { A: 1 } },
      { ...check, timeout_ms: 0 },
    ]) {
      expect(parseClientFrame(JSON.stringify(bad))).toBe("malformed check frame");
    }
    expect(parseServerFrame(JSON.stringify(check))).toMatch(/unknown frame type/);
  });

  it("a check_result carries the exit code (null: ended), the output's end within its bound, the time", () => {
    const result = { t: "check_result", exit_code: 1, output: "FAIL", duration_ms: 12 };
    expect(parseServerFrame(JSON.stringify(result))).toEqual(result);
    expect(parseServerFrame(JSON.stringify({ ...result, exit_code: null }))).toMatchObject({ exit_code: null });
    const long = { ...result, output: "x".repeat(MAX_CHECK_OUTPUT_CHARS + 1) };
    expect(parseServerFrame(JSON.stringify(long))).toBe("malformed check_result frame");
    expect(parseClientFrame(JSON.stringify(result))).toMatch(/unknown frame type/);
  });
});
