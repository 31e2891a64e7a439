import { AsyncLocalStorage } from 'node:async_hooks';
import type Database from 'better-sqlite3';
import { statement } from '../../util/preparedStatements.js';
import type { SqlDb, SqlValue } from './sqlDb.js';

/**
 * The service's SQLite database (better-sqlite3, synchronous) behind the asynchronous SqlDb. Each statement runs at
 * once; a transaction holds the one connection from BEGIN IMMEDIATE to COMMIT, and a call from outside it waits
 * until it ends (it would otherwise run inside it, between two of its awaits). Statements are prepared once per
 * text (util/preparedStatements.ts).
 */
export class SqliteDb implements SqlDb {
  readonly engine = 'sqlite' as const;
  readonly inJsonIds = 'IN (SELECT value FROM json_each(?))';
  readonly inJsonTexts = 'IN (SELECT value FROM json_each(?))';
  readonly jsonIdRows = 'json_each(?)';
  private readonly transactions = new AsyncLocalStorage<Array<() => void>>();
  /** Settles when the open transaction ends; null when none is open. */
  private open: Promise<void> | null = null;

  constructor(
    /** The connection, opened and migrated by openServiceDatabase (database.ts). */
    readonly connection: Database.Database,
  ) {}

  get location(): string {
    return this.connection.name;
  }

  inTransaction(): boolean {
    return this.transactions.getStore() !== undefined;
  }

  afterCommit(effect: () => void): void {
    const effects = this.transactions.getStore();
    if (effects === undefined) effect();
    else effects.push(effect);
  }

  /**
   * Whether a transaction other than the caller's holds the connection. Callers wait with
   * `while (this.held()) await this.open;` right before their statement (or BEGIN): with no await between the last
   * check and the statement, no transaction can begin in between (an `await` of a helper would leave that gap).
   */
  private held(): boolean {
    return this.open !== null && !this.inTransaction();
  }

  private params(params: readonly SqlValue[] | undefined): SqlValue[] {
    return params === undefined ? [] : (params as SqlValue[]);
  }

  async all<T>(text: string, params?: readonly SqlValue[]): Promise<T[]> {
    while (this.held()) await this.open;
    return statement(this.connection, text).all(...this.params(params)) as T[];
  }

  async get<T>(text: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    while (this.held()) await this.open;
    return statement(this.connection, text).get(...this.params(params)) as T | undefined;
  }

  async column<T>(text: string, params?: readonly SqlValue[]): Promise<T[]> {
    while (this.held()) await this.open;
    return statement(this.connection, text, { pluck: true }).all(...this.params(params)) as T[];
  }

  async value<T>(text: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    while (this.held()) await this.open;
    return statement(this.connection, text, { pluck: true }).get(...this.params(params)) as T | undefined;
  }

  async run(text: string, params?: readonly SqlValue[]): Promise<{ changes: number }> {
    while (this.held()) await this.open;
    return { changes: statement(this.connection, text).run(...this.params(params)).changes };
  }

  async transaction<T>(work: () => Promise<T>): Promise<T> {
    if (this.inTransaction()) return work();
    while (this.held()) await this.open;
    let end!: () => void;
    this.open = new Promise<void>((resolve) => {
      end = resolve;
    });
    const effects: Array<() => void> = [];
    try {
      this.connection.exec('BEGIN IMMEDIATE');
      try {
        const result = await this.transactions.run(effects, work);
        this.connection.exec('COMMIT');
        return result;
      } catch (err) {
        if (this.connection.inTransaction) this.connection.exec('ROLLBACK');
        effects.length = 0;
        throw err;
      }
    } finally {
      this.open = null;
      end();
      for (const effect of effects) effect();
    }
  }

  async close(): Promise<void> {
    while (this.held()) await this.open;
    this.connection.close();
  }
}
