import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 90_000,
    hookTimeout: 30_000,
    // Wrapper and e2e tests start real processes; two cores do not like many at once.
    maxWorkers: 2,
  },
});
