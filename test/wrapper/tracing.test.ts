/**
 * subagent-wrapper with an OTLP endpoint, against the fake pi: the turn's spans go to a
 * receiver in the test under the span meta.json's TRACEPARENT names, pi runs with the turn's
 * own TRACEPARENT, and a collector that is down costs one line and never the result. With no
 * endpoint the run path loads no OpenTelemetry module at all.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { type OtlpReceiver, startOtlpReceiver } from "../support/otlp-receiver.js";
import { REPO_ROOT } from "../support/pi-home.js";
import { killAll } from "../support/processes.js";
import { cleanupWrapperCases, defaultMeta, FAKE_PI_DIR, wrapperCase } from "../support/wrapper-harness.js";

const PARENT = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7" };
const TRACEPARENT = `00-${PARENT.traceId}-${PARENT.spanId}-01`;

let receiver: OtlpReceiver | undefined;
afterEach(async () => {
  await killAll();
  await cleanupWrapperCases();
  await receiver?.close();
  receiver = undefined;
});

describe("subagent-wrapper with tracing", () => {
  it("exports the turn under meta.json's TRACEPARENT, and pi runs with the turn's own", async () => {
    receiver = await startOtlpReceiver();
    const wrapper = await wrapperCase({
      meta: defaultMeta({ agentPath: "/root/alpha", env: { TRACEPARENT } }),
      scenario: "tool-then-answer",
    });
    const run = await wrapper.run({
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, FAKE_PI_RECORD_ENV: "TRACEPARENT" },
    });
    expect(run.code).toBe(0);
    expect(run.stderr).toBe("");
    const spans = await receiver.waitForSpans(4);
    const turn = spans.find((span) => span.name === "invoke_agent /root/alpha")!;
    expect(turn).toMatchObject({ traceId: PARENT.traceId, parentSpanId: PARENT.spanId });
    expect(spans.map((span) => span.name).sort()).toEqual([
      "chat fake/fast",
      "chat fake/fast",
      "execute_tool bash",
      "invoke_agent /root/alpha",
    ]);
    expect(spans.filter((span) => span !== turn).every((span) => span.parentSpanId === turn.spanId)).toBe(true);
    const record = JSON.parse(await run.read("fake-pi-record.json")) as { env: Record<string, string> };
    expect(record.env.TRACEPARENT).toBe(`00-${PARENT.traceId}-${turn.spanId}-01`);
  });

  it("a collector that is down: result.json as always, and one line on stderr", async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    const wrapper = await wrapperCase({ scenario: "tool-then-answer" });
    const run = await wrapper.run({
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_EXPORTER_OTLP_TIMEOUT: "500" },
    });
    expect(run.code).toBe(0);
    expect(run.result).toMatchObject({ status: "completed", finalText: "final answer" });
    expect(run.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(/^subagent-wrapper: warning: tracing: could not send 4 spans: /),
    ]);
  });
});

describe("the run path with tracing off", () => {
  /** Runs a meta.json in this process through the bundled run path, and says how many OpenTelemetry modules it loaded. */
  async function openTelemetryModulesLoaded(endpoint: string | undefined): Promise<number> {
    const wrapper = await wrapperCase({ scenario: "default" });
    const script = `
      const bundle = require(${JSON.stringify(path.join(REPO_ROOT, "dist", "cli", "run-command.bundle.cjs"))});
      bundle.runMetaFile(${JSON.stringify(wrapper.metaPath)}).then((code) => {
        const loaded = Object.keys(require.cache).filter((file) => file.includes("@opentelemetry")).length;
        process.stdout.write(JSON.stringify({ code, loaded }));
        process.exit(0);
      });`;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PATH: `${FAKE_PI_DIR}${path.delimiter}${process.env.PATH ?? ""}`,
      FAKE_PI_SCENARIO: "default",
      OTEL_EXPORTER_OTLP_TIMEOUT: "500",
    };
    delete env.OTEL_EXPORTER_OTLP_ENDPOINT;
    delete env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
    if (endpoint) env.OTEL_EXPORTER_OTLP_ENDPOINT = endpoint;
    const { stdout } = await promisify(execFile)(process.execPath, ["-e", script], {
      cwd: wrapper.dir,
      env,
      timeout: 20_000,
    });
    const { code, loaded } = JSON.parse(stdout) as { code: number; loaded: number };
    expect(code).toBe(0);
    return loaded;
  }

  it("loads no OpenTelemetry module; with an endpoint it does (the check sees them)", async () => {
    expect(fs.existsSync(path.join(REPO_ROOT, "dist", "cli", "run-command.bundle.cjs"))).toBe(true);
    expect(await openTelemetryModulesLoaded(undefined)).toBe(0);
    receiver = await startOtlpReceiver();
    expect(await openTelemetryModulesLoaded(receiver.url)).toBeGreaterThan(0);
  });
});
