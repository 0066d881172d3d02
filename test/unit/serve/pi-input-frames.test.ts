/**
 * The runner protocol's pi input (a child with dialogs runs pi in RPC mode on the far side):
 * the capability in both hellos and the two frames that carry pi's stdin, as each side parses them.
 */
import { describe, expect, it } from "vitest";
import { PI_INPUT_BYTES, parseClientFrame, parseServerFrame } from "../../../src/contracts/serve-protocol.js";

describe("pi_input frames", () => {
  it("both hellos may name the capability; anything but a boolean is refused", () => {
    expect(parseClientFrame('{"t":"hello","version":2,"pi_input":true}')).toMatchObject({ pi_input: true });
    expect(parseClientFrame('{"t":"hello","version":2,"pi_input":1}')).toBe("malformed hello frame");
    expect(parseServerFrame('{"t":"hello","version":2,"server":"s","pi_input":true}')).toMatchObject({
      pi_input: true,
    });
    expect(parseServerFrame('{"t":"hello","version":2,"server":"s","pi_input":"yes"}')).toBe("malformed hello frame");
  });

  it("pi_input carries base64 up to its bound, pi_input_end nothing; only the local side sends them", () => {
    const line = Buffer.from('{"type":"prompt","message":"x"}\n').toString("base64");
    expect(parseClientFrame(JSON.stringify({ t: "pi_input", data: line }))).toEqual({ t: "pi_input", data: line });
    expect(parseClientFrame('{"t":"pi_input","data":"not base64!"}')).toBe("malformed pi_input frame");
    const tooBig = Buffer.alloc(PI_INPUT_BYTES + 3).toString("base64");
    expect(parseClientFrame(JSON.stringify({ t: "pi_input", data: tooBig }))).toBe("malformed pi_input frame");
    expect(parseClientFrame('{"t":"pi_input_end"}')).toEqual({ t: "pi_input_end" });
    expect(parseServerFrame('{"t":"pi_input_end"}')).toMatch(/unknown frame type/);
  });
});
