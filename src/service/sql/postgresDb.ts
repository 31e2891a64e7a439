import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';
import type { Logger } from 'pino';
import { numberPlaceholders } from './placeholders.js';
import type { SqlDb, SqlValue } from './sqlDb.js';
import { DatabaseUnavailable, classifyDatabaseError } from './unavailable.js';

/**
 * A transaction that lost a serialization race, or a deadlock, runs again after a random wait below a ceiling that
 * doubles from RETRY_MIN_MS to RETRY_MAX_MS, for up to RETRY_BUDGET_MS in all. Every change moves the one directory
 * revision, so changes made at once at several processes run one after the other, each losing to those before it
 * (21 at once at three processes, each with 8 runs 20 ms apart, answered 500s: test/integration/serviceCluster.test.ts).
 * Past the budget it is a DatabaseUnavailable: a 503 with Retry-After, nothing applied.
 */
const RETRY_MIN_MS = 5;
const RETRY_MAX_MS = 500;
const RETRY_BUDGET_MS = 20_000;
const RETRY_STATES = new Set(['40001', '40P01']);

/**
 * Integers as numbers: the schema's BIGINT columns hold milliseconds and counts, far below 2^53; count(*) is a
 * BIGINT too. Set on this pool's clients only, never on pg's global parser.
 */
const TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === pg.types.builtins.INT8) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
};

/**
 * A text run this often is prepared by name on each connection; at most MAX_NAMED texts are (a text built for a
 * number of rows, say, can take many forms: those past the bound are parsed at each use, as every text first is).
 */
const NAME_AFTER_USES = 3;
const MAX_NAMED = 200;

interface StatementText {
  numbered: string;
  name: string | undefined;
  uses: number;
}

export interface PostgresPoolOptions {
  /** Connection settings (host, port, database, user, password, ssl) from the service config (postgresConfig.ts). */
  connection: pg.PoolConfig;
  /** The URL without its password, for messages. */
  location: string;
  /** Connections this process keeps at most (server.database.maxConnections). */
  maxConnections: number;
  logger: Logger;
}

/**
 * The service's PostgreSQL database behind SqlDb (pg's Pool). A transaction runs on one pooled client at
 * SERIALIZABLE, again after a serialization failure, so two processes changing the same user never lose an
 * update: the second one sees the first's result or fails and runs again on it. A database out of reach is a
 * DatabaseUnavailable (a 503 with Retry-After at the API).
 */
export class PostgresDb implements SqlDb {
  readonly engine = 'postgres' as const;
  readonly inJsonIds = 'IN (SELECT value::bigint FROM json_array_elements_text(?::json))';
  readonly inJsonTexts = 'IN (SELECT value FROM json_array_elements_text(?::json))';
  readonly jsonIdRows = '(SELECT value::bigint AS value FROM json_array_elements_text(?::json)) AS ids';
  readonly location: string;
  /** The settings of its connections, for the ones a process keeps apart (LISTEN, the publisher's lock). */
  readonly connection: pg.ClientConfig;
  private readonly pool: pg.Pool;
  private readonly clients = new AsyncLocalStorage<{ client: pg.PoolClient; effects: Array<() => void> }>();
  private readonly texts = new Map<string, StatementText>();
  private named = 0;
  /** Settles when this process's transaction run again (after a lost race) has ended: the next one starts then. */
  private retrying: Promise<void> = Promise.resolve();

  constructor(options: PostgresPoolOptions) {
    this.location = options.location;
    this.connection = options.connection;
    this.pool = new pg.Pool({
      ...options.connection,
      max: options.maxConnections,
      connectionTimeoutMillis: 5000,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      types: TYPES,
      application_name: 'door-agent-service',
    });
    // An idle client whose server went away: said, not thrown (an unhandled 'error' would end the process).
    this.pool.on('error', (err) => options.logger.warn({ err: { message: err.message } }, `an idle connection to ${this.location} failed`));
  }

  inTransaction(): boolean {
    return this.clients.getStore() !== undefined;
  }

  afterCommit(effect: () => void): void {
    const open = this.clients.getStore();
    if (open === undefined) effect();
    else open.effects.push(effect);
  }

