import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVICE_MIGRATIONS } from '../../src/service/migrations.js';
import { openPostgres } from '../../src/service/sql/openPostgres.js';
import type { DatabaseOptions } from '../../src/service/sql/postgresConfig.js';
import { POSTGRES_BASELINE_VERSION, POSTGRES_MIGRATIONS } from '../../src/service/sql/postgresSchema.js';
import { PostgresChangeFeed, type ChangeTopic } from '../../src/service/sql/changeFeed.js';
import { AdvisoryLockLeadership } from '../../src/service/sql/leadership.js';
import { DatabaseUnavailable } from '../../src/service/sql/unavailable.js';
import { waitUntil } from '../support/wait.js';
import { freePort } from '../support/net.js';
import { startPostgres, type PostgresCluster } from '../support/postgres.js';

const logger = pino({ level: 'silent' });
let cluster: PostgresCluster;

beforeAll(async () => {
  cluster = await startPostgres();
}, 60_000);
afterAll(async () => {
  await cluster?.close();
});

const options = (url: string, extra: Partial<DatabaseOptions> = {}): DatabaseOptions => ({
  url,
  passwordFile: cluster.passwordFile,
  maxConnections: 5,
  ...extra,
});

/** The exit code and message of a refused start. */
async function refusal(work: Promise<unknown>): Promise<{ exitCode: number; message: string }> {
  try {
    await work;
  } catch (err) {
    return { exitCode: (err as { exitCode: number }).exitCode, message: (err as Error).message };
  }
  throw new Error('expected a refusal');
}

