import { describe, expect, it } from "vitest";
import { ABORT_NO_REASON, findAbortMarker } from "../../../src/wrapper/abort-marker.js";

describe("findAbortMarker", () => {
  it.each([
    ["a line of its own", ["[ABORT] Could not find a Stripe integration"], "Could not find a Stripe integration"],
    [
      "after other lines",
      ["Checked the repo.\n[ABORT] API is not enabled for this project\nmore"],
      "API is not enabled for this project",
    ],
    ["indented", ["   \t[ABORT]   spaced out   "], "spaced out"],
    ["after CRLF lines", ["first\r\n[ABORT] windows line\r\n"], "windows line"],
    ["in a later text block", ["all good so far", "second block\n[ABORT] late stop"], "late stop"],
    ["the first of several", ["[ABORT] first\n[ABORT] second"], "first"],
    ["with no reason", ["[ABORT]"], ABORT_NO_REASON],
    ["with only spaces after it", ["[ABORT]    "], ABORT_NO_REASON],
  ])("finds the marker %s", (_name, blocks, reason) => {
    expect(findAbortMarker(blocks)).toBe(reason);
  });

  it.each([
    ["quoted mid-line", ["do not write [ABORT] here"]],
    ["after a markdown prefix", ["**[ABORT]** bold is not a marker", "> [ABORT] neither is a quote"]],
    ["in another case", ["[abort] lower case"]],
    ["as a longer word", ["[ABORTED] nope"]],
    ["absent", ["nothing to see", ""]],
    ["in no blocks", []],
  ])("ignores a marker %s", (_name, blocks) => {
    expect(findAbortMarker(blocks)).toBeUndefined();
  });
});
