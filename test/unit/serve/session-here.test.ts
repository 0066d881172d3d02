import { describe, expect, it } from "vitest";
import { sessionHere } from "../../../src/serve/pi-process.js";

describe("sessionHere: a follow-up's session continues in this turn's scratch workspace", () => {
  it("sets the header's cwd and keeps every other line byte for byte", () => {
    const rest = '{"type":"message","message":{"role":"user","content":"hi"}}\n';
    const session = Buffer.from(`{"type":"session","version":3,"id":"s1","cwd":"/tmp/old/work"}\n${rest}`);
    const out = sessionHere(session, "/tmp/new/work/sub").toString("utf8");
    expect(out).toBe(`{"type":"session","version":3,"id":"s1","cwd":"/tmp/new/work/sub"}\n${rest}`);
  });

  it("leaves a file without such a header as it is", () => {
    for (const text of ["not json\n{}", '{"type":"message"}\n', ""]) {
      expect(sessionHere(Buffer.from(text), "/x").toString("utf8")).toBe(text);
    }
  });
});
