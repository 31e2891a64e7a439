import { defineConfig } from 'vitest/config';
import { SlowFirstSequencer } from './test/support/slowFirstSequencer.js';
import { SlowestFilesReporter } from './test/support/slowestFilesReporter.js';

/**
 * The service's tests that run on both engines (one suite, two backends): they make their database with
 * test/support/serviceDb.ts, which gives SQLite in the default project and PostgreSQL in the `postgres` one.
 */
const BOTH_ENGINES = [
  'test/integration/serviceWebhooks.test.ts',
  'test/integration/serviceWebhooksRestart.test.ts',
  'test/integration/service.test.ts',
  'test/integration/serviceUserList.test.ts',
  'test/integration/servicePins.test.ts',
  'test/integration/credentialDates.test.ts',
  'test/integration/serviceIntegrity.test.ts',
  'test/integration/servicePolicies.test.ts',
  'test/integration/serviceValidation.test.ts',
  'test/integration/serviceLockdown.test.ts',
  'test/integration/serviceMqtt.test.ts',
  'test/integration/serviceBodyKey.test.ts',
  'test/integration/serviceLimits.test.ts',
  'test/integration/serviceHttp.test.ts',
  'test/integration/serviceDirectoryBytes.test.ts',
  'test/integration/serviceRestoreAccept.test.ts',
  'test/integration/directoryIncremental.test.ts',
  'test/integration/consoleSignIn.test.ts',
  'test/integration/consoleLive.test.ts',
  'test/integration/consoleSharedSessions.test.ts',
  'test/unit/apiKeys.test.ts',
  'test/integration/fleetEnrol.test.ts',
  'test/integration/fleetUpdates.test.ts',
  'test/integration/fleetConfigService.test.ts',
  'test/integration/syslogExport.test.ts',
  'test/integration/serviceReports.test.ts',
  'test/integration/auditEvents.test.ts',
  'test/integration/scimUsers.test.ts',
  'test/integration/scimGroups.test.ts',
  'test/integration/identityOwnership.test.ts',
  'test/integration/ldapSync.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration tests spawn the built CLI and real processes and mostly wait on them: three workers on two cores
    // (the suite took 688 s with two on the idle VM). Their waits are sized for a loaded machine.
    maxWorkers: 3,
    // The default report, then the ten slowest files (test/support/slowestFilesReporter.ts).
    reporters: ['default', new SlowestFilesReporter()],
    sequence: { sequencer: SlowFirstSequencer },
    projects: [
      { extends: true, test: { name: 'sqlite', include: ['test/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: BOTH_ENGINES,
          env: { DOOR_TEST_ENGINE: 'postgres' },
          // One cluster for the project's run, each file a database of its own (test/support/serviceDb.ts).
          globalSetup: ['test/support/postgresGlobal.ts'],
        },
      },
    ],
  },
});
