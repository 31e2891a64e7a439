import { close, closeSync, fsync, mkdirSync, open, openSync, readFileSync, renameSync, unlinkSync, writeFile, writeSync } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod';
import type { PersistedLock } from '../core/lockState.js';
import { errorCode } from '../util/errors.js';

export interface StoredDoorState extends PersistedLock {
  changedAt: number;
}

const storedSchema = z.object({
  state: z.enum(['LOCKED', 'UNLOCKED']),
  relockAt: z.number().nullable(),
  unlockedSince: z.number().nullable(),
  cause: z.string(),
  changedAt: z.number(),
});

export function doorStateDir(dataDir: string): string {
  return join(dataDir, 'doors');
}

/** Told once a save is on disk (null), or why it is not (the caller saves again). */
export type Durable = (err: unknown) => void;

/**
 * Each door's lock state in a small file of its own (`<dataDir>/doors/<uuid>.json`), so that a timed unlock or
 * a hold-open survives a restart, and so that a lock can always be saved:
 * - an unlock is written to a temporary file and renamed over the door's file;
 * - a lock first unlinks the file, which needs no free space and no database lock, and then writes the LOCKED
 *   record (for `status`) as best it can. A lock that happened never comes back as an unlock.
 * What a crash of the process must find is done before `save` returns: the unlock's rename, the lock's unlink.
 * What only a power cut could undo, the fsyncs of the file and of the directory, runs right after on libuv's
 * thread pool, and so does the writing of the LOCKED record (renamed in only if no save came after it): the event
 * loop does not wait for the disk once the relay has moved (issue 28); `durable` hears when the state is on disk.
 * A power cut before then finds the state before, the state after, or a file that cannot be read back.
 * Whatever cannot be read back (missing, torn, foreign) is treated as LOCKED.
 */
export class DoorStateStore {
  /** The directory, open once it exists: its fsync makes a rename or an unlink durable. */
  private dirFd: number | null = null;
  /** Saves per door: a LOCKED record written off the event loop goes in only if it is still the door's last. */
  private readonly saves = new Map<string, number>();
  /** Per door, while a LOCKED record is being written: the next one to write after it (the latest wins). */
  private readonly lockedWrites = new Map<string, { record: StoredDoorState; save: number } | null>();
  /**
   * Per door, the descriptor of its file, kept open (after its sync) until the file is replaced or unlinked, then
   * closed on the thread pool: the last close of a file with no name frees its blocks, which is then not done by
   * the unlink of a lock on this thread (about 0.4 ms on a loaded ext4, measured in issue 28).
   */
  private readonly held = new Map<string, { fd: number; synced: Promise<unknown> }>();
  /** Work still running on the thread pool: `settled` waits for it. */
  private readonly pending = new Set<Promise<unknown>>();
  /** The last job for the thread pool (see `io`). */
  private tail: Promise<unknown> = Promise.resolve();

  /**
   * `defer` starts each job for the thread pool once the work in hand is done (default: setImmediate, after the
   * event loop has looked for I/O): the disk is not asked to sync while this thread still writes (see `io`).
   */
  constructor(
    private readonly dir: string,
    private readonly defer: (work: () => void) => void = (work) => setImmediate(work),
  ) {}

  private file(doorUuid: string): string {
    return join(this.dir, `${doorUuid}.json`); // configured UUIDs are lower case
  }

