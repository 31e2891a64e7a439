import { relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

/** How many of the slowest test files the run ends with. */
const SHOWN = 10;

/**
 * Ends `npm test` with its slowest files (collect, hooks and tests, as vitest times them): where the suite's
 * 10-minute budget on a loaded 2-core machine goes, and which file to look at first when it grows.
 */
export class SlowestFilesReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    if (testModules.length < 2) return;
    const timed = testModules
      .map((m) => {
        const d = m.diagnostic();
        return { file: relative(process.cwd(), m.moduleId), seconds: (d.collectDuration + d.duration) / 1000 };
      })
      .sort((a, b) => b.seconds - a.seconds)
      .slice(0, SHOWN);
    const lines = timed.map(({ file, seconds }) => `  ${seconds.toFixed(1).padStart(6)} s  ${file}`);
    process.stdout.write(`\n Slowest test files (of ${testModules.length}):\n${lines.join('\n')}\n`);
  }
}
