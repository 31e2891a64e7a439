/**
 * `service-cluster` (issue 52 item 8): the reference service as a larger site runs it, beside the one process on
 * SQLite, in the same run. Two layouts (bench/serviceSite.ts): one service process on its SQLite file; two service
 * processes on one PostgreSQL database (a cluster of the benchmark's own, durable settings: bench/postgres.ts)
 * behind HAProxy with the shipped examples/haproxy/haproxy.cfg. On each, one after the other:
 * - fleet-1000 (bench/fleetBench.ts): 1,000 agents' real sync loops, their cold start, then changes each timed
 *   until all 1,000 hold it (target p99 < 3 s);
 * - directory-storm (bench/directoryStorm.ts) at 10,000 and 250,000 users: 100 doors cold, until all hold the
 *   directory (target < 60 s at 250,000); then, on the same site, a burst of 100 changes through the front
 *   (bench/changeBurst.ts's), and the CPU time of every service process over it divided by 100: the service's
 *   CPU per change; on PostgreSQL the database server's too, apart. Each process must then hold all 100 changes.
 *   Then the service's side of fleet-1000's change without the doors' own work: one more change, and 950 doors'
 *   GET /directory?since for it at once from one client process (bench/stormClient.ts, each on its kept-alive one):
 *   until all 950 hold the answer, and the CPU of the service processes, PostgreSQL and HAProxy over it (their
 *   connecting included).
 * The layouts alternate within each phase, so a change in the machine's load weighs on both alike.
 * SERVICE_CLUSTER_USERS=10000 runs the storms at 10,000 users only (the 250,000 ones take many minutes).
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { applyBurst, changedIds, waitHeld } from './changeBurst.js';
import { storm, stormAt, type RunningSite } from './directoryStorm.js';
import { fleet1000On } from './fleetBench.js';
import { startBroker } from './mqttBench.js';
import { freePort } from './net.js';
import { processCpuMs, startBenchPostgres, type BenchPostgres } from './postgres.js';
import { type BenchRow, infoRow } from './report.js';
import { layoutLabel, type SiteLayout } from './serviceSite.js';
import { sleep } from './wait.js';
import { directoryQuery, parseDirectoryEtag } from '../src/protocol/directory.js';

const B = 'service-cluster';
const CHANGES = 100;
/** After the burst's last answer: time for the other processes to hear of it (LISTEN/NOTIFY) and the publisher to send it. */
const SETTLE_MS = 1000;
const SIZES = [
  { users: 10_000, goalSeconds: 5 },
  { users: 250_000, goalSeconds: 60 },
];

/** GET a JSON answer from the service with `key`. */
async function getJson<T>(url: string, key: string): Promise<T> {
  const answer = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
  if (!answer.ok) throw new Error(`${B} benchmark: GET ${url} answered ${answer.status}: ${(await answer.text()).slice(0, 200)}`);
  return (await answer.json()) as T;
}

interface Status {
  directory: { revision: number };
  refused: Record<string, number>;
}

/**
 * A burst of CHANGES changes (PUT /togglesuspension and PUT /modifysmartcard in turn, one connection, through
 * the site's front) on a running site of `users`: the CPU time of its service processes (and of PostgreSQL) from
 * the first change until SETTLE_MS after the last answer, divided by CHANGES. Then every process, asked on its
 * own port, must list all of them in GET /directory?since (LISTEN/NOTIFY between them), and none may have refused
 * a request for want of its database.
 */
