import { rmSync } from 'node:fs';
import { SyncThread } from './syncThread.js';
import type { SyncOrder, SyncOutcome, SyncRunner, SyncWorkerData } from './syncSession.js';

/** Where a rebuild writes the new cache: beside the damaged one, moved into its place once complete. */
function rebuildPath(cacheFile: string): string {
  return `${cacheFile}.rebuild`;
}

/**
 * A damaged cache's replacement: a full sync, the same as any other (syncSession.ts), into a new file on a worker
 * thread of its own, its connection closed when it ends. Resolves with the sync's summary and the file, complete;
 * rejects as a sync does (the service unreachable: the scheduler's backoff applies). A file a rebuild cut short left
 * behind (a stop, a power cut) is the daemon's own partial copy of the service's data: it is started again.
 */
export async function rebuildCache(deps: {
  data: SyncWorkerData;
  order: SyncOrder;
  runner?: (data: SyncWorkerData) => SyncRunner;
  /** The rebuild's runner while it runs (null once it ended): an agent that stops meanwhile stops it too. */
  running?: (runner: SyncRunner | null) => void;
}): Promise<{ outcome: SyncOutcome; file: string }> {
  const file = rebuildPath(deps.data.cacheFile);
  for (const partial of [`${file}-wal`, `${file}-shm`, file]) rmSync(partial, { force: true });
  const data: SyncWorkerData = { cacheFile: file, client: deps.data.client };
  const runner = deps.runner?.(data) ?? new SyncThread(data);
  runner.start();
  deps.running?.(runner);
  try {
    const outcome = await runner.run({ concurrency: deps.order.concurrency, maxRemovalRatio: deps.order.maxRemovalRatio, full: true, rules: deps.order.rules });
    return { outcome, file };
  } finally {
    deps.running?.(null);
    await runner.stop();
  }
}
