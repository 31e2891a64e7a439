/**
 * `npm run bench`: every benchmark, each figure beside its floor measured in the same run.
 * `npm run bench -- decisions` runs only the named ones. Results: bench/results.json.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchmarkChangeBurst } from './changeBurst.js';
import { benchmarkConsole } from './consoleBench.js';
import { benchmarkDecisions } from './decisions.js';
import { benchmarkDirectoryStorm } from './directoryStorm.js';
import { benchmarkFleet, benchmarkFleet1000 } from './fleetBench.js';
import { benchmarkMqtt } from './mqttBench.js';
import { benchmarkService } from './serviceBench.js';
import { benchmarkServiceCluster } from './serviceCluster.js';
import { benchmarkSync } from './syncBench.js';
import { benchmarkSyncScale } from './syncScale.js';
import { benchmarkTapDuringSync } from './tapDuringSync.js';
import { benchmarkTapToRelay } from './tapToRelay.js';
import { benchmarkWiegand } from './wiegandBench.js';
import { benchmarkOsdp } from './osdpBench.js';
import { benchmarkStartup } from './startup.js';
import { benchmarkReports } from './reportsBench.js';
import { benchmarkScim } from './scimBench.js';
import { benchmarkLdap } from './ldapBench.js';
import { exceededBounds, renderTable, writeResults, type BenchRow } from './report.js';

const BENCHES: Record<string, (workDir: string) => BenchRow[] | Promise<BenchRow[]>> = {
  decisions: benchmarkDecisions,
  'tap-to-relay': benchmarkTapToRelay,
  mqtt: benchmarkMqtt,
  service: benchmarkService,
  console: benchmarkConsole,
  'directory-storm': benchmarkDirectoryStorm,
  'change-burst': benchmarkChangeBurst,
  sync: benchmarkSync,
  'sync-scale': benchmarkSyncScale,
  'tap-during-sync': benchmarkTapDuringSync,
  fleet: benchmarkFleet,
  'fleet-1000': benchmarkFleet1000,
  'service-cluster': benchmarkServiceCluster,
  wiegand: benchmarkWiegand,
  osdp: benchmarkOsdp,
  startup: benchmarkStartup,
  reports: benchmarkReports,
  scim: benchmarkScim,
  ldap: benchmarkLdap,
};

const root = resolve(fileURLToPath(import.meta.url), '../../..');
const workDir = join(root, 'bench/.work');
mkdirSync(workDir, { recursive: true });
const wanted = process.argv.slice(2);
const unknown = wanted.filter((w) => !(w in BENCHES));
if (unknown.length > 0) {
  process.stderr.write(`unknown benchmark(s): ${unknown.join(', ')}; known: ${Object.keys(BENCHES).join(', ')}\n`);
  process.exit(2);
}
const rows: BenchRow[] = [];
for (const name of wanted.length > 0 ? wanted : Object.keys(BENCHES)) {
  process.stdout.write(`running ${name}...\n`);
  rows.push(...(await BENCHES[name]!(workDir)));
}
process.stdout.write(`\n${renderTable(rows)}\n`);
writeResults(join(root, 'bench/results.json'), rows);
process.stdout.write(`\nwritten to bench/results.json\n`);
// A ratio past its regression bound fails the run, so a regression is caught where it happens.
const exceeded = exceededBounds(rows);
if (exceeded.length > 0) {
  process.stderr.write(`\nbenchmark FAILED: ${exceeded.length} ratio(s) past their regression bound\n${exceeded.map((m) => `  ${m}\n`).join('')}`);
  process.exitCode = 1;
}
