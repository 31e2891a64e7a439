/**
 * state.db's checkpoints, in a worker thread with its own connection (see checkpointThread.ts): the copy of the
 * write-ahead log into the database and SQLite's syncs around it never run on the daemon's event loop.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { batchThisThread } from '../system/threadPolicy.js';

export interface CheckpointWorkerData {
  file: string;
}

/** What one checkpoint did: SQLite's own figures (frames in the log, frames copied), or why it failed. */
export type CheckpointReply = { ok: true; busy: boolean; logFrames: number; copiedFrames: number } | { ok: false; message: string };

if (parentPort) {
  const port = parentPort;
  const { file } = workerData as CheckpointWorkerData;
  // Never preempting the door's thread (system/threadPolicy.ts).
  batchThisThread();
  let db: Database.Database | null = null;
  port.on('message', () => {
    try {
      if (db === null) {
        db = new Database(file, { fileMustExist: true });
        // Any wait for a lock (its first read of the schema) is this thread's, not the door's.
        db.pragma('busy_timeout = 5000');
        db.pragma('synchronous = FULL');
        db.pragma('wal_autocheckpoint = 0');
      }
      // PASSIVE: copies what no reader still needs, and never makes the daemon's connection wait.
      const [row] = db.pragma('wal_checkpoint(PASSIVE)') as Array<{ busy: number; log: number; checkpointed: number }>;
      port.postMessage({ ok: true, busy: row!.busy !== 0, logFrames: row!.log, copiedFrames: row!.checkpointed } satisfies CheckpointReply);
    } catch (err) {
      port.postMessage({ ok: false, message: err instanceof Error ? err.message : String(err) } satisfies CheckpointReply);
    }
  });
  port.on('close', () => db?.close());
}
