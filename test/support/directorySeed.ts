import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { expect } from 'vitest';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { ServiceMetrics } from '../../src/service/serviceMetrics.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { serveMetrics } from '../../src/util/metricsServer.js';
import { VERSION } from '../../src/version.js';
import { DOOR_UUID, SECOND_DOOR_UUID } from './cli.js';
import { sampleValue, scrape } from './prometheus.js';
import { testService } from './serviceApp.js';

const RESOURCES = [
  { resourceId: 12, uuid: DOOR_UUID, type: 'DOOR' as const, name: 'Front door' },
  { resourceId: 13, uuid: SECOND_DOOR_UUID, type: 'DOOR' as const, name: 'Back door' },
];

/**
 * `count` users (user<i>@example.org, email_id i + 1 as the database gives them), each with a card, straight into
 * the database as a bulk import would, a few hundred rows per statement.
 */
export async function seedUsers(db: SqlDb, count: number): Promise<void> {
  const ROWS = 500;
  await db.transaction(async () => {
    for (let from = 0; from < count; from += ROWS) {
      const ids = Array.from({ length: Math.min(ROWS, count - from) }, (_, k) => from + k);
      await db.run(
        `INSERT INTO users (user_id, email, first_name, last_name, username, unique_id, created) VALUES ${ids.map(() => "(?, ?, ?, 'Seeded', ?, ?, '2026-01-01 00:00:00')").join(', ')}`,
        ids.flatMap((i) => [i + 1, `user${i}@example.org`, `User${i}`, `user${i}`, randomUUID()]),
      );
      await db.run(
        `INSERT INTO smartcards (email_id, position, number, label) VALUES ${ids.map(() => "(?, 0, ?, 'badge')").join(', ')}`,
        ids.flatMap((i) => [i + 1, String(1_000_000 + i)]),
      );
    }
  });
}

/** The reference service on `db` with its metrics served on a loopback port; an ADMIN key. */
export async function serviceOn(db: SqlDb) {
  const key = await new ApiKeys(db).create('ADMIN', 0, Date.now());
  const metrics = new ServiceMetrics(VERSION);
  const app = testService(db, { resources: RESOURCES, metrics });
  await app.ready();
  const served = await serveMetrics(metrics.registry, '127.0.0.1:0', 'server.metrics.listen', pino({ level: 'silent' }));
  const call = async (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) => {
    const headers: Record<string, string> = { authorization: `Bearer ${key}` };
    if (payload !== undefined) headers['content-type'] = 'application/json';
    const res = await app.inject({ method, url, headers, payload: payload === undefined ? undefined : JSON.stringify(payload) });
    expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(200);
    return res.json() as Record<string, unknown>;
  };
  const metric = async (name: string) => sampleValue((await scrape(Number(served.address.split(':')[1]))).exposition, name);
  return { db, app, served, call, metric };
}
