/** list_models with a model scope: `--models` on pi's command line, or `enabledModels` in settings. */
import { describe, expect, it } from "vitest";
import { reply } from "../support/scripted-llm.js";
import { expectCleanExit, rootResult, useTrees } from "../support/tree-harness-extra.js";

const tree = useTrees();
const script = { "/root": [reply.toolCall("list_models", {}), reply.text("ROOT DONE")] };

describe("list_models", () => {
  it("without a scope lists every model pi can authenticate, each with its reasoning levels", async () => {
    const h = await tree({ scripts: script });
    expectCleanExit(await h.runRoot("models"));
    expect(rootResult(h, "list_models")).toEqual({
      models: [
        {
          model: "fake/fast",
          reasoning_levels: ["off", "minimal", "low", "medium", "high"],
          context_window: expect.any(Number),
        },
        { model: "fake/deep", reasoning_levels: ["off", "high", "xhigh"], context_window: expect.any(Number) },
      ],
    });
  });

  it("--models on pi's command line: only the scoped models, and scoped: true", async () => {
    const h = await tree({ scripts: script });
    expectCleanExit(await h.runRoot("models", { args: ["--models", "fake/deep"] }));
    expect(rootResult(h, "list_models")).toMatchObject({ scoped: true, models: [{ model: "fake/deep" }] });
    expect(rootResult(h, "list_models").models).toHaveLength(1);
  });

  it("enabledModels in settings scopes the list the same way", async () => {
    const h = await tree({ scripts: script, extraSettings: { enabledModels: ["fake/fast"] } });
    expectCleanExit(await h.runRoot("models"));
    expect(rootResult(h, "list_models")).toMatchObject({ scoped: true, models: [{ model: "fake/fast" }] });
    expect(rootResult(h, "list_models").models).toHaveLength(1);
  });
});
