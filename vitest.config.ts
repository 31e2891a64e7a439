import { defineConfig } from 'vitest/config';
import { SlowFirstSequencer } from './test/support/slowFirstSequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration tests spawn the built CLI and real processes; two cores, so keep the pool small.
    maxWorkers: 2,
    reporters: ['default'],
    sequence: { sequencer: SlowFirstSequencer },
  },
});
