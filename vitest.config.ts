import { defineConfig } from 'vitest/config';
import { SlowFirstSequencer } from './test/support/slowFirstSequencer.js';
import { SlowestFilesReporter } from './test/support/slowestFilesReporter.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration tests spawn the built CLI and real processes and mostly wait on them: three workers on two cores
    // (the suite took 688 s with two on the idle VM). Their waits are sized for a loaded machine.
    maxWorkers: 3,
    // The default report, then the ten slowest files (test/support/slowestFilesReporter.ts).
    reporters: ['default', new SlowestFilesReporter()],
    sequence: { sequencer: SlowFirstSequencer },
  },
});
