import { dirname } from 'node:path';
import { openDatabase } from '../store/database.js';
import { scanDirectory } from '../store/directoryScan.js';
import type { DirectoryFindings, DirectoryRules } from '../core/directoryFindings.js';
import { ServiceClient, type ServiceClientOptions } from './serviceClient.js';
import { syncOnce, type SyncResult } from './sync.js';

export interface SyncWorkerData {
  cacheFile: string;
  client: ServiceClientOptions;
}

/** One sync asked for: how, and whether to scan the directory after it (short cards, duress collisions). */
export interface SyncOrder {
  concurrency: number;
  maxRemovalRatio: number | null;
  full?: boolean;
  rules?: DirectoryRules;
}

/** A sync's summary, with the directory's findings when asked for. */
export type SyncOutcome = SyncResult & { findings?: DirectoryFindings };

/** Where the syncs of one agent run: the daemon's is a worker thread (syncThread.ts). */
export interface SyncRunner {
  start(): void;
  run(order: SyncOrder): Promise<SyncOutcome>;
  stop(): Promise<void>;
}

/**
 * What the sync worker does with each order, on its own connection to the cache: the sync, then the directory's
 * scan. The worker thread runs it (syncWorker.ts); so can a process that runs many agents' syncs (the fleet bench).
 */
export function openSyncSession(data: SyncWorkerData): { sync(order: SyncOrder): Promise<SyncOutcome>; close(): void } {
  // This connection may wait for another writer (an import): the daemon's event loop does not wait with it.
  const db = openDatabase(data.cacheFile, { busyTimeoutMs: 5000 });
  const client = new ServiceClient({ spoolDir: dirname(data.cacheFile), ...data.client });
  return {
    async sync(order) {
      const result = await syncOnce(db, client, {
        concurrency: order.concurrency,
        maxRemovalRatio: order.maxRemovalRatio,
        full: order.full,
        now: () => Date.now(),
      });
      const findings = order.rules ? scanDirectory(db, order.rules) : undefined;
      return { ...result, ...(findings ? { findings } : {}) };
    },
    close: () => db.close(),
  };
}
