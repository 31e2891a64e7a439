import { close, closeSync, fsync, mkdirSync, open, openSync, readFileSync, renameSync, unlinkSync, writeFile } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod';
import type { PersistedLock } from '../core/lockState.js';
import { errorCode } from '../util/errors.js';
import { withProps } from '../core/objects.js';

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

/** Told once: a save is on disk, or a later one made it moot (null); or why it could not be written (the caller saves again). */
export type Durable = (err: unknown) => void;

/** A record to write behind: its save's number (a later save makes it moot) and who hears when it is on disk. */
interface BehindWrite {
  record: StoredDoorState;
  save: number;
  durable?: Durable;
}

/**
 * Each door's lock state in a small file of its own (`<dataDir>/doors/<uuid>.json`), so that a timed unlock or
 * a hold-open survives a restart, and so that a lock can always be saved:
 * - a lock first unlinks the file, which needs no free space and no database lock, before `save` returns: a lock
 *   that happened never comes back as an unlock;
 * - every record (the unlock, and the LOCKED record `status` shows) is written behind, off the event loop: to a
 *   temporary file written and synced on libuv's thread pool, then renamed over the door's file, on this thread,
 *   only if no later save came first.
 * The rename comes after the sync because ext4 flushes a file renamed over another at the rename, which waits for
 * the disk: under a sync's writes the rename of an unsynced file blocked the event loop for up to 0.65 s, and the
 * door missed its contact opening and closing (issue 28). So a crash before an unlock's record is in (after its
 * fsync: milliseconds, up to seconds on a busy disk) finds the state before it (the door locked, or the unlock
 * before): never an unlock that was ended.
 * `durable` hears when the state is on disk. Whatever cannot be read back (missing, torn, foreign) is LOCKED.
 */
export class DoorStateStore {
  /** The directory, open once it exists: its fsync makes a rename or an unlink durable. */
  private dirFd: number | null = null;
  /** Saves per door: a record written behind goes in only if it is still the door's last. */
  private readonly saves = new Map<string, number>();
  /** Per door, while a record is being written behind: the next one to write after it (the latest wins). */
  private readonly behind = new Map<string, BehindWrite | null>();
  /**
   * Per door, the descriptor of its file (synced before it was renamed in), kept open until the file is replaced or
   * unlinked, then closed on the thread pool: the last close of a file with no name frees its blocks, which is then
   * not done by the unlink of a lock on this thread (about 0.4 ms on a loaded ext4, measured in issue 28).
   */
  private readonly held = new Map<string, number>();
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
   * Throws when a lock could not remove the old unlock. Otherwise `durable` is told once: when the state is on disk
   * (for LOCKED: the unlink; its record for `status` is written as best it can), when a later save made it moot
   * (null), or why it could not be written (the caller saves again).
   */
  save(doorUuid: string, state: PersistedLock, changedAt: number, durable?: Durable): void {
    const record: StoredDoorState = withProps(state, { changedAt: Math.round(changedAt) });
    const save = (this.saves.get(doorUuid) ?? 0) + 1;
    this.saves.set(doorUuid, save);
    if (state.state === 'LOCKED') {
      const removed = this.remove(doorUuid);
      this.release(doorUuid);
      if (removed) this.track(this.syncDir(), durable);
      else durable?.(null);
      this.writeBehind(doorUuid, { record, save }); // as best it can: the unlock is gone, which is what matters
      return;
    }
    this.writeBehind(doorUuid, { record, save, durable });
  }

  /** Resolves once the work started so far on the thread pool has ended (the daemon's stop waits for it). */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  /** Closes the directory and the doors' files (after `settled`). */
  close(): void {
    for (const fd of this.held.values()) closeSync(fd);
    this.held.clear();
    this.closeDir();
  }

  private closeDir(): void {
    if (this.dirFd !== null) closeSync(this.dirFd);
    this.dirFd = null;
  }

  /** `fd` is the door's file now; the one it replaced is released. */
  private hold(doorUuid: string, fd: number): void {
    this.release(doorUuid);
    this.held.set(doorUuid, fd);
  }

  /** The door's former file (replaced or unlinked) is closed on the thread pool. */
  private release(doorUuid: string): void {
    const fd = this.held.get(doorUuid);
    if (fd === undefined) return;
    this.held.delete(doorUuid);
    this.track(this.io((done) => close(fd, () => done(null))));
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
   * `write` behind, one at a time per door: while one is under way the latest save waits, and replaces (with
   * nothing to report) an earlier one waiting. Its `durable` is told once it is on disk, or why not.
   */
  private writeBehind(doorUuid: string, write: BehindWrite): void {
    if (this.behind.has(doorUuid)) {
      const replaced = this.behind.get(doorUuid);
      if (replaced) this.track(Promise.resolve(null), replaced.durable);
      this.behind.set(doorUuid, write);
      return;
    }
    this.behind.set(doorUuid, null);
    // Never rejects: a throw inside (closing the directory, say) is this write's error, and the door's next write goes on.
    const written = this.writeOne(doorUuid, write).catch((err: unknown) => err);
    this.track(written, write.durable);
    this.track(
      written.then(() => {
        const next = this.behind.get(doorUuid);
        this.behind.delete(doorUuid);
        if (next) this.writeBehind(doorUuid, next);
        return null;
      }),
    );
  }

  /**
   * One record: written to a temporary file and synced on the thread pool, then renamed over the door's file (on
   * this thread, so nothing can come between the check and the rename) only if it is still the door's last save.
   * Resolves with the error that kept it off the disk, or null (also when a later save made it moot).
   */
  private async writeOne(doorUuid: string, { record, save }: BehindWrite): Promise<unknown> {
    try {
      this.directory();
    } catch (err) {
      return err;
    }
    const target = this.file(doorUuid);
    const temp = `${target}.tmp`;
    const opened = await this.io<{ fd: number } | { err: unknown }>((done) => open(temp, 'w', 0o640, (err, fd) => done(err ? { err } : { fd })));
    if ('err' in opened) {
      if (errorCode(opened.err) === 'ENOENT') this.closeDir(); // the directory removed behind our back: made again by the retry
      return opened.err;
    }
    const { fd } = opened;
    const writeErr = await this.io<unknown>((done) => writeFile(fd, `${JSON.stringify(record)}\n`, done));
    let err: unknown = writeErr ?? (await this.io<unknown>((done) => fsync(fd, done)));
    if (!err && this.saves.get(doorUuid) === save) {
      try {
        renameSync(temp, target);
        this.hold(doorUuid, fd);
        return await this.syncDir();
      } catch (renameErr) {
        err = renameErr;
      }
    }
    await this.io((done) => close(fd, () => done(null)));
    return err;
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