  /**
   * The text with PostgreSQL's numbered parameters, worked out once per text; from its NAME_AFTER_USES-th use on, a
   * name, so each connection parses and plans it once (a door's key check and directory plan, 1,000 of each when
   * every door fetches a change, cost PostgreSQL about half as much as when each was parsed again).
   */
  private text(sql: string): StatementText {
    let text = this.texts.get(sql);
    if (text === undefined) {
      text = { numbered: numberPlaceholders(sql), name: undefined, uses: 0 };
      this.texts.set(sql, text);
    }
    if (text.name === undefined && ++text.uses >= NAME_AFTER_USES && this.named < MAX_NAMED) text.name = `door_agent_${++this.named}`;
    return text;
  }

  private async query(sql: string, params: readonly SqlValue[] | undefined, rowMode?: 'array'): Promise<pg.QueryResult> {
    const { numbered, name } = this.text(sql);
    const config: pg.QueryConfig = { text: numbered, values: (params ?? []) as unknown[], ...(name ? { name } : {}) };
    const query = rowMode === 'array' ? Object.assign(config, { rowMode }) : config;
    try {
      const client = this.clients.getStore()?.client;
      return await (client ?? this.pool).query(query);
    } catch (err) {
      throw classifyDatabaseError(err, this.location);
    }
  }

  async all<T>(text: string, params?: readonly SqlValue[]): Promise<T[]> {
    return (await this.query(text, params)).rows as T[];
  }

  async get<T>(text: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    return (await this.query(text, params)).rows[0] as T | undefined;
  }

  async column<T>(text: string, params?: readonly SqlValue[]): Promise<T[]> {
    return (await this.query(text, params, 'array')).rows.map((row) => (row as unknown[])[0] as T);
  }

  async value<T>(text: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    const row = (await this.query(text, params, 'array')).rows[0] as unknown[] | undefined;
    return row?.[0] as T | undefined;
  }

  async run(text: string, params?: readonly SqlValue[]): Promise<{ changes: number }> {
    return { changes: (await this.query(text, params)).rowCount ?? 0 };
  }

  /**
   * Runs `work` as a transaction until it commits. A run that lost a serialization race runs again (RETRY_*), one
   * at a time in this process: changes all move the one directory revision, so those that lost to each other would
   * only lose again if they all ran again at once. A first run never waits (GET /user reads in a transaction too).
   */
  async transaction<T>(work: () => Promise<T>): Promise<T> {
    if (this.inTransaction()) return work();
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      const effects: Array<() => void> = [];
      const outcome = attempt === 1 ? await this.attempt(work, effects) : await this.oneAtATime(() => this.attempt(work, effects));
      if (outcome.done) {
        for (const effect of effects) effect();
        return outcome.result;
      }
      // Still losing after that long: nothing was applied, the caller is told to try again later (a 503), not a 500.
      if (Date.now() - started >= RETRY_BUDGET_MS) {
        throw new DatabaseUnavailable(
          `the database at ${this.location} is too busy: this transaction lost a race with other changes for ${RETRY_BUDGET_MS / 1000} s`,
          { cause: outcome.error },
        );
      }
      const ceiling = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** attempt);
      await new Promise((resolve) => setTimeout(resolve, Math.random() * ceiling));
    }
  }

  /** `run` once every run again queued before it in this process has ended. */
  private async oneAtATime<R>(run: () => Promise<R>): Promise<R> {
    const previous = this.retrying;
    let ended!: () => void;
    this.retrying = new Promise<void>((resolve) => (ended = resolve));
    try {
      await previous;
      return await run();
    } finally {
      ended();
    }
  }

  /** One run of a transaction: committed, or failed in a way worth another run; other failures are thrown. */
  private async attempt<T>(work: () => Promise<T>, effects: Array<() => void>): Promise<{ done: true; result: T } | { done: false; error: unknown }> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw classifyDatabaseError(err, this.location);
    }
    let broken: Error | undefined;
    try {
      await client.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
      const result = await this.clients.run({ client, effects }, work);
      await client.query('COMMIT');
      return { done: true, result };
    } catch (err) {
      try {
        await client.query('ROLLBACK');
      } catch (rollbackErr) {
        broken = rollbackErr as Error; // the connection is gone: not returned to the pool
      }
      const state = (err as { code?: unknown }).code;
      if (typeof state === 'string' && RETRY_STATES.has(state)) return { done: false, error: err };
      throw classifyDatabaseError(err, this.location);
    } finally {
      client.release(broken);
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
