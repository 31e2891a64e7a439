import type { PersistedLock } from '../core/lockState.js';
import type { Db } from './database.js';

interface DoorStateRow {
  state: 'LOCKED' | 'UNLOCKED';
  relock_at: number | null;
  unlocked_since: number | null;
  cause: string;
  changed_at: number;
}

export interface StoredDoorState extends PersistedLock {
  changedAt: number;
}

/** Persisted lock state per door, so a timed unlock or hold-open survives a restart (synchronous=FULL). */
export class DoorStateStore {
  constructor(private readonly db: Db) {}

  load(doorUuid: string): StoredDoorState | undefined {
    const row = this.db
      .prepare('SELECT state, relock_at, unlocked_since, cause, changed_at FROM door_state WHERE door_uuid = ?')
      .get(doorUuid) as DoorStateRow | undefined;
    if (!row) return undefined;
    return {
      state: row.state,
      relockAt: row.relock_at,
      unlockedSince: row.unlocked_since,
      cause: row.cause,
      changedAt: row.changed_at,
    };
  }

  save(doorUuid: string, state: PersistedLock, changedAt: number): void {
    // Whole milliseconds: the monotonic clock is fractional, the columns are INTEGER (STRICT).
    const ms = (t: number | null) => (t === null ? null : Math.round(t));
    this.db
      .prepare(
        `INSERT INTO door_state (door_uuid, state, relock_at, unlocked_since, cause, changed_at)
         VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (door_uuid) DO UPDATE SET state = excluded.state, relock_at = excluded.relock_at,
           unlocked_since = excluded.unlocked_since, cause = excluded.cause, changed_at = excluded.changed_at`,
      )
      .run(doorUuid, state.state, ms(state.relockAt), ms(state.unlockedSince), state.cause, ms(changedAt));
  }
}
