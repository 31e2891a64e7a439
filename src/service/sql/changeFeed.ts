import { EventEmitter } from 'node:events';
import pg from 'pg';
import type { Logger } from 'pino';
import type { SqlDb } from './sqlDb.js';

/** The PostgreSQL channel every service process listens on. */
const CHANNEL = 'door_agent_changes';
/** A lost LISTEN connection is opened again after this long at first, doubling to RECONNECT_MAX_MS. */
const RECONNECT_MIN_MS = 200;
const RECONNECT_MAX_MS = 5000;

/** What moved: the directory revision, the queue of messages to publish. */
export type ChangeTopic = 'revision' | 'publish';

/**
 * How the service processes sharing a database learn of each other's changes within a second: PostgreSQL's
 * LISTEN/NOTIFY (a notification sent inside a transaction is delivered when it commits, to every process, the
 * sender too). With SQLite there is one process: the feed is local.
 */
export interface ChangeFeed {
  /** Tells every process that `topic` moved; inside a transaction, only once it commits. */
  notify(topic: ChangeTopic): Promise<void>;
  /**
   * Calls `listener` for each change. `resync` is called after the feed was interrupted (notifications may have
   * been missed meanwhile): the listener should read what it keeps again.
   */
  subscribe(listener: (topic: ChangeTopic) => void, resync?: () => void): () => void;
  close(): Promise<void>;
}

const TOPICS: ReadonlySet<string> = new Set<ChangeTopic>(['revision', 'publish']);

/** One process (SQLite): listeners are called once the current transaction, if any, has committed. */
export class LocalChangeFeed implements ChangeFeed {
  private readonly events = new EventEmitter();

  constructor(private readonly db: SqlDb) {
    this.events.setMaxListeners(0);
  }

  async notify(topic: ChangeTopic): Promise<void> {
    this.db.afterCommit(() => this.events.emit('change', topic));
  }

  subscribe(listener: (topic: ChangeTopic) => void): () => void {
    this.events.on('change', listener);
    return () => this.events.off('change', listener);
  }

  async close(): Promise<void> {
    this.events.removeAllListeners();
  }
}

/**
 * Several processes (PostgreSQL): NOTIFY in the sender's transaction, LISTEN on a connection of this process's
 * own, opened again with backoff when it drops (each listener is then told to resync).
 */
export class PostgresChangeFeed implements ChangeFeed {
  private readonly events = new EventEmitter();
  private client: pg.Client | null = null;
  private closed = false;
  private retryMs = RECONNECT_MIN_MS;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: SqlDb,
    private readonly connection: pg.ClientConfig,
    private readonly logger: Logger,
  ) {
    this.events.setMaxListeners(0);
  }

  /** Resolves once listening (or when the first attempt failed: it goes on trying in the background). */
  async start(): Promise<void> {
    await this.listen(false);
  }

  private async listen(again: boolean): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client(Object.assign({}, this.connection, { keepAlive: true }));
    client.on('notification', (message) => {
      if (message.channel === CHANNEL && message.payload !== undefined && TOPICS.has(message.payload)) {
        this.events.emit('change', message.payload as ChangeTopic);
      }
    });
    const lost = (err?: Error) => {
      if (this.client !== client) return;
      this.client = null;
      client.end().catch(() => undefined);
      if (this.closed) return;
      this.logger.warn({ err: err ? { message: err.message } : undefined }, 'the change feed lost its database connection: listening again');
      this.schedule();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (err) {
      client.end().catch(() => undefined);
      if (!this.closed) this.schedule();
      this.logger.warn({ err: { message: (err as Error).message } }, 'the change feed cannot listen yet');
      return;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.retryMs = RECONNECT_MIN_MS;
    // Whatever was sent while nobody listened is read again by each listener.
    if (again) this.events.emit('resync');
  }

  private schedule(): void {
    if (this.timer !== null || this.closed) return;
    const delay = this.retryMs * (0.5 + Math.random() / 2);
    this.retryMs = Math.min(RECONNECT_MAX_MS, this.retryMs * 2);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.listen(true);
    }, delay);
    this.timer.unref();
  }

  async notify(topic: ChangeTopic): Promise<void> {
    await this.db.run('SELECT pg_notify(?, ?)', [CHANNEL, topic]);
  }

  subscribe(listener: (topic: ChangeTopic) => void, resync?: () => void): () => void {
    this.events.on('change', listener);
    if (resync) this.events.on('resync', resync);
    return () => {
      this.events.off('change', listener);
      if (resync) this.events.off('resync', resync);
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
    this.events.removeAllListeners();
  }
}
