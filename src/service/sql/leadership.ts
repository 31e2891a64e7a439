import { EventEmitter } from 'node:events';
import pg from 'pg';
import type { Logger } from 'pino';

/** The advisory lock whose holder publishes to the broker ("pub!" as a number). */
const PUBLISHER_LOCK = 0x7075_6221;
/** How often a process that does not hold the lock asks for it, and a holder checks its connection. */
const TRY_EVERY_MS = 1000;
/** A holder whose check takes longer than this steps down (its connection may be gone without a word). */
const CHECK_TIMEOUT_MS = 2000;

/**
 * Which service process publishes the directory revision, guest links, lockdowns and holidays to the broker:
 * exactly one at a time, so each message goes out once however many processes run (docs/reference-service.md
 * "Several service processes").
 */
export interface Leadership {
  /** Whether this process is the publisher now. */
  readonly leading: boolean;
  /** Called with true when this process becomes the publisher, false when it stops being it. */
  onChange(listener: (leading: boolean) => void): void;
  close(): Promise<void>;
}

/** One process (SQLite): always the publisher. */
export class SoleLeader implements Leadership {
  readonly leading = true;
  onChange(): void {}
  async close(): Promise<void> {}
}

/**
 * Several processes (PostgreSQL): the holder of a session advisory lock is the publisher. PostgreSQL lets the lock
 * go when the holder's connection ends, a process killed with -9 included (its socket is closed by the kernel), and
 * another process takes it within TRY_EVERY_MS. A holder checks its connection every TRY_EVERY_MS and steps down
 * the moment the check fails; for the short while two could both believe they publish (a holder cut off from the
 * database), the messages are the current state with a newer issued_at, which the doors take as a repeat.
 */
export class AdvisoryLockLeadership implements Leadership {
  private client: pg.Client | null = null;
  private isLeading = false;
  private closed = false;
  private timer: NodeJS.Timeout | null = null;
  private readonly events = new EventEmitter();

  constructor(
    private readonly connection: pg.ClientConfig,
    private readonly logger: Logger,
    private readonly tryEveryMs = TRY_EVERY_MS,
  ) {}

  get leading(): boolean {
    return this.isLeading;
  }

  onChange(listener: (leading: boolean) => void): void {
    this.events.on('change', listener);
  }

  /** The first try, awaited (a process alone takes the lock before it answers anything); then every tryEveryMs. */
  async start(): Promise<void> {
    await this.tick();
  }

  private schedule(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => void this.tick(), this.tryEveryMs * (0.75 + Math.random() / 2));
    this.timer.unref();
  }

  private set(leading: boolean): void {
    if (leading === this.isLeading) return;
    this.isLeading = leading;
    this.logger.info({ leading }, leading ? 'this process now publishes to the broker' : 'this process no longer publishes to the broker');
    this.events.emit('change', leading);
  }

  private drop(client: pg.Client): void {
    if (this.client === client) this.client = null;
    client.end().catch(() => undefined);
    this.set(false);
  }

  private async tick(): Promise<void> {
    this.timer = null;
    if (this.closed) return;
    let client = this.client;
    try {
      if (client === null) {
        client = new pg.Client(Object.assign({}, this.connection, { keepAlive: true, query_timeout: CHECK_TIMEOUT_MS }));
        const opened = client;
        opened.on('error', () => this.drop(opened));
        opened.on('end', () => this.drop(opened));
        await opened.connect();
        this.client = opened;
      }
      if (this.isLeading) await client.query('SELECT 1');
      else {
        const taken = await client.query<{ taken: boolean }>('SELECT pg_try_advisory_lock($1) AS taken', [PUBLISHER_LOCK]);
        if (taken.rows[0]?.taken === true) this.set(true);
      }
    } catch (err) {
      if (client !== null) this.drop(client);
      this.logger.debug({ err: { message: (err as Error).message } }, 'the publisher lock cannot be checked');
    }
    this.schedule();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    const client = this.client;
    this.client = null;
    this.set(false);
    // Ending the session lets the lock go at once: another process takes over at its next try.
    await client?.end().catch(() => undefined);
    this.events.removeAllListeners();
  }
}
