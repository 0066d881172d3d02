/**
 * Strict marker detection: only a line holding the marker alone counts. The
 * report's three false passes came from substring matching of exactly these texts.
 */
import { describe, expect, it } from "vitest";
import { markerInstruction, readMarker } from "../../support/stress/markers.js";

describe("readMarker", () => {
  it("passes on the marker alone on its own line, white space around it aside", () => {
    expect(readMarker("All good.\nSTRESS_01_OK", "01")).toEqual({ pass: true, line: "STRESS_01_OK" });
    expect(readMarker("All good.\r\n   STRESS_01_OK  \r\n", "01").pass).toBe(true);
    expect(readMarker("STRESS_10A_OK", "10A").pass).toBe(true);
  });

  it.each([
    ["## STRESS_08_OK", "08"],
    ["STRESS_09_OK emitted", "09"],
    ["STRESS_11_OK must NOT be returned because the scout lacks the tool", "11"],
    ["**STRESS_01_OK**", "01"],
    ["`STRESS_01_OK`", "01"],
    ["Result: STRESS_01_OK", "01"],
  ])("the report's false passes fail: %j", (text, id) => {
    const verdict = readMarker(`Done.\n${text}`, id);
    expect(verdict.pass).toBe(false);
    expect(verdict.reason).toContain("appears only inside a line");
  });

  it("another scenario's marker does not count", () => {
    expect(readMarker("STRESS_01_OK", "10")).toMatchObject({
      pass: false,
      reason: "no line holding exactly STRESS_10_OK",
    });
    expect(readMarker("STRESS_10A_OK", "10").pass).toBe(false);
  });

  it("a FAIL line fails the scenario, even next to an OK line, and its reason is kept", () => {
    expect(readMarker("STRESS_05_FAIL: the first wait did not time out", "05")).toEqual({
      pass: false,
      line: "STRESS_05_FAIL: the first wait did not time out",
      reason: "the root reported STRESS_05_FAIL: the first wait did not time out",
    });
    expect(readMarker("STRESS_05_OK\nSTRESS_05_FAIL", "05")).toMatchObject({
      pass: false,
      reason: "the root reported STRESS_05_FAIL",
    });
  });

  it("an empty answer fails", () => {
    expect(readMarker("", "01")).toMatchObject({ pass: false, reason: "no line holding exactly STRESS_01_OK" });
  });

  it("the live prompt states the exact format", () => {
    expect(markerInstruction("07")).toContain("a line that holds exactly STRESS_07_OK and nothing else");
    expect(markerInstruction("07")).toContain("STRESS_07_FAIL: <the condition that failed>");
  });
});
