import type { Db } from './database.js';
import type { PendingWrites } from './pendingWrites.js';

/**
 * request_ids of executed signed commands, persisted so that a restart does not reopen the replay window. Ids
 * are also kept in memory, for a span measured on the monotonic clock (a wall clock stepping back cannot end
 * it early), so a replay is refused even while the database cannot be written. The rows on disk carry the
 * agent's wall time, which never steps back (util/forwardClock.ts).
 */
export class ReplayCache {
  /** request_id -> monotonic ms until which it is kept in memory. */
  private readonly recent = new Map<string, number>();

  constructor(
    private readonly db: Db,
    private readonly writes?: PendingWrites,
    private readonly monoNow: () => number = () => performance.now(),
  ) {}

  seen(requestId: string): boolean {
    return this.recent.has(requestId) || this.db.prepare('SELECT 1 FROM command_requests WHERE request_id = ?').get(requestId) !== undefined;
  }

  /** `at`: wall ms the row is dated (pruned by); `keepMs`: how long the id stays in memory at least. */
  remember(requestId: string, doorUuid: string, at: number, keepMs: number): void {
    this.recent.set(requestId, this.monoNow() + keepMs);
    const write = () => {
      this.db.prepare('INSERT OR IGNORE INTO command_requests (request_id, door_uuid, seen_at) VALUES (?, ?, ?)').run(requestId, doorUuid, at);
    };
    if (this.writes) this.writes.run(`replay-${requestId}`, write);
    else write();
  }

  /** Forgets ids kept past their span, and rows dated before `before` (wall ms): such commands are stale anyway. */
  prune(before: number): void {
    const now = this.monoNow();
    for (const [id, until] of this.recent) if (until < now) this.recent.delete(id);
    const write = () => {
      this.db.prepare('DELETE FROM command_requests WHERE seen_at < ?').run(before);
    };
    if (this.writes) this.writes.run('replay-prune', write);
    else write();
  }
}
