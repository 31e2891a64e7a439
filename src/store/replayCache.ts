import type { Db } from './database.js';

/** request_ids of executed signed commands, persisted so that a restart does not reopen the replay window. */
export class ReplayCache {
  constructor(private readonly db: Db) {}

  seen(requestId: string): boolean {
    return this.db.prepare('SELECT 1 FROM command_requests WHERE request_id = ?').get(requestId) !== undefined;
  }

  remember(requestId: string, doorUuid: string, at: number): void {
    this.db.prepare('INSERT OR IGNORE INTO command_requests (request_id, door_uuid, seen_at) VALUES (?, ?, ?)').run(requestId, doorUuid, at);
  }

  /** Forgets ids older than `before` (wall ms): commands that old are refused as stale anyway. */
  prune(before: number): number {
    return this.db.prepare('DELETE FROM command_requests WHERE seen_at < ?').run(before).changes;
  }
}
