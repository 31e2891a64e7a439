/**
 * The sync, in a worker thread with its own SQLite connection (see syncThread.ts): the HTTP calls, the JSON,
 * the validation and the apply never run on the daemon's event loop, so a tap or a relock timer never waits for
 * a sync. One sync at a time, on request from the main thread.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { syncFailure, type SyncFailure } from './syncFailure.js';
import { batchThisThread } from '../system/threadPolicy.js';
import { yieldCpuToTheDoor } from './syncThreadPriority.js';
import { openSyncSession, type SyncOrder, type SyncOutcome, type SyncWorkerData } from './syncSession.js';

/** An order as it crosses to the thread; the directory's scan runs here too, off the door's thread. */
export type SyncRequest = SyncOrder & { id: number };

export type SyncReply = { id: number; ok: true; result: SyncOutcome } | { id: number; ok: false; error: SyncFailure };

if (parentPort) {
  yieldCpuToTheDoor();
  batchThisThread();
  const port = parentPort;
  const session = openSyncSession(workerData as SyncWorkerData);
  port.on('message', (request: SyncRequest) => {
    const { id, ...order } = request;
    session.sync(order).then(
      (result) => port.postMessage({ id, ok: true, result } satisfies SyncReply),
      (err: unknown) => port.postMessage({ id, ok: false, error: syncFailure(err) } satisfies SyncReply),
    );
  });
  port.on('close', () => session.close());
}