  load(doorUuid: string): StoredDoorState | undefined {
    let text: string;
    try {
      text = readFileSync(this.file(doorUuid), 'utf8');
    } catch (err) {
      if (errorCode(err) === 'ENOENT') return undefined;
      throw err;
    }
    try {
      const parsed = storedSchema.safeParse(JSON.parse(text));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Throws when the state could not be saved (for LOCKED: when the old unlock could not be removed); `durable`
   * is told once it is on disk too (for LOCKED: the unlink), or the error of its sync.
   */
  save(doorUuid: string, state: PersistedLock, changedAt: number, durable?: Durable): void {
    const record: StoredDoorState = { ...state, changedAt: Math.round(changedAt) };
    const save = (this.saves.get(doorUuid) ?? 0) + 1;
    this.saves.set(doorUuid, save);
    if (state.state === 'LOCKED') {
      const removed = this.remove(doorUuid);
      this.release(doorUuid);
      if (removed) this.track(this.syncDir(), durable);
      else durable?.(null);
      this.track(this.writeLocked(doorUuid, record, save));
      return;
    }
    const fd = this.write(doorUuid, record);
    const synced = this.io<unknown>((done) => fsync(fd, done));
    this.hold(doorUuid, fd, synced);
    this.track(
      synced.then((fileErr) => fileErr ?? this.syncDir()),
      durable,
    );
  }

  /** Resolves once the work started so far on the thread pool has ended (the daemon's stop waits for it). */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  /** Closes the directory and the doors' files (after `settled`). */
  close(): void {
    for (const { fd } of this.held.values()) closeSync(fd);
    this.held.clear();
    this.closeDir();
  }

  private closeDir(): void {
    if (this.dirFd !== null) closeSync(this.dirFd);
    this.dirFd = null;
  }

  /** `fd` is the door's file now; the one it replaced is released. */
  private hold(doorUuid: string, fd: number, synced: Promise<unknown>): void {
    this.release(doorUuid);
    this.held.set(doorUuid, { fd, synced });
  }

  /** The door's former file (replaced or unlinked) is closed on the thread pool once its sync has ended. */
  private release(doorUuid: string): void {
    const held = this.held.get(doorUuid);
    if (!held) return;
    this.held.delete(doorUuid);
    this.track(held.synced.then(() => this.io((done) => close(held.fd, () => done(null)))));
  }

  /** Whether a file was removed. */
  private remove(doorUuid: string): boolean {
    try {
      unlinkSync(this.file(doorUuid));
      return true;
    } catch (err) {
      if (errorCode(err) !== 'ENOENT') throw err;
      return false;
    }
  }

  /** The directory's descriptor, the directory made first if need be. */
  private directory(): number {
    if (this.dirFd === null) {
      mkdirSync(this.dir, { recursive: true, mode: 0o750 });
      this.dirFd = openSync(this.dir, 'r');
    }
    return this.dirFd;
  }

  /** Writes the record to a temporary file renamed over the door's file; returns the file's descriptor, to sync. */
  private write(doorUuid: string, record: StoredDoorState): number {
    this.directory();
    const target = this.file(doorUuid);
    const temp = `${target}.tmp`;
    let fd: number;
    try {
      fd = openSync(temp, 'w', 0o640);
    } catch (err) {
      this.closeDir(); // the directory removed behind our back: made again by the retry
      throw err;
    }
    try {
      writeSync(fd, `${JSON.stringify(record)}\n`);
      renameSync(temp, target);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
    return fd;
  }

  /** The directory's fsync on the thread pool; resolves with its error, or null. */
  private syncDir(): Promise<unknown> {
    let fd: number;
    try {
      fd = this.directory();
    } catch (err) {
      return Promise.resolve(err);
    }
    return this.io((done) => fsync(fd, done));
  }

  /**
   * One job for the thread pool (`job` calls `done` with its outcome, an error as a value), started by `defer` after
   * the jobs before it: the store never holds more than one of libuv's four threads, so a reader's read (serialport
   * reads through the same pool) never waits behind its syncs.
   */
  private io<T>(job: (done: (value: T) => void) => void): Promise<T> {
    const result = this.tail.then(() => new Promise<T>((resolve) => this.defer(() => job(resolve))));
    this.tail = result;
    return result;
  }

  /**
   * The LOCKED record, as best it can and off the event loop: written to a temporary file of its own and synced on
   * the thread pool, then renamed in (on this thread, so nothing can come between the check and the rename) only if
   * it is still the door's last save: an unlock saved meanwhile is never overwritten. One at a time per door.
   */
  private writeLocked(doorUuid: string, record: StoredDoorState, save: number): Promise<unknown> {
    if (this.lockedWrites.has(doorUuid)) {
      this.lockedWrites.set(doorUuid, { record, save });
      return Promise.resolve(null);
    }
    this.lockedWrites.set(doorUuid, null);
    const target = this.file(doorUuid);
    const temp = `${target}.locked.tmp`;
    const text = `${JSON.stringify(record)}\n`;
    const written = (async () => {
      const fd = await this.io<number | null>((done) => open(temp, 'w', 0o640, (err, opened) => done(err ? null : opened)));
      if (fd === null) return { fd, ok: false };
      const writeErr = await this.io<unknown>((done) => writeFile(fd, text, done));
      const syncErr = await this.io<unknown>((done) => fsync(fd, done));
      return { fd, ok: !writeErr && !syncErr };
    })();
    return written.then(async ({ fd, ok }) => {
      let renamed = false;
      if (ok && this.saves.get(doorUuid) === save) {
        try {
          renameSync(temp, target);
          renamed = true;
        } catch {
          // As best it can: the unlock is gone, which is what matters.
        }
      }
      if (fd !== null) {
        if (renamed) this.hold(doorUuid, fd, Promise.resolve(null));
        else await this.io((done) => close(fd, () => done(null)));
      }
      if (renamed) await this.syncDir();
      const next = this.lockedWrites.get(doorUuid);
      this.lockedWrites.delete(doorUuid);
      if (next) await this.writeLocked(doorUuid, next.record, next.save);
      return null;
    });
  }

  /** Keeps `work` until it ends (see `settled`), then tells `durable` its error, or null (outside the promise). */
  private track(work: Promise<unknown>, durable?: Durable): void {
    const done = work.then(
      (err) => err ?? null,
      (err: unknown) => err,
    );
    this.pending.add(done);
    void done.then((err) => {
      this.pending.delete(done);
      if (durable) queueMicrotask(() => durable(err));
    });
  }
}
