import type { Db } from './database.js';
import type { PendingWrites } from './pendingWrites.js';

/**
 * request_ids of executed signed commands, persisted so that a restart does not reopen the replay window. Ids
 * are also kept in memory until pruned, so a replay is refused even while the database cannot be written.
 */
export class ReplayCache {
  private readonly recent = new Map<string, number>();

  constructor(
    private readonly db: Db,
    private readonly writes?: PendingWrites,
  ) {}

  seen(requestId: string): boolean {
    return this.recent.has(requestId) || this.db.prepare('SELECT 1 FROM command_requests WHERE request_id = ?').get(requestId) !== undefined;
  }

  remember(requestId: string, doorUuid: string, at: number): void {
    this.recent.set(requestId, at);
    const write = () => {
      this.db.prepare('INSERT OR IGNORE INTO command_requests (request_id, door_uuid, seen_at) VALUES (?, ?, ?)').run(requestId, doorUuid, at);
    };
    if (this.writes) this.writes.run(`replay-${requestId}`, write);
    else write();
  }

  /** Forgets ids older than `before` (wall ms): commands that old are refused as stale anyway. */
  prune(before: number): void {
    for (const [id, at] of this.recent) if (at < before) this.recent.delete(id);
    const write = () => {
      this.db.prepare('DELETE FROM command_requests WHERE seen_at < ?').run(before);
    };
    if (this.writes) this.writes.run('replay-prune', write);
    else write();
  }
}
