import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // A directory for the run, where test files share what is costly to make (test/helpers/demo-run.ts).
    globalSetup: ["test/helpers/global-setup.ts"],
    // Several tests spawn git, python and child node processes; two workers match the CI machine.
    maxWorkers: 2,
    // No test depends on a wall-clock margin: on a loaded machine a test takes longer, it does not
    // fail. These limits only stop a test that hangs; CI's own limit is 90 minutes.
    testTimeout: 3_600_000,
    hookTimeout: 3_600_000,
  },
});
