import { describe, expect, it } from "vitest";
import {
  extensionCheck,
  modelCheck,
  PACKAGE_ROOT,
  type PiCommandRun,
  parseModelList,
} from "../../../src/cli/doctor-pi-setup.js";

const ran = (over: Partial<PiCommandRun> = {}): PiCommandRun => ({
  stdout: "",
  stderr: "",
  code: 0,
  timedOut: false,
  ...over,
});

const LIST = `provider   model              context  max-out  thinking  images
anthropic  claude-sonnet-4-5  200K     64K      yes       yes
fake       fast               128K     16.4K    no        no
`;

describe("doctor: pi's default model and key", () => {
  it("reads the models pi has a key for from --list-models", () => {
    expect(parseModelList(LIST)).toEqual(["anthropic/claude-sonnet-4-5", "fake/fast"]);
    expect(parseModelList("No models available. Use /login …\n")).toBeUndefined();
  });

  it("finds the list on stderr too, where pi 0.73.1 prints it when stdout is not a terminal", () => {
    expect(modelCheck("fake/fast", ran({ stderr: LIST }), 1000)).toMatchObject({ ok: true });
    expect(modelCheck(undefined, ran({ stdout: "No models available.\n" }), 1000)).toMatchObject({
      ok: false,
      detail: "pi has a key for no model",
    });
  });

  it("✓ when the default is among them; ✗ with what to do when it is not, or when pi did not answer", () => {
    expect(modelCheck("fake/fast", ran({ stdout: LIST }), 1000)).toMatchObject({ ok: true });
    expect(modelCheck("openai/gpt-5", ran({ stdout: LIST }), 1000)).toMatchObject({
      ok: false,
      detail: "openai/gpt-5 (settings.json) is not among the models pi has a key for",
      hint: expect.stringContaining("/login"),
    });
    expect(modelCheck("fake/fast", ran({ timedOut: true, code: null }), 30_000)).toMatchObject({
      ok: false,
      detail: "pi --list-models gave no answer within 30000 ms (stopped)",
    });
    expect(modelCheck(undefined, ran({ code: 1, stderr: "\nboom\n" }), 1000)).toMatchObject({
      ok: false,
      detail: "pi --list-models failed: exit 1 — boom",
    });
  });
});

describe("doctor: pi loads the extension", () => {
  it("✓ on a clean start, and on one that ends only because pi has no model (the model check says that)", () => {
    expect(extensionCheck(ran(), 1000)).toMatchObject({
      ok: true,
      detail: `pi loads ${PACKAGE_ROOT} without a complaint`,
    });
    expect(extensionCheck(ran({ code: 1, stderr: "No models available. Use /login …" }), 1000)).toMatchObject({
      ok: true,
    });
  });

  it("✗ with pi's line when it complains about an extension, even when it goes on", () => {
    const stderr = 'Warning: Extension "pi-subagent-tree" conflicts with an installed one\n';
    expect(extensionCheck(ran({ stderr }), 1000)).toMatchObject({
      ok: false,
      detail: 'Warning: Extension "pi-subagent-tree" conflicts with an installed one',
    });
    expect(extensionCheck(ran({ code: 1, stderr: 'Error: Failed to load extension "x": boom\n' }), 1000)).toMatchObject(
      { ok: false, detail: 'Error: Failed to load extension "x": boom' },
    );
    expect(extensionCheck(ran({ code: null, timedOut: true }), 5000).detail).toBe(
      "pi --mode rpc -ne -e <package> gave no answer within 5000 ms (stopped)",
    );
  });
});
