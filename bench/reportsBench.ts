/**
 * `reports` (issue 55): the audit reports (docs/audit.md, "Reports") over a year of a 100-door site, on SQLite and
 * on PostgreSQL (a cluster of the benchmark's own, durable settings: bench/postgres.ts). The events are written by
 * bulk SQL as the ingest stores them (columns and body): each door each day 100 grants, 10 refusals and 10 door
 * events, 1,000 people, 10 areas of 10 doors; 365 days, 4,380,000 events. The service runs in this process
 * (buildService, listening on loopback; site zone Europe/Berlin) and each report is fetched whole as CSV over HTTP,
 * three times, the median kept. Floor: the report's events read bare, one query through the same database (no
 * grouping by day, no formatting, no HTTP): what reading them costs at all.
 */
import { get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { ApiKeys } from '../src/service/apiKeys.js';
import { openServiceSqlite } from '../src/service/database.js';
import type { ServiceResource } from '../src/service/options.js';
import { buildService } from '../src/service/server.js';
import { openPostgres } from '../src/service/sql/openPostgres.js';
import type { SqlDb, SqlValue } from '../src/service/sql/sqlDb.js';
import { systemClock } from '../src/util/clock.js';
import { startBenchPostgres } from './postgres.js';
import { type BenchRow, infoRow } from './report.js';

const B = 'reports';
const DOORS = 100;
const GRANTS = 100;
const REFUSALS = 10;
const DOOR_EVENTS = 10;
const PER_DAY = DOORS * (GRANTS + REFUSALS + DOOR_EVENTS);
const DAYS = 365;
const PEOPLE = 1000;
const YEAR_START = Date.UTC(2025, 11, 1);
const RUNS = 3;
const ZONE = 'Europe/Berlin';

const doorUuid = (door: number) => `00000000-0000-4000-8000-${String(100_000_000_000 + door)}`;
const RESOURCES: ServiceResource[] = Array.from({ length: DOORS }, (_, d) => ({ resourceId: 1000 + d, uuid: doorUuid(d), type: 'DOOR', name: `Door ${d}` }));

/**
 * One day's events in one statement of generated rows: door i % 100, slot k = i / 100 (grants, then refusals, then
 * door events), 3 s apart from 06:00 UTC; a grant's person spread over the 1,000 by a multiplier.
 */
function daySql(day: number): string {
  const start = YEAR_START + day * 86_400_000 + 6 * 3_600_000;
  return `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${PER_DAY - 1}),
    e AS (SELECT i, i % ${DOORS} AS door, i / ${DOORS} AS k, (i * 7919 + ${day * 31}) % ${PEOPLE} + 1 AS p FROM n)
    INSERT INTO audit_events (agent_id, chain_id, seq, at, door_uuid, type, person_id, person, reason, area, body, received_at)
    SELECT 'agent-' || (door / 4), 'c', ${day * PER_DAY} + i + 1, ${start} + (k * ${DOORS} + door) * 3000,
      '00000000-0000-4000-8000-' || (100000000000 + door),
      CASE WHEN k < ${GRANTS} THEN 'access_granted' WHEN k < ${GRANTS + REFUSALS} THEN 'access_denied' ELSE 'door_opened' END,
      CASE WHEN k < ${GRANTS + REFUSALS} THEN p END,
      CASE WHEN k < ${GRANTS + REFUSALS} THEN 'Person ' || p END,
      CASE WHEN k >= ${GRANTS} AND k < ${GRANTS + REFUSALS} THEN (CASE k % 3 WHEN 0 THEN 'not_authorized' WHEN 1 THEN 'outside_schedule' ELSE 'expired' END) END,
      CASE WHEN k < ${GRANTS} THEN 'area-' || (door / 10) END,
      CASE WHEN k < ${GRANTS + REFUSALS} THEN '{"kind":"card","hint":"****' || (1000 + i % 9000) || '","level":"Staff","who":"Person ' || p || '"}' ELSE '{}' END,
      ${start} + (k * ${DOORS} + door) * 3000 + 200
    FROM e`;
}

/** Writes the year of events (exported for a look at the query plans on the same data). */
async function seed(db: SqlDb, engine: string): Promise<number> {
  const started = performance.now();
  const insertAll = async () => {
    for (let day = 0; day < DAYS; day++) {
      await db.run(daySql(day));
      if (day % 73 === 72) process.stdout.write(`  ${engine}: ${day + 1} days of events written\n`);
    }
  };
  // SQLite in one transaction (one commit); PostgreSQL a commit a day, as a site's database takes them.
  if (db.engine === 'sqlite') {
    await db.transaction(insertAll);
    // The year's write-ahead log into the file now, as SQLite's checkpoints would have done it along the way: not
    // in the middle of a timed report.
    await db.all('PRAGMA wal_checkpoint(TRUNCATE)');
  } else await insertAll();
  return (DAYS * PER_DAY) / ((performance.now() - started) / 1000);
}

interface Case {
  what: string;
  path: string;
  /** The report's events read bare, in one query: its floor. */
  floor: { sql: string; params: SqlValue[] };
}

const localDay = (date: string) => Date.parse(`${date}T00:00:00+01:00`);
const MARCH = { from: '2026-03-01', to: '2026-03-31', start: localDay('2026-03-01'), end: Date.parse('2026-04-01T00:00:00+02:00') };
const YEAR = { from: '2025-12-01', to: '2026-11-30', start: localDay('2025-12-01'), end: localDay('2026-12-01') };
const GRANTED = `SELECT at, person_id, person, door_uuid, area, body FROM audit_events WHERE type = 'access_granted' AND at >= ? AND at < ?`;

const CASES: Case[] = [
  {
    what: 'passages, one person, a year',
    path: `/reports/passages?from=${YEAR.from}&to=${YEAR.to}&person=42`,
    floor: { sql: `${GRANTED} AND person_id = ? ORDER BY at`, params: [YEAR.start, YEAR.end, 42] },
  },
  {
    what: 'passages, one door, a month',
    path: `/reports/passages?from=${MARCH.from}&to=${MARCH.to}&door=${doorUuid(17)}`,
    floor: { sql: `${GRANTED} AND door_uuid = ? ORDER BY at`, params: [MARCH.start, MARCH.end, doorUuid(17)] },
  },
  {
    what: 'passages, one area (10 doors), a month',
    path: `/reports/passages?from=${MARCH.from}&to=${MARCH.to}&area=area-3`,
    floor: { sql: `${GRANTED} AND area = ? ORDER BY at`, params: [MARCH.start, MARCH.end, 'area-3'] },
  },
  {
    what: 'passages, every door, a month',
    path: `/reports/passages?from=${MARCH.from}&to=${MARCH.to}`,
    floor: { sql: `${GRANTED} ORDER BY at`, params: [MARCH.start, MARCH.end] },
  },
  {
    what: 'first-last, everyone, a month',
    path: `/reports/first-last?from=${MARCH.from}&to=${MARCH.to}`,
    floor: {
      sql: `SELECT person_id, at, door_uuid FROM audit_events WHERE type = 'access_granted' AND at >= ? AND at < ? ORDER BY person_id, at`,
      params: [MARCH.start, MARCH.end],
    },
  },
  {
    what: 'refusals by reason, a year',
    path: `/reports/refusals?from=${YEAR.from}&to=${YEAR.to}`,
    floor: {
      sql: `SELECT reason, COUNT(*) AS n FROM audit_events WHERE type = 'access_denied' AND at >= ? AND at < ? GROUP BY reason`,
      params: [YEAR.start, YEAR.end],
    },
  },
];

/**
 * GET a report's CSV on a connection of its own (a kept-alive one may be closed by the server's keepAliveTimeout
 * while a floor's synchronous SQLite query holds this process), counting its bytes and rows as they come.
 */
function fetchCsv(url: string, key: string): Promise<{ bytes: number; lines: number }> {
  return new Promise((resolve, reject) => {
    const request = get(url, { agent: false, headers: { authorization: `Bearer ${key}` } }, (response) => {
      let bytes = 0;
      let lines = 0;
      const body: Buffer[] = [];
      response.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines += 1;
        if (response.statusCode !== 200) body.push(chunk);
      });
      response.once('end', () => {
        if (response.statusCode !== 200)
          reject(new Error(`${B} benchmark: ${url} answered ${response.statusCode}: ${Buffer.concat(body).toString().slice(0, 200)}`));
        else resolve({ bytes, lines: lines - 1 });
      });
      response.once('error', reject);
    });
    request.once('error', (err) => reject(new Error(`${B} benchmark: ${url}: ${err.message}`)));
  });
}