describe('the service database on PostgreSQL', () => {
  it('every SQLite migration after the baseline has its PostgreSQL twin', () => {
    for (let version = POSTGRES_BASELINE_VERSION + 1; version <= SERVICE_MIGRATIONS.length; version++) {
      expect(POSTGRES_MIGRATIONS[version], `PostgreSQL migration to version ${version}`).toBeTypeOf('string');
    }
  });

  it('creates the schema in an empty database, once, when three processes open it at the same time', async () => {
    const url = await cluster.createDatabase('fresh');
    const dbs = await Promise.all([1, 2, 3].map(() => openPostgres(options(url), {}, logger)));
    try {
      expect(await dbs[0]!.value('SELECT version FROM door_agent_schema')).toBe(SERVICE_MIGRATIONS.length);
      expect(await dbs[1]!.value('SELECT count(*) FROM directory_history')).toBe(1);
    } finally {
      await Promise.all(dbs.map((db) => db.close()));
    }
  });

  it('loses no update when two transactions change the same row at once (SERIALIZABLE, run again)', async () => {
    const url = await cluster.createDatabase('races');
    const a = await openPostgres(options(url), {}, logger);
    const b = await openPostgres(options(url), {}, logger);
    try {
      await a.run("INSERT INTO retained_issued_at (subject, issued_at) VALUES ('counter', 0)");
      const bump = (db: typeof a) =>
        db.transaction(async () => {
          const n = (await db.value<number>("SELECT issued_at FROM retained_issued_at WHERE subject = 'counter'"))!;
          await new Promise((resolve) => setTimeout(resolve, 5));
          await db.run("UPDATE retained_issued_at SET issued_at = ? WHERE subject = 'counter'", [n + 1]);
        });
      await Promise.all(Array.from({ length: 20 }, (_, i) => bump(i % 2 === 0 ? a : b)));
      expect(await a.value("SELECT issued_at FROM retained_issued_at WHERE subject = 'counter'")).toBe(20);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('refuses what it cannot use, naming what and where, exit 78', async () => {
    const bad = (r: { exitCode: number; message: string }, text: RegExp) => {
      expect(r.exitCode).toBe(78);
      expect(r.message).toMatch(text);
    };
    bad(await refusal(openPostgres(options('not a url'), {}, logger)), /server\.database: url "not a url" is not a URL/);
    bad(
      await refusal(openPostgres(options(`postgres://door:pw@127.0.0.1:${cluster.port}/x`), {}, logger)),
      /holds a password: put it in server\.database\.passwordFile/,
    );
    const wrong = join(cluster.dir, 'wrong-password');
    writeFileSync(wrong, 'nope\n', { mode: 0o600 });
    bad(await refusal(openPostgres(options(cluster.url('postgres'), { passwordFile: wrong }), {}, logger)), /refused user door/);
    const closed = await freePort();
    bad(
      await refusal(openPostgres(options(`postgres://door@127.0.0.1:${closed}/x`), {}, logger)),
      new RegExp(`cannot reach PostgreSQL at postgres://door@127\\.0\\.0\\.1:${closed}/x`),
    );
    bad(await refusal(openPostgres(options(cluster.url('no_such_db')), {}, logger)), /no_such_db.*createdb/);
    bad(await refusal(openPostgres(options(`${cluster.url('postgres')}?sslmode=allow`), {}, logger)), /sslmode=allow is not one of/);
    // A database of another application: nothing written into it.
    const other = await cluster.createDatabase('other_app');
    const c = await cluster.client('other_app');
    await c.query('CREATE TABLE invoices (id int)');
    bad(await refusal(openPostgres(options(other), {}, logger)), /holds tables that are not door-agent's \(invoices\)/);
    expect((await c.query("SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'")).rows[0].n).toBe(1);
    // A database of a newer door-agent.
    const newer = await cluster.createDatabase('newer');
    const db = await openPostgres(options(newer), {}, logger);
    await db.run('UPDATE door_agent_schema SET version = 999');
    await db.close();
    bad(await refusal(openPostgres(options(newer), {}, logger)), /schema version 999, newer than this door-agent knows.*upgrade door-agent/);
    await c.end();
  });

  it('answers DatabaseUnavailable while PostgreSQL is stopped, and works again once it is back', async () => {
    const url = await cluster.createDatabase('outage');
    const db = await openPostgres(options(url), {}, logger);
    try {
      expect(await db.value('SELECT 1')).toBe(1);
      await cluster.stop();
      await expect(db.value('SELECT 1')).rejects.toBeInstanceOf(DatabaseUnavailable);
      await expect(db.transaction(async () => db.value('SELECT 1'))).rejects.toBeInstanceOf(DatabaseUnavailable);
      await cluster.start();
      expect(await db.value('SELECT 1')).toBe(1);
    } finally {
      await db.close();
    }
  }, 60_000);

  it('tells every process of a change when its transaction commits, never when it rolls back', async () => {
    const url = await cluster.createDatabase('feeds');
    const a = await openPostgres(options(url), {}, logger);
    const b = await openPostgres(options(url), {}, logger);
    const feedA = new PostgresChangeFeed(a, a.connection, logger);
    const feedB = new PostgresChangeFeed(b, b.connection, logger);
    await feedA.start();
    await feedB.start();
    const heard: ChangeTopic[] = [];
    feedB.subscribe((topic) => heard.push(topic));
    try {
      await a.transaction(async () => {
        await feedA.notify('revision');
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(heard).toEqual([]); // not before the commit
      });
      await waitUntil(() => heard.length === 1, 5000, 'the first change heard');
      await a
        .transaction(async () => {
          await feedA.notify('publish');
          throw new Error('rolled back');
        })
        .catch(() => undefined);
      await feedA.notify('publish');
      await waitUntil(() => heard.length === 2, 5000, 'the second change heard');
      expect(heard).toEqual(['revision', 'publish']);
    } finally {
      await feedA.close();
      await feedB.close();
      await a.close();
      await b.close();
    }
  });

  it('has one publisher among three processes, and another within 5 s once it is gone', async () => {
    const url = await cluster.createDatabase('leaders');
    const db = await openPostgres(options(url), {}, logger);
    const all = [1, 2, 3].map(() => new AdvisoryLockLeadership(db.connection, logger, 200));
    try {
      await Promise.all(all.map((l) => l.start()));
      await waitUntil(() => all.some((l) => l.leading), 5000, 'a publisher');
      expect(all.filter((l) => l.leading)).toHaveLength(1);
      const first = all.find((l) => l.leading)!;
      await first.close();
      const rest = all.filter((l) => l !== first);
      await waitUntil(() => rest.some((l) => l.leading), 5000, 'another publisher');
      expect(rest.filter((l) => l.leading)).toHaveLength(1);
    } finally {
      await Promise.all(all.map((l) => l.close()));
      await db.close();
    }
  });
});
