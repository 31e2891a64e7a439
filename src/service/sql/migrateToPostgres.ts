import pg from 'pg';
import type { Logger } from 'pino';
import { DoorAgentError, EXIT_INVALID_CONFIG } from '../../util/errors.js';
import type { Env } from '../../util/secretFiles.js';
import { MigrationSource, TAGS_DIGEST_SQL, TRIGGER_FED, type DirectoryState, type SourceTable } from './migrateSource.js';
import { connectChecked, lockSchema, migrateSchema } from './openPostgres.js';
import { postgresConnection, type DatabaseOptions } from './postgresConfig.js';
import type { SqlValue } from './sqlDb.js';

/** PostgreSQL takes at most 65,535 parameters in one statement: a batch of rows stays under it, and under MAX_BATCH_ROWS. */
const MAX_PARAMETERS = 65_535;
const MAX_BATCH_ROWS = 1000;
/** How many of a non-empty target's tables the refusal names. */
const TABLES_NAMED = 10;

/** What `door-agent service migrate` copied, as it printed it. */
export interface MigrationReport {
  source: string;
  target: string;
  tables: Array<{ name: string; rows: number }>;
  rows: number;
  directory: DirectoryState;
}

/** The target's settings as server.database holds them (no pool: the copy is one connection). */
type MigrationTarget = Pick<DatabaseOptions, 'url' | 'passwordFile' | 'caFile'>;

const quote = (name: string) => pg.escapeIdentifier(name);

/** The copy failed or did not match: everything was rolled back (exit 1). */
const failure = (message: string, location: string, cause?: unknown) =>
  new DoorAgentError(`${message}; nothing was written to ${location} (rolled back)`, cause === undefined ? {} : { cause });

/**
 * Copies the service's SQLite database `sourceFile` into the empty PostgreSQL database `target`, in ONE
 * transaction: the schema, every table, the identities past the copied ids, then a check that every table's row
 * count, the directory's revision, its history id and its tags are the source's. Any refusal (exit 78: the source
 * missing or of another schema version, the target unreachable, refusing the password, too old or not empty) or
 * failure (exit 1: a row PostgreSQL refuses, a mismatch) leaves the target as it was. The source is read only.
 */
export async function migrateToPostgres(sourceFile: string, target: MigrationTarget, env: Env, logger: Logger): Promise<MigrationReport> {
  const { connection, location } = postgresConnection(Object.assign({ maxConnections: 1 }, target), env);
  const source = MigrationSource.open(sourceFile);
  try {
    const client = await connectChecked(connection, location);
    try {
      await client.query('BEGIN');
      try {
        const report = await copy(source, client, location, logger);
        await client.query('COMMIT');
        return report;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        if (err instanceof DoorAgentError) throw err;
        throw failure(`the copy into ${location} failed: ${(err as Error).message}`, location, err);
      }
    } finally {
      await client.end().catch(() => undefined);
    }
  } finally {
    source.close();
  }
}

/** The tables of the target's schema (the one the service's tables go to). */
async function tableNames(client: pg.ClientBase): Promise<string[]> {
  const rows = await client.query<{ name: string }>(
    'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name',
  );
  return rows.rows.map((r) => r.name);
}

async function copy(source: MigrationSource, client: pg.ClientBase, location: string, logger: Logger): Promise<MigrationReport> {
  // Under the schema lock, so a service process starting on the target meanwhile waits for the copy, then finds it.
  await lockSchema(client);
  const present = await tableNames(client);
  if (present.length > 0) {
    const named = present.slice(0, TABLES_NAMED).join(', ') + (present.length > TABLES_NAMED ? ` and ${present.length - TABLES_NAMED} more` : '');
    throw new DoorAgentError(
      `the database at ${location} is not empty: it holds ${present.length === 1 ? 'the table' : 'the tables'} ${named}. ` +
        'Migrate into an empty database (createdb --owner USER NAME); nothing was written',
      { exitCode: EXIT_INVALID_CONFIG },
    );
  }
  await migrateSchema(client, location, logger);
  const tables = source.tables();
  const created = new Set(await tableNames(client));
  const unknown = tables.filter((t) => !created.has(t.name)).map((t) => t.name);
  if (unknown.length > 0) {
    throw failure(`the PostgreSQL schema has no table ${unknown.join(', ')} of the source (a bug: migrations.ts and postgresSchema.ts disagree)`, location);
  }
  // What creating the schema wrote (directory_history's first row) gives way to the source's rows.
  await client.query(`TRUNCATE ${tables.map((t) => quote(t.name)).join(', ')}`);
  const copied: MigrationReport['tables'] = [];
  for (const table of tables) {
    // The triggers filled it while the tables it watches were copied: the source's own rows replace theirs.
    if (TRIGGER_FED.includes(table.name)) await client.query(`DELETE FROM ${quote(table.name)}`);
    copied.push({ name: table.name, rows: await copyTable(source, table, client, location) });
  }
  await advanceIdentities(client);
  const directory = source.directory();
  await verify(source, copied, directory, client, location);
  // The planner's statistics of the copied tables, committed with them: without them (until autovacuum gets to
  // it) a change at 250,000 users scanned every card, 15 times its cost (bench/HISTORY.md, "Service cluster").
  await client.query(`ANALYZE ${tables.map((t) => quote(t.name)).join(', ')}`);
  return { source: source.file, target: location, tables: copied, rows: copied.reduce((sum, t) => sum + t.rows, 0), directory };
}