const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function measure(db: SqlDb, label: string): Promise<BenchRow[]> {
  const rows: BenchRow[] = [infoRow(B, `${label}: bulk insert of ${(DAYS * PER_DAY).toLocaleString('en-US')} events`, await seed(db, label), 'events/s')];
  const app = buildService({ db, clock: systemClock, logger: pino({ level: 'silent' }), resources: RESOURCES, lockReplyTimeoutMs: 1000, timezone: ZONE });
  await app.listen({ host: '127.0.0.1', port: 0 });
  try {
    const key = await new ApiKeys(db).create('ADMIN', 0, Date.now());
    const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    for (const c of CASES) {
      const times: number[] = [];
      const floors: number[] = [];
      let bytes = 0;
      let lines = 0;
      for (let run = 0; run < RUNS; run++) {
        let started = performance.now();
        await db.all(c.floor.sql, c.floor.params);
        floors.push(performance.now() - started);
        started = performance.now();
        ({ bytes, lines } = await fetchCsv(`${base}${c.path}&format=csv`, key));
        times.push(performance.now() - started);
      }
      const [value, floor] = [median(times), median(floors)];
      rows.push({
        bench: B,
        metric: `${label}: ${c.what} (${lines.toLocaleString('en-US')} rows, CSV ${(bytes / 1e6).toFixed(2)} MB) p50 of ${RUNS}`,
        value,
        unit: 'ms',
        floor,
        floorLabel: 'its events read bare (one query)',
        ratio: value / floor,
        target: '',
        met: null,
      });
      if (bytes > 1e6) rows.push(infoRow(B, `${label}: ${c.what}: CSV written`, bytes / 1e6 / (value / 1000), 'MB/s'));
    }
  } finally {
    await app.close();
  }
  return rows;
}

export async function benchmarkReports(workDir: string): Promise<BenchRow[]> {
  const dir = join(workDir, 'reports');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const rows: BenchRow[] = [];
  try {
    const sqlite = openServiceSqlite(join(dir, 'service.db'));
    try {
      rows.push(...(await measure(sqlite, 'SQLite')));
    } finally {
      await sqlite.close();
    }
    rmSync(join(dir, 'service.db'), { force: true });
    const cluster = await startBenchPostgres(dir);
    try {
      const url = await cluster.createDatabase('reports');
      const postgres = await openPostgres({ url, passwordFile: cluster.passwordFile, maxConnections: 4 }, {}, pino({ level: 'silent' }));
      try {
        rows.push(...(await measure(postgres, 'PostgreSQL')));
      } finally {
        await postgres.close();
      }
    } finally {
      await cluster.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}
