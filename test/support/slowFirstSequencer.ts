import { BaseSequencer, type TestSpecification } from 'vitest/node';

// The files that run for minutes start first, so the workers finish together: on a fresh clone (CI) vitest
// has no timings yet and would order by file size, which can leave the installer's test (npm ci with the native
// builds, about two minutes) for last and add its whole length to the run.
const SLOW_FIRST = [
  'test/integration/debPackage.test.ts',
  'test/integration/install.test.ts',
  'test/integration/sync.test.ts',
  'test/integration/serviceCluster.test.ts',
  'test/integration/serviceClusterStorm.test.ts',
  'test/integration/mqtt.test.ts',
  'test/integration/daemon.test.ts',
  'test/e2e/console.test.ts',
  'test/integration/osdpDaemon.test.ts',
  'test/e2e/consoleAccess.test.ts',
  'test/integration/pn532Daemon.test.ts',
  'test/integration/operationsMqtt.test.ts',
  'test/integration/serviceRestore.test.ts',
  'test/integration/cacheDamage.test.ts',
];

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const i = SLOW_FIRST.findIndex((path) => spec.moduleId.endsWith(path));
      return i === -1 ? SLOW_FIRST.length : i;
    };
    return sorted
      .map((spec, i) => ({ spec, i }))
      .sort((a, b) => rank(a.spec) - rank(b.spec) || a.i - b.i)
      .map(({ spec }) => spec);
  }
}
