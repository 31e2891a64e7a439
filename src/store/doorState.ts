import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
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

/**
 * Each door's lock state in a small file of its own (`<dataDir>/doors/<uuid>.json`), so that a timed unlock or
 * a hold-open survives a restart, and so that a lock can always be saved:
 * - an unlock is written atomically (temporary file, fsync, rename, fsync of the directory);
 * - a lock first unlinks the file, which needs no free space and no database lock, and only then writes the
 *   LOCKED record (for `status`) as best it can. A lock that happened never comes back as an unlock.
 * Whatever cannot be read back (missing, torn, foreign) is treated as LOCKED.
 */
export class DoorStateStore {
  constructor(private readonly dir: string) {}

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

  /** Throws when the state could not be made durable (for LOCKED: when the old unlock could not be removed). */
  save(doorUuid: string, state: PersistedLock, changedAt: number): void {
    const record: StoredDoorState = { ...state, changedAt: Math.round(changedAt) };
    if (state.state === 'LOCKED') {
      this.remove(doorUuid);
      try {
        this.writeAtomically(doorUuid, record);
      } catch {
        // The unlock is gone, which is what matters; status shows the relay's level either way.
      }
      return;
    }
    this.writeAtomically(doorUuid, record);
  }

  private remove(doorUuid: string): void {
    try {
      unlinkSync(this.file(doorUuid));
    } catch (err) {
      if (errorCode(err) !== 'ENOENT') throw err;
      return;
    }
    this.syncDir();
  }

  private writeAtomically(doorUuid: string, record: StoredDoorState): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o750 });
    const target = this.file(doorUuid);
    const temp = `${target}.tmp`;
    const fd = openSync(temp, 'w', 0o640);
    try {
      writeSync(fd, `${JSON.stringify(record)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, target);
    this.syncDir();
  }

  private syncDir(): void {
    const fd = openSync(this.dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }
}