function cpuPerChange(users: number, layout: SiteLayout, postgres: BenchPostgres): (running: RunningSite) => Promise<BenchRow[]> {
  return async ({ site, front, pids }) => {
    const label = `${layoutLabel(layout)}, ${users.toLocaleString('en-US')} users`;
    const { revision } = (await getJson<Status>(`${front.url}/status`, site.doorKey)).directory;
    const ids = changedIds(users, 7);
    const serviceCpu = () => pids.reduce((sum, pid) => sum + processCpuMs(pid), 0);
    const databaseCpu = () => (layout.engine === 'postgres' ? postgres.cpuMs() : 0);
    const [service0, database0, started] = [serviceCpu(), databaseCpu(), performance.now()];
    await applyBurst(front.port, site.adminKey, ids);
    const burstMs = performance.now() - started;
    await sleep(SETTLE_MS);
    const [service1, database1] = [serviceCpu(), databaseCpu()];
    const heldStarted = performance.now();
    for (const port of site.ports) await waitHeld(port, site.doorKey, revision, ids);
    const heldMs = performance.now() - heldStarted;
    const refused = new Map<string, number>();
    for (const port of site.ports) {
      const status = await getJson<Status>(`http://127.0.0.1:${port}/status`, site.doorKey);
      for (const [reason, n] of Object.entries(status.refused)) refused.set(reason, (refused.get(reason) ?? 0) + n);
    }
    const database = refused.get('database') ?? 0;
    const rows: BenchRow[] = [
      {
        bench: B,
        metric: `${label}: the service's CPU per change (all ${pids.length} process${pids.length > 1 ? 'es' : ''}, a burst of ${CHANGES} changes)`,
        value: (service1 - service0) / CHANGES,
        unit: 'ms',
        floor: null,
        floorLabel: '',
        ratio: null,
        target: '',
        met: null,
      },
      infoRow(B, `${label}: the burst's time per change (one connection, through the front)`, burstMs / CHANGES, 'ms'),
      infoRow(B, `${label}: after the burst, until every process lists all ${CHANGES} changes`, heldMs, 'ms'),
      {
        bench: B,
        metric: `${label}: requests refused for want of the database (503), all processes`,
        value: database,
        unit: '',
        floor: null,
        floorLabel: '',
        ratio: null,
        target: '0',
        met: database === 0,
      },
    ];
    if (layout.engine === 'postgres')
      rows.splice(1, 0, infoRow(B, `${label}: PostgreSQL's CPU per change (server and backends)`, (database1 - database0) / CHANGES, 'ms'));
    return [...rows, ...(await changeForTheFleet(label, { site, front, pids }, layout.engine === 'postgres', databaseCpu))];
  };
}

/**
 * fleet-1000's doors, less room for the bench's own connections: each door here holds a connection open at once,
 * and one service process takes at most server.maxConnections (1,000 by default) before it drops new ones.
 */
const FLEET_DOORS = 950;
/** The figure fleet-1000 is held to: a change held by all 1,000 doors within this. */
const FLEET_GOAL_MS = 3000;

/**
 * The service's side of a change that FLEET_DOORS doors fetch, without the doors' own work (in fleet-1000 they share
 * this machine's two cores with the service, each door's cache write its own fsync): a change, then FLEET_DOORS GET
 * /directory?since of the version held before it, at once from one client process, each on a connection of its own
 * opened before (as a door asks on the connection of its last sync, kept alive). The service processes',
 * PostgreSQL's and HAProxy's CPU over it: what a change costs a service machine of its own.
 */
