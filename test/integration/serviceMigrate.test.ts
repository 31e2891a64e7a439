import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVICE_MIGRATIONS } from '../../src/service/migrations.js';
import { DOOR_UUID, runCli, tempDir } from '../support/cli.js';
import { Mosquitto } from '../support/mosquitto.js';
import { freePort } from '../support/net.js';
import { PG_PASSWORD, startPostgres, type PostgresCluster } from '../support/postgres.js';
import { startServiceProcess } from '../support/serviceProcess.js';
import { waitUntil } from '../support/wait.js';

// Moving a site (issue 52 item 6): `door-agent service migrate --to URL`, the built CLI as an operator runs it,
// from a service.db a real service process made through its HTTP API into a real PostgreSQL.

const tmp = tempDir('door-agent-migrate-');
let cluster: PostgresCluster;
let broker: Mosquitto;
let config: string;
let source: string;
/** service.db's bytes and mtime once the service stopped: nothing may change them. */
let untouched: { sha256: string; mtimeMs: number };

function writeServiceConfig(name: string, dataDir: string, port = 0): string {
  const dir = join(tmp.path, name);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'config.yaml');
  writeFileSync(
    path,
    `server:
  listen: 127.0.0.1:${port}
  dataDir: ${dataDir}
  resources:
    - { resourceId: 12, uuid: ${DOOR_UUID}, type: DOOR, name: Front door }
mqtt: { url: "${broker.url}", topicPrefix: mig, keepaliveSeconds: 5, homeAssistant: { discovery: false } }
`,
  );
  return path;
}

const fingerprint = (file: string) => ({ sha256: createHash('sha256').update(readFileSync(file)).digest('hex'), mtimeMs: statSync(file).mtimeMs });

/** The directory version a door holds after syncing from this service.db: what the move must carry over. */
function sourceVersion(file: string): { revision: number; history: string; tag: string | null } {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const revision = (db.prepare('SELECT revision FROM directory_revision WHERE id = 1').pluck().get() as number | undefined) ?? 0;
    return {
      revision,
      history: db.prepare('SELECT history FROM directory_history WHERE id = 1').pluck().get() as string,
      tag: (db.prepare('SELECT tag FROM directory_tags WHERE revision = ?').pluck().get(revision) as string | undefined) ?? null,
    };
  } finally {
    db.close();
  }
}

/** The same, as the PostgreSQL database holds it. */
async function targetVersion(client: pg.Client): Promise<{ revision: number; history: string; tag: string | null }> {
  const revision = Number((await client.query('SELECT revision FROM directory_revision WHERE id = 1')).rows[0]?.revision ?? 0);
  return {
    revision,
    history: (await client.query('SELECT history FROM directory_history WHERE id = 1')).rows[0].history as string,
    tag: ((await client.query('SELECT tag FROM directory_tags WHERE revision = $1', [revision])).rows[0]?.tag as string | undefined) ?? null,
  };
}

/** Every table of service.db (SQLite's own left out) with its row count. */
function sourceCounts(file: string): Record<string, number> {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const names = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").pluck().all() as string[];
    return Object.fromEntries(names.map((n) => [n, db.prepare(`SELECT count(*) FROM "${n}"`).pluck().get() as number]));
  } finally {
    db.close();
  }
}

