import { defineConfig } from 'vitest/config';
import { SlowFirstSequencer } from './test/support/slowFirstSequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration tests spawn the built CLI and real processes and mostly wait on them: three workers on two
    // cores (the suite took 633 s with two, 503 s with three, on this 2-core VM; the install test alone is ~240 s).
    maxWorkers: 3,
    reporters: ['default'],
    sequence: { sequencer: SlowFirstSequencer },
  },
});