async function changeForTheFleet(label: string, { site, front, pids }: RunningSite, onPostgres: boolean, databaseCpu: () => number): Promise<BenchRow[]> {
  const auth = `Bearer ${site.doorKey}`;
  const { revision } = (await getJson<Status>(`${front.url}/status`, site.doorKey)).directory;
  // The version a door holds: the current one's ETag (a 304 to a door that holds it).
  const current = await fetch(`${front.url}/directory?since=${revision}`, { headers: { authorization: auth } });
  await current.body?.cancel();
  const held = parseDirectoryEtag(current.headers.get('etag') ?? undefined);
  if (held === null) throw new Error(`${B} benchmark: GET /directory?since=${revision} answered ${current.status} without a directory ETag`);
  const changed = await fetch(`${front.url}/togglesuspension`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${site.adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email_id: 3 }),
  });
  if (!changed.ok) throw new Error(`${B} benchmark: PUT /togglesuspension answered ${changed.status}: ${await changed.text()}`);
  // Each process hears of it (LISTEN/NOTIFY) before the doors ask, as the revision message comes after the commit.
  await sleep(200);
  const serviceCpu = () => pids.reduce((sum, pid) => sum + processCpuMs(pid), 0);
  const balancerCpu = () => (front.balancerPid === null ? 0 : processCpuMs(front.balancerPid));
  const before = [serviceCpu(), databaseCpu(), balancerCpu()] as const;
  const query = new URLSearchParams(directoryQuery(held)).toString();
  const measured = await storm(`${front.url}/directory?${query}`, [`authorization: ${auth}`, 'accept-encoding: gzip'], FLEET_DOORS, `${front.url}/healthz`);
  await sleep(SETTLE_MS);
  const [service, database, balancer] = [serviceCpu() - before[0], databaseCpu() - before[1], balancerCpu() - before[2]];
  const missed = measured.refused + measured.failed + measured.timedOut;
  const what = `${label}: a change's ${FLEET_DOORS.toLocaleString('en-US')} GET /directory?since at once, the service's side alone`;
  return [
    {
      bench: B,
      metric: `${what}: all ${FLEET_DOORS.toLocaleString('en-US')} answered`,
      value: measured.allMs ?? Number.NaN,
      unit: 'ms',
      floor: null,
      floorLabel: '',
      ratio: null,
      target: `< ${FLEET_GOAL_MS} (fleet-1000's), none refused or failed`,
      met: measured.allMs !== null && measured.allMs < FLEET_GOAL_MS && missed === 0,
    },
    // The CPU is counted from before the doors open their connections (a GET /healthz each) to after the answers.
    infoRow(B, `${what}: the service's CPU (all ${pids.length} process${pids.length > 1 ? 'es' : ''}; the doors' connecting included)`, service, 'ms'),
    ...(onPostgres ? [infoRow(B, `${what}: PostgreSQL's CPU (the same)`, database, 'ms')] : []),
    ...(front.balancerPid === null ? [] : [infoRow(B, `${what}: HAProxy's CPU (the same)`, balancer, 'ms')]),
  ];
}

/** SERVICE_CLUSTER_USERS=10000: the storms at that size only. */
function sizes(): typeof SIZES {
  const only = process.env.SERVICE_CLUSTER_USERS;
  if (only === undefined || only === '') return SIZES;
  const wanted = only.split(',').map(Number);
  const chosen = SIZES.filter((s) => wanted.includes(s.users));
  if (chosen.length === 0) throw new Error(`SERVICE_CLUSTER_USERS=${only}: the sizes are ${SIZES.map((s) => s.users).join(', ')}`);
  return chosen;
}

export async function benchmarkServiceCluster(workDir: string): Promise<BenchRow[]> {
  const storms = sizes();
  const postgres = await startBenchPostgres(workDir);
  const mqttPort = await freePort();
  const brokerDir = join(workDir, `${B}-broker`);
  mkdirSync(brokerDir, { recursive: true });
  const broker = await startBroker(brokerDir, mqttPort);
  const layouts: SiteLayout[] = [{ engine: 'sqlite' }, { engine: 'postgres', processes: 2, postgres }];
  const rows: BenchRow[] = [];
  try {
    for (const layout of layouts) {
      process.stdout.write(`${B}: fleet-1000, ${layoutLabel(layout)}\n`);
      rows.push(...(await fleet1000On(workDir, B, layout)));
    }
    for (const { users, goalSeconds } of storms) {
      for (const layout of layouts) {
        process.stdout.write(`${B}: directory-storm at ${users.toLocaleString('en-US')} users and a burst, ${layoutLabel(layout)}\n`);
        rows.push(
          ...(await stormAt(workDir, users, goalSeconds, {
            layout,
            // The changes' revision messages go to a broker, as on a site (nothing subscribes here).
            extraYaml: `mqtt: { url: "mqtt://127.0.0.1:${mqttPort}", topicPrefix: cluster }\n`,
            bench: B,
            label: `${layoutLabel(layout)}, directory-storm: `,
            after: cpuPerChange(users, layout, postgres),
          })),
        );
      }
    }
  } finally {
    broker.kill('SIGTERM');
    await postgres.close();
    rmSync(brokerDir, { recursive: true, force: true });
  }
  return rows;
}
