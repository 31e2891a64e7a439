import { closeSync, fdatasync, fdatasyncSync, openSync } from 'node:fs';
import type { Timers } from '../util/clock.js';
import { errorCode } from '../util/errors.js';
import type { Db } from './database.js';

const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 5000;

export interface WalSyncOptions {
  timers: Timers;
  /**
   * Runs a sync's start once the work in hand is done (default: setImmediate, after the event loop has looked for
   * I/O): the commits of one burst share one sync, and the disk is not asked to sync while this thread still
   * writes (the next card, the relay).
   */
  defer?: (start: () => void) => void;
  /** A sync failed (an I/O error): it is tried again with backoff; the commits wait for it, in memory and on disk. */
  onError: (err: unknown, failures: number) => void;
  /** The syncs themselves (default: node:fs): a test gives a disk that fails. */
  io?: WalSyncIo;
}

export interface WalSyncIo {
  fdatasync(fd: number, done: (err: NodeJS.ErrnoException | null) => void): void;
  fdatasyncSync(fd: number): void;
}

const NODE_IO: WalSyncIo = { fdatasync, fdatasyncSync };

/**
 * The daemon's state.db writes without the event loop waiting for the disk (issue 28: the tap path). In WAL mode a
 * commit made with synchronous=NORMAL is in the write-ahead log when it returns, so a crash of the process loses
 * nothing; what a power cut needs is the sync of the WAL, the one synchronous=FULL makes on the caller's thread at
 * every commit. Here that sync (an fdatasync of `<db>-wal`) runs on libuv's thread pool right after the commit: one
 * at a time, the commits made meanwhile covered by the next. A ticket says which commits a finished sync covers,
 * so what must only leave the agent once it is durable (the outbox's events) can wait for it.
 *
 * The WAL is opened once by name and kept open: it is the file SQLite writes as long as the daemon's connection is
 * open (a checkpoint rewrites or truncates it in place; SQLite removes it only when the last connection closes,
 * after a checkpoint has synced the database). When it is not there, everything committed is in the database file,
 * synced already.
 */
export class WalSync {
  private readonly walFile: string;
  /** The last ticket handed out: commits up to it are covered by a sync that starts after it. */
  private requested = 0;
  private synced = 0;
  private running = false;
  private failures = 0;
  private retryTimer: unknown = null;
  /** Within a run's task: commits are made with synchronous=NORMAL, and the sync is asked for at its end. */
  private open = false;
  private fd: number | null = null;
  private closeWhenDone = false;
  private closed = false;
  private deferred = false;
  private readonly defer: (start: () => void) => void;
  private readonly io: WalSyncIo;
  private readonly listeners: Array<(upTo: number) => void> = [];

  constructor(
    private readonly db: Db,
    private readonly options: WalSyncOptions,
  ) {
    this.walFile = `${db.name}-wal`;
    this.defer = options.defer ?? ((start) => setImmediate(start));
    this.io = options.io ?? NODE_IO;
  }

  /**
   * Runs `write` (its commits) with synchronous=NORMAL. The connection stays so until the end of the current task
   * (a microtask), then is set back to FULL and the sync is asked for: the writes of one task (a tap's event and its
   * lock change) share one switch and one sync. What else commits on the connection meanwhile is covered as well.
   */
  run<T>(write: () => T): T {
    if (!this.open) {
      // A PRAGMA synchronous takes effect when it is compiled, so it is executed afresh each time (some µs).
      this.db.exec('PRAGMA synchronous = NORMAL');
      this.open = true;
      queueMicrotask(() => {
        this.open = false;
        if (!this.db.open) return;
        this.db.exec('PRAGMA synchronous = FULL');
        this.request();
      });
    }
    return write();
  }

  /** A commit was made with synchronous=NORMAL: a sync is started once the work in hand is done (or the next covers it). */
  request(): void {
    this.requested++;
    if (this.running || this.retryTimer !== null || this.deferred) return;
    this.deferred = true;
    this.defer(() => {
      this.deferred = false;
      if (!this.running && this.retryTimer === null) this.start();
    });
  }

  /**
   * The ticket covering the commits made so far: the last request's, or within a run's task the one its end takes.
   * They are durable once `onSynced` reports a number at least as high.
   */
  get ticket(): number {
    return this.open ? this.requested + 1 : this.requested;
  }

  /** Tickets up to `upTo` are durable (each sync that covered a new ticket reports once). */
  onSynced(listener: (upTo: number) => void): void {
    this.listeners.push(listener);
  }

  /**
   * Every commit so far made durable now, on the caller's thread (start, stop, an alarm). False when the sync
   * failed: reported, and tried again off the event loop as any other.
   */
  syncNow(): boolean {
    const upTo = ++this.requested; // a ticket of its own: the commits after it in a run's task wait for the next sync
    try {
      const fd = this.wal();
      if (fd !== null) this.io.fdatasyncSync(fd);
    } catch (err) {
      if (errorCode(err) !== 'ENOENT') {
        this.options.onError(err, ++this.failures);
        // Tried again off the event loop (with backoff while it fails), covering these commits too.
        if (!this.running && this.retryTimer === null) this.start();
        return false;
      }
    }
    this.recovered(upTo);
    return true;
  }

  /** Stops the retries (a last syncNow is the caller's choice). */
  stop(): void {
    if (this.retryTimer !== null) this.options.timers.clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }

  /** Closes the WAL's descriptor, once the sync running (if one is) has ended. */
  close(): void {
    this.closed = true;
    this.stop();
    if (this.running) this.closeWhenDone = true;
    else this.closeWal();
  }

  private closeWal(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  /** The WAL's descriptor, opened the first time; null when there is no WAL. */
  private wal(): number | null {
    if (this.fd === null) {
      try {
        this.fd = openSync(this.walFile, 'r');
      } catch (err) {
        if (errorCode(err) === 'ENOENT') return null;
        throw err;
      }
    }
    return this.fd;
  }

  private start(): void {
    if (this.closed) return;
    const upTo = this.requested;
    let fd: number | null;
    try {
      fd = this.wal();
    } catch (err) {
      this.finished(upTo, err);
      return;
    }
    if (fd === null) {
      this.finished(upTo, null);
      return;
    }
    this.running = true;
    this.io.fdatasync(fd, (err) => {
      this.running = false;
      if (this.closeWhenDone) {
        this.closeWhenDone = false;
        this.closeWal();
      }
      this.finished(upTo, err);
    });
  }

  private finished(upTo: number, err: unknown): void {
    if (err) {
      this.failures++;
      this.options.onError(err, this.failures);
      const delay = Math.min(FIRST_RETRY_MS * 2 ** (this.failures - 1), MAX_RETRY_MS);
      this.retryTimer = this.options.timers.setTimeout(() => {
        this.retryTimer = null;
        if (!this.running) this.start();
      }, delay);
      return;
    }
    this.recovered(upTo);
    if (this.requested > this.synced && !this.running) this.start();
  }

  /** A sync covering tickets up to `upTo` succeeded: a retry waiting is not needed any more. */
  private recovered(upTo: number): void {
    this.failures = 0;
    this.stop();
    if (upTo <= this.synced) return;
    this.synced = upTo;
    for (const listener of this.listeners) listener(upTo);
  }
}