async function withTarget<T>(database: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = await cluster.client(database);
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

const tablesOf = (database: string) =>
  withTarget(database, async (c) =>
    (await c.query<{ name: string }>("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1")).rows.map(
      (r) => r.name,
    ),
  );

const migrate = (to: string, options: { config?: string; args?: string[]; env?: Record<string, string> } = {}) =>
  runCli(['service', 'migrate', '--to', to, ...(options.args ?? ['--password-file', cluster.passwordFile]), '--config', options.config ?? config], {
    ...(options.env ? { env: options.env } : {}),
  });

beforeAll(async () => {
  cluster = await startPostgres();
  broker = new Mosquitto(join(tmp.path, 'broker'));
  await broker.start();
  const dataDir = join(tmp.path, 'site', 'data');
  source = join(dataDir, 'service.db');
  const port = await freePort();
  config = writeServiceConfig('site', dataDir, port);
  const created = runCli(['service', 'key', 'create', '--rank', 'ADMIN', '--config', config]);
  expect(created.status, created.stderr).toBe(0);
  const key = created.stdout.trim();
  const service = await startServiceProcess(config, { captureStderr: true });
  try {
    const call = async (method: string, path: string, body?: Record<string, unknown>) => {
      const answer = await fetch(`http://127.0.0.1:${port}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const json = (await answer.json()) as Record<string, unknown>;
      expect(answer.status, `${method} ${path}: ${JSON.stringify(json)}`).toBe(200);
      return json;
    };
    const revision = async () => (await call('GET', '/directory')).revision as number;
    /** A change, then its revision issued (changes within 200 ms would share one). */
    const change = async (method: string, path: string, body: Record<string, unknown>) => {
      const before = await revision();
      const answer = await call(method, path, body);
      await waitUntil(async () => (await revision()) > before, 10_000, `the revision after ${method} ${path}`);
      return answer;
    };
    const invited = await change('POST', '/invites', {
      emails: ['ada@example.org', 'bob@example.org', 'cy@example.org', 'dee@example.org'],
      smartcards: [[{ number: '4213578', label: 'badge' }], [{ number: '4213579', label: 'badge' }], [{ number: '1234', label: 'PIN' }], []],
      no_email: true,
    });
    const [ada, bob, cy, dee] = invited.add_ids as number[];
    await change('PUT', '/modifysmartcard', { email_id: dee, smartcards: [{ number: '4213580', label: 'badge', valid_until: '2030-01-01 00:00:00' }] });
    const group = (await change('POST', '/groups', { type: 'users', name: 'Staff', add_ids: [ada, bob] })).group_id as number;
    await change('PUT', '/groups', { type: 'users', group_id: group, add_ids: [cy] });
    await change('POST', '/policies', { name: 'Night shift', email_ids: [bob], resource_ids: [12], schedule: { mon: ['22:00-06:00'] } });
    await change('POST', '/magiclinkadmin', { email_list: ['visitor@example.org'], resource_id_list: [12], name: 'Visitor', send_email: false });
    await call('POST', '/lockdown', { uuid: DOOR_UUID, active: true, reason: 'drill' });
    await change('PUT', '/togglesuspension', { email_id: cy });
    await change('DELETE', '/user', { email_id: dee });
  } finally {
    await service.stop();
  }
  untouched = fingerprint(source);
}, 120_000);

afterAll(async () => {
  await cluster?.close();
  await broker?.stop();
  tmp.cleanup();
});

describe('door-agent service migrate', () => {
  it('copies the site into an empty PostgreSQL database: every row, the revision, its history and tag; ids go on after the copied ones', async () => {
    const url = await cluster.createDatabase('moved');
    const result = migrate(url);
    expect(result.status, result.stderr).toBe(0);
    const version = sourceVersion(source);
    expect(version.revision).toBeGreaterThan(1);
    expect(result.stdout).toContain(`directory revision ${version.revision} (tag ${version.tag})`);
    expect(result.stdout).toContain(`history ${version.history}`);
    expect(result.stdout).toMatch(/next: set server\.database\.url to postgres:.*service-history\.json stays in server\.dataDir/);

    const counts = sourceCounts(source);
    expect(counts.users).toBe(5); // four invited (one since removed, kept as a record), one guest
    expect(counts.lockdowns).toBe(1);
    expect(counts.policy_levels).toBe(1);
    await withTarget('moved', async (c) => {
      for (const [table, rows] of Object.entries(counts)) {
        expect(Number((await c.query(`SELECT count(*) AS n FROM "${table}"`)).rows[0].n), table).toBe(rows);
      }
      expect(await targetVersion(c)).toEqual(version);
      const tags = (await c.query('SELECT revision::int AS revision, tag FROM directory_tags ORDER BY revision')).rows;
      const db = new Database(source, { readonly: true });
      expect(tags).toEqual(db.prepare('SELECT revision, tag FROM directory_tags ORDER BY revision').all());
      const users = db.prepare('SELECT email_id, email, suspended, removed_at FROM users ORDER BY email_id').all();
      const cards = db.prepare('SELECT email_id, position, number, label, valid_until FROM smartcards ORDER BY email_id, position').all();
      const pending = db.prepare('SELECT email_id FROM directory_pending ORDER BY email_id').pluck().all();
      db.close();
      expect((await c.query('SELECT email_id::int AS email_id, email::text AS email, suspended, removed_at FROM users ORDER BY email_id')).rows).toEqual(users);
      expect((await c.query('SELECT email_id::int AS email_id, position, number, label, valid_until FROM smartcards ORDER BY 1, 2')).rows).toEqual(cards);
      // The triggers' rows made while copying are gone: directory_pending is the source's.
      expect((await c.query('SELECT email_id::int AS e FROM directory_pending ORDER BY 1')).rows.map((r) => r.e)).toEqual(pending);
      // Every identity goes on past the copied ids: a user or group made after the move gets a new id.
      const identities = (await c.query("SELECT table_name, column_name FROM information_schema.columns WHERE is_identity = 'YES'")).rows;
      expect(identities.map((r) => r.table_name)).toContain('users');
      for (const { table_name: table, column_name: column } of identities) {
        const highest = Number((await c.query(`SELECT coalesce(max("${column}"), 0) AS m FROM "${table}"`)).rows[0].m);
        const next = Number((await c.query('SELECT nextval(pg_get_serial_sequence($1, $2)) AS n', [table, column])).rows[0].n);
        expect(next, `${table}.${column}`).toBeGreaterThan(highest);
      }
      expect(Number((await c.query('SELECT version FROM door_agent_schema')).rows[0].version)).toBe(SERVICE_MIGRATIONS.length);
    });
  });

  it('refuses a second move into the now non-empty database, naming its tables, and changes nothing there', async () => {
    const snapshot = () => withTarget('moved', async (c) => (await c.query('SELECT count(*)::int AS n, max(email_id)::int AS m FROM users')).rows[0]);
    const before = await snapshot();
    const result = migrate(cluster.url('moved'));
    expect(result.status).toBe(78);
    expect(result.stderr).toMatch(
      /the database at postgres:\/\/door@127\.0\.0\.1:\d+\/moved is not empty: it holds the tables api_keys, audit_chains, audit_events, audit_exports, computer_usernames, .* and \d+ more\. Migrate into an empty database/,
    );
    expect(await snapshot()).toEqual(before);
    expect(await tablesOf('moved')).toContain('door_agent_schema');
  });

  it('refuses a source of another schema version, a missing or running source, a refused password, a bad URL, an unreachable server: exit 78, nothing written', async () => {
    const url = await cluster.createDatabase('refusals');
    const refused = (result: { status: number; stderr: string }, text: RegExp) => {
      expect(result.status, result.stderr).toBe(78);
      expect(result.stderr).toMatch(text);
    };
    const current = SERVICE_MIGRATIONS.length;
    for (const version of [current - 1, current + 1]) {
      const dataDir = join(tmp.path, `v${version}`, 'data');
      mkdirSync(dataDir, { recursive: true });
      copyFileSync(source, join(dataDir, 'service.db'));
      const db = new Database(join(dataDir, 'service.db'));
      db.pragma(`user_version = ${version}`);
      db.close();
      refused(
        migrate(url, { config: writeServiceConfig(`v${version}`, dataDir) }),
        version < current
          ? new RegExp(`schema version ${version}, older .*start the service once on it`)
          : /newer than this door-agent knows.*upgrade door-agent/,
      );
    }
    refused(
      migrate(url, { config: writeServiceConfig('empty', join(tmp.path, 'empty', 'data')) }),
      /there is no service database at .*empty\/data\/service\.db/,
    );
    // A service still running on its database (a writer holding it open, its write-ahead log not yet folded back).
    const running = join(tmp.path, 'running', 'data');
    mkdirSync(running, { recursive: true });
    copyFileSync(source, join(running, 'service.db'));
    const writer = new Database(join(running, 'service.db'));
    writer.prepare("INSERT INTO retained_issued_at (subject, issued_at) VALUES ('migrate-test', 1)").run();
    try {
      refused(
        migrate(url, { config: writeServiceConfig('running', running) }),
        /service\.db-wal holds \d+ bytes: the service is running on .*running\/data\/service\.db/,
      );
    } finally {
      writer.close();
    }
    const wrong = join(tmp.path, 'wrong-password');
    writeFileSync(wrong, 'not-the-password\n', { mode: 0o600 });
    refused(migrate(url, { args: ['--password-file', wrong] }), /PostgreSQL at postgres:\/\/door@127\.0\.0\.1:\d+\/refusals refused user door/);
    refused(migrate(url, { args: [], env: { DOOR_AGENT_DATABASE_PASSWORD: 'not-the-password' } }), /refused user door/);
    refused(migrate(`postgres://door:${PG_PASSWORD}@127.0.0.1:${cluster.port}/refusals`), /the url holds a password/);
    const closed = await freePort();
    refused(
      migrate(`postgres://door@127.0.0.1:${closed}/refusals`),
      new RegExp(`cannot reach PostgreSQL at postgres://door@127\\.0\\.0\\.1:${closed}/refusals`),
    );
    refused(migrate(cluster.url('no_such_db')), /no_such_db.*createdb/);
    // Another application's database.
    await withTarget('refusals', (c) => c.query('CREATE TABLE invoices (id int)'));
    refused(migrate(url), /refusals is not empty: it holds the table invoices/);
    expect(await tablesOf('refusals')).toEqual(['invoices']);
  });

  it('rolls everything back when PostgreSQL refuses a row: the target is left without a table', async () => {
    const url = await cluster.createDatabase('half');
    const dataDir = join(tmp.path, 'nul', 'data');
    mkdirSync(dataDir, { recursive: true });
    copyFileSync(source, join(dataDir, 'service.db'));
    const db = new Database(join(dataDir, 'service.db'));
    // A NUL character: SQLite keeps it in a TEXT, PostgreSQL takes none.
    db.prepare('UPDATE users SET last_name = ? WHERE email_id = (SELECT max(email_id) FROM users)').run('Nu\u0000ll');
    db.close();
    const result = migrate(url, { config: writeServiceConfig('nul', dataDir) });
    expect(result.status, result.stderr).toBe(1);
    expect(result.stderr).toMatch(/copying table users into postgres:\/\/door@127\.0\.0\.1:\d+\/half failed: .*nothing was written to .*\(rolled back\)/);
    expect(await tablesOf('half')).toEqual([]);
  });

  it('takes the password from DOOR_AGENT_DATABASE_PASSWORD too', async () => {
    const url = await cluster.createDatabase('from_env');
    const result = migrate(url, { args: [], env: { DOOR_AGENT_DATABASE_PASSWORD: PG_PASSWORD } });
    expect(result.status, result.stderr).toBe(0);
    expect(await withTarget('from_env', (c) => targetVersion(c))).toEqual(sourceVersion(source));
  });

  it('never wrote to the source: service.db has the bytes and mtime it had when the service stopped', () => {
    expect(fingerprint(source)).toEqual(untouched);
  });
});
