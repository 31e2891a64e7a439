/**
 * The service's database as its stores see it, whichever engine holds it (SQLite for one machine, PostgreSQL for
 * several service processes; docs/architecture.md "The service's database"). One store per concern is written
 * once against this interface, in the SQL both engines take:
 * - parameters are `?`, in order (the PostgreSQL side numbers them);
 * - a list of ids is one JSON array parameter, matched with `column ${db.inJsonIds}` (of strings: `inJsonTexts`);
 * - upserts are `INSERT ... ON CONFLICT (...) DO UPDATE SET x = excluded.x` or `DO NOTHING`, new ids come back
 *   with `RETURNING`, a null-safe comparison is `IS DISTINCT FROM`, a case-blind one `lower(a) = lower(?)`.
 */

export type SqlValue = string | number | bigint | null | Buffer;
export type Row = Record<string, unknown>;

export interface SqlQueries {
  /** Every row. */
  all<T = Row>(text: string, params?: readonly SqlValue[]): Promise<T[]>;
  /** The first row, or undefined. */
  get<T = Row>(text: string, params?: readonly SqlValue[]): Promise<T | undefined>;
  /** The first column of every row. */
  column<T = unknown>(text: string, params?: readonly SqlValue[]): Promise<T[]>;
  /** The first column of the first row, or undefined when there is no row. */
  value<T = unknown>(text: string, params?: readonly SqlValue[]): Promise<T | undefined>;
  /** A statement that returns no rows; how many rows it changed. */
  run(text: string, params?: readonly SqlValue[]): Promise<{ changes: number }>;
}

export type SqlEngine = 'sqlite' | 'postgres';

export interface SqlDb extends SqlQueries {
  readonly engine: SqlEngine;
  /** Where it is, for messages: a file, or the URL without a password. */
  readonly location: string;
  /** `IN (...)` over the ids of a JSON array parameter (`[1,2,3]`), as the engine reads one. */
  readonly inJsonIds: string;
  /** `IN (...)` over the strings of a JSON array parameter (`["a","b"]`). */
  readonly inJsonTexts: string;
  /** The ids of a JSON array parameter as rows of one column `value`, to select from (`SELECT value FROM ${...}`). */
  readonly jsonIdRows: string;
  /**
   * Runs `work` as one transaction: every call to this database made inside it (in its async context) is part of
   * it, a nested call joins it, and calls from elsewhere wait for it (SQLite) or do not see it (PostgreSQL) until it
   * commits. On PostgreSQL it is SERIALIZABLE and `work` may run again after a serialization failure: it must do
   * nothing outside the database (a message to publish goes through the outbox, written in the transaction).
   */
  transaction<T>(work: () => Promise<T>): Promise<T>;
  /** Whether the caller runs inside a transaction of this database. */
  inTransaction(): boolean;
  /**
   * Runs `effect` once the caller's transaction has committed (never when it rolls back, once however often the
   * work ran); at once outside a transaction. For what must not happen before the change is durable: a wake-up of
   * the publisher, mail to send.
   */
  afterCommit(effect: () => void): void;
  close(): Promise<void>;
}
