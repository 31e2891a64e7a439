import pg from 'pg';
import type { Logger } from 'pino';
import { DoorAgentError, EXIT_INVALID_CONFIG } from '../../util/errors.js';
import type { Env } from '../../util/secretFiles.js';
import { SERVICE_MIGRATIONS } from '../migrations.js';
import { postgresConnection, type DatabaseOptions } from './postgresConfig.js';
import { PostgresDb } from './postgresDb.js';
import { POSTGRES_BASELINE, POSTGRES_BASELINE_VERSION, POSTGRES_MIGRATIONS } from './postgresSchema.js';

/** The oldest PostgreSQL taken: 13 made citext a trusted extension a database's owner may create. */
const MIN_SERVER_VERSION = 130_000;
/** Held (per transaction) while the schema is created or migrated, so processes starting together do it once. */
const SCHEMA_LOCK = 0x646f_6f72; // "door"

const startError = (message: string, cause?: unknown) =>
  new DoorAgentError(message, { exitCode: EXIT_INVALID_CONFIG, ...(cause === undefined ? {} : { cause }) });

/** What an error of the first connection means to an operator. */
function connectProblem(err: unknown, location: string, user: string): DoorAgentError {
  const e = err as Error & { code?: string };
  switch (e.code) {
    case '28P01':
    case '28000':
      return startError(`PostgreSQL at ${location} refused user ${user}: ${e.message} (check server.database.passwordFile and pg_hba.conf)`, err);
    case '3D000':
      return startError(`PostgreSQL at ${location}: ${e.message} (create it with createdb, owned by ${user})`, err);
    default:
      return startError(`cannot reach PostgreSQL at ${location}: ${e.message} (check server.database.url and that the server runs)`, err);
  }
}

/** The schema version a database holds: 0 when empty; refuses one that holds other tables. */
async function schemaVersion(client: pg.ClientBase, location: string): Promise<number> {
  const present = await client.query<{ present: boolean }>("SELECT to_regclass('door_agent_schema') IS NOT NULL AS present");
  if (present.rows[0]?.present) {
    const row = (await client.query<{ version: number }>('SELECT version FROM door_agent_schema WHERE id = 1')).rows[0];
    if (row !== undefined) return Number(row.version);
  }
  const tables = await client.query<{ name: string }>(
    'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name LIMIT 5',
  );
  if (tables.rows.length > 0) {
    throw startError(
      `the database at ${location} holds tables that are not door-agent's (${tables.rows.map((r) => r.name).join(', ')}): ` +
        'give the service an empty database of its own',
    );
  }
  return 0;
}

/** Takes the schema lock for the caller's transaction (held until it ends; taken again by the same session, it stacks). */
export async function lockSchema(client: pg.ClientBase): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
}

/**
 * Brings the schema to SQLite's version (creates it in an empty database) inside the caller's transaction, under
 * the schema lock; returns the version. The caller commits or rolls back (openPostgres, or `door-agent service
 * migrate`, which copies a site into the schema in the same transaction).
 */
export async function migrateSchema(client: pg.ClientBase, location: string, logger: Logger): Promise<number> {
  const target = SERVICE_MIGRATIONS.length;
  await lockSchema(client);
  let version = await schemaVersion(client, location);
  if (version > target) {
    throw startError(`the database at ${location} has schema version ${version}, newer than this door-agent knows (${target}): upgrade door-agent`);
  }
  if (version === 0) {
    await client.query(POSTGRES_BASELINE);
    await client.query('CREATE TABLE door_agent_schema (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)');
    await client.query('INSERT INTO door_agent_schema VALUES (1, $1)', [POSTGRES_BASELINE_VERSION]);
    version = POSTGRES_BASELINE_VERSION;
    logger.info({ database: location, version }, 'created the service schema');
  }
  for (let next = version + 1; next <= target; next++) {
    const sql = POSTGRES_MIGRATIONS[next];
    if (sql === undefined) throw new DoorAgentError(`no PostgreSQL migration to schema version ${next} (a bug: migrations.ts and postgresSchema.ts disagree)`);
    await client.query(sql);
    await client.query('UPDATE door_agent_schema SET version = $1 WHERE id = 1', [next]);
    logger.info({ database: location, version: next }, 'migrated the service schema');
  }
  return target;
}

/** migrateSchema in a transaction of its own. */
async function migrate(client: pg.ClientBase, location: string, logger: Logger): Promise<number> {
  await client.query('BEGIN');
  try {
    const version = await migrateSchema(client, location, logger);
    await client.query('COMMIT');
    return version;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/**
 * One connection to the database of `connection`, checked: reachable, the password taken, the database there,
 * PostgreSQL 13 or newer. Each refusal names what and where and exits 78. The caller ends the client.
 */
export async function connectChecked(connection: pg.ClientConfig, location: string): Promise<pg.Client> {
  const client = new pg.Client({ ...connection, connectionTimeoutMillis: 10_000 });
  // A failure after connect (the server going away mid-check) surfaces through the query's own rejection.
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (err) {
    throw connectProblem(err, location, connection.user ?? '');
  }
  try {
    const version = Number((await client.query<{ v: string }>("SELECT current_setting('server_version_num') AS v")).rows[0]?.v);
    if (!(version >= MIN_SERVER_VERSION)) {
      throw startError(`PostgreSQL at ${location} is version ${Math.floor(version / 10_000)}: door-agent needs 13 or newer`);
    }
  } catch (err) {
    await client.end().catch(() => undefined);
    if (err instanceof DoorAgentError) throw err;
    throw startError(`cannot use the database at ${location}: ${(err as Error).message}`, err);
  }
  return client;
}

/**
 * Opens the service's PostgreSQL database (server.database): checks that the server is reachable, takes the
 * password, is PostgreSQL 13 or newer and holds door-agent's schema (creating it in an empty database, migrating
 * an older one). Every refusal names what and where and exits 78, before anything is written.
 */
export async function openPostgres(options: DatabaseOptions, env: Env, logger: Logger): Promise<PostgresDb> {
  const { connection, location } = postgresConnection(options, env);
  const client = await connectChecked(connection, location);
  try {
    await migrate(client, location, logger);
  } catch (err) {
    if (err instanceof DoorAgentError) throw err;
    throw startError(`cannot use the database at ${location}: ${(err as Error).message}`, err);
  } finally {
    await client.end().catch(() => undefined);
  }
  return new PostgresDb({ connection, location, maxConnections: options.maxConnections, logger });
}