/** One table, in batches of multi-row INSERTs with parameters, columns by name; the number of rows copied. */
async function copyTable(source: MigrationSource, table: SourceTable, client: pg.ClientBase, location: string): Promise<number> {
  const width = table.columns.length;
  const batchRows = Math.max(1, Math.min(MAX_BATCH_ROWS, Math.floor(MAX_PARAMETERS / width)));
  const head = `INSERT INTO ${quote(table.name)} (${table.columns.map(quote).join(', ')}) VALUES `;
  const statement = (rows: number) =>
    head + Array.from({ length: rows }, (_, r) => `(${Array.from({ length: width }, (_, c) => `$${r * width + c + 1}`).join(', ')})`).join(', ');
  const full = statement(batchRows);
  let copied = 0;
  let batch: SqlValue[] = [];
  const flush = async () => {
    const rows = batch.length / width;
    if (rows === 0) return;
    try {
      await client.query(rows === batchRows ? full : statement(rows), batch);
    } catch (err) {
      throw failure(`copying table ${table.name} into ${location} failed: ${(err as Error).message}`, location, err);
    }
    copied += rows;
    batch = [];
  };
  for (const row of source.rows(table)) {
    batch.push(...row);
    if (batch.length === batchRows * width) await flush();
  }
  await flush();
  return copied;
}

/** Each identity column's sequence set to the highest id copied, so the next id PostgreSQL gives is a new one. */
async function advanceIdentities(client: pg.ClientBase): Promise<void> {
  const identities = await client.query<{ table_name: string; column_name: string }>(
    "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() AND is_identity = 'YES' ORDER BY table_name",
  );
  for (const { table_name: table, column_name: column } of identities.rows) {
    await client.query(
      `SELECT setval(pg_get_serial_sequence($1, $2), highest) FROM (SELECT max(${quote(column)}) AS highest FROM ${quote(table)}) AS copied WHERE highest IS NOT NULL`,
      [quote(table), column],
    );
  }
}

/** Inside the transaction: every table's row count, the revision, the history id and the tags as the source's. */
async function verify(
  source: MigrationSource,
  copied: MigrationReport['tables'],
  directory: DirectoryState,
  client: pg.ClientBase,
  location: string,
): Promise<void> {
  const one = async (sql: string) => (await client.query(sql)).rows[0] as Record<string, unknown> | undefined;
  for (const table of copied) {
    const held = Number((await one(`SELECT count(*) AS n FROM ${quote(table.name)}`))?.n);
    const expected = source.count(table.name);
    if (held !== expected || table.rows !== expected) {
      throw failure(`table ${table.name} does not match: ${expected} rows in the source, ${held} in ${location}`, location);
    }
  }
  const revision = await one('SELECT revision, at FROM directory_revision WHERE id = 1');
  if (String(revision?.revision ?? 0) !== String(directory.revision) || (revision?.at ?? null) !== directory.at) {
    throw failure(
      `table directory_revision does not match: revision ${directory.revision} in the source, ${String(revision?.revision)} in ${location}`,
      location,
    );
  }
  const history = await one('SELECT history, renewed_at, reason, restore_pending_since FROM directory_history WHERE id = 1');
  if (
    history?.history !== directory.history ||
    history.renewed_at !== directory.renewedAt ||
    history.reason !== directory.reason ||
    history.restore_pending_since !== directory.restorePendingSince
  ) {
    throw failure(`table directory_history does not match: history ${directory.history} in the source, ${String(history?.history)} in ${location}`, location);
  }
  const tags = await one(TAGS_DIGEST_SQL);
  if ((tags?.digest ?? null) !== directory.tagsDigest) {
    throw failure(`table directory_tags does not match: the revisions' tags in ${location} are not the source's`, location);
  }
}
