/**
 * Which tests `npm test` runs on both pi lines (scripts/pi-lines.mjs lineDependentTests): the
 * ones in test/e2e, and any other that uses the line's pi or node, itself or through the test
 * support it imports. The rest run once.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { lineDependentTests, testsInScope } from "../../scripts/pi-lines.mjs";
import { REPO_ROOT } from "../support/pi-home.js";

// Spelled in two parts: this file names them without using them, and must not count as a user.
const realPiName = ["REAL", "PI"].join("_");
const makeHomeName = ["make", "PiHome"].join("");

let root: string | undefined;
afterEach(() => {
  if (root) fs.rmSync(root, { recursive: true, force: true });
  root = undefined;
});

/** A checkout holding `files` (path → text). */
function checkout(files: Record<string, string>): string {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "psa-line-tests-"));
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
  }
  return root;
}

const PI_HOME = `export const REPO_ROOT = "/";\nexport const ${realPiName} = "pi";\nexport function ${makeHomeName}() {}\n`;

describe("the tests that depend on the pi line", () => {
  it("are test/e2e's, and those that use the line's pi themselves or through the test support they import", () => {
    const dir = checkout({
      "test/support/pi-home.ts": PI_HOME,
      "test/support/harness.ts": `import { ${makeHomeName} } from "./pi-home.js";\n`,
      "test/support/deeper.ts": `export * from "./harness.js";\n`,
      "test/support/paths.ts": `import { REPO_ROOT } from "./pi-home.js";\n`,
      "test/e2e/anything.test.ts": `import { it } from "vitest";\n`,
      "test/wrapper/real.test.ts": `import { ${realPiName} } from "../support/pi-home.js";\n`,
      "test/wrapper/through.test.ts": `import { x } from "../support/deeper.js";\n`,
      "test/wrapper/root-only.test.ts": `import { REPO_ROOT } from "../support/pi-home.js";\n`,
      "test/unit/paths.test.ts": `import { p } from "../support/paths.js";\n`,
      "test/unit/cycle-a.test.ts": `import "./cycle-b.js";\n`,
      "test/unit/cycle-b.ts": `import "./cycle-a.test.js";\n`,
    });
    expect(lineDependentTests(dir)).toEqual([
      path.join("test", "e2e", "anything.test.ts"),
      path.join("test", "wrapper", "real.test.ts"),
      path.join("test", "wrapper", "through.test.ts"),
    ]);
  });

  it("in this checkout: every e2e test, and none that only finds the checkout's root", () => {
    const found = lineDependentTests(REPO_ROOT);
    const e2e = fs
      .readdirSync(path.join(REPO_ROOT, "test", "e2e"))
      .filter((name) => name.endsWith(".test.ts"))
      .map((name) => path.join("test", "e2e", name));
    expect(found).toEqual(expect.arrayContaining(e2e));
    expect(found).toContain(path.join("test", "wrapper", "doctor.test.ts"));
    expect(found).not.toContain(path.join("test", "unit", "folder-rules.test.ts"));
    expect(found).not.toContain(path.join("test", "unit", "line-tests.test.ts"));
  });
});

describe("the tests a pass takes (PI_SUBAGENTS_TEST_SCOPE)", () => {
  const files = {
    "test/support/pi-home.ts": PI_HOME,
    "test/e2e/tree.test.ts": `import { it } from "vitest";\n`,
    "test/wrapper/real.test.ts": `import { ${realPiName} } from "../support/pi-home.js";\n`,
    "test/unit/pure.test.ts": `import { it } from "vitest";\n`,
  };
  const lineTests = [path.join("test", "e2e", "tree.test.ts"), path.join("test", "wrapper", "real.test.ts")];

  it("`line`: only the tests that depend on the line", () => {
    expect(testsInScope(checkout(files), "line")).toEqual({ include: lineTests, exclude: [] });
  });

  it("`rest`: every test but those, so that together the two take each test once", () => {
    expect(testsInScope(checkout(files), "rest")).toEqual({ include: ["test/**/*.test.ts"], exclude: lineTests });
  });

  it("unset: every test", () => {
    expect(testsInScope(checkout(files), undefined)).toEqual({ include: ["test/**/*.test.ts"], exclude: [] });
  });
});
