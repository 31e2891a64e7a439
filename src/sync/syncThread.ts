import { Worker } from 'node:worker_threads';
import { DoorAgentError } from '../util/errors.js';
import { workerPath } from '../util/workerPath.js';
import { SyncAbandoned, syncError } from './syncFailure.js';
import type { SyncOrder, SyncOutcome, SyncRunner, SyncWorkerData } from './syncSession.js';
import type { SyncReply, SyncRequest } from './syncWorker.js';

/**
 * The daemon's side of the sync worker (syncWorker.ts): one worker thread with its own connection to the cache.
 * `run` sends one sync and resolves with its summary, or rejects with the same error kinds as syncOnce.
 */
export class SyncThread implements SyncRunner {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (r: SyncOutcome) => void; reject: (e: Error) => void }>();

  constructor(private readonly data: SyncWorkerData) {}

  start(): void {
    const worker = new Worker(workerPath(import.meta.dirname, 'sync', 'syncWorker', 'sync worker'), { workerData: this.data });
    worker.on('message', (reply: SyncReply) => {
      const waiting = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if (!waiting) return;
      if (reply.ok) waiting.resolve(reply.result);
      else waiting.reject(syncError(reply.error));
    });
    // Only this worker's own syncs: after it died, or was stopped, a new one may already be running others.
    const failAll = (err: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      this.rejectPending(err);
    };
    worker.on('error', (err) => failAll(new DoorAgentError(`the sync worker failed: ${err.message}`, { cause: err })));
    worker.on('exit', (code) => failAll(new DoorAgentError(`the sync worker stopped (exit ${code})`)));
    worker.unref();
    this.worker = worker;
  }

  run(options: SyncOrder): Promise<SyncOutcome> {
    if (!this.worker) this.start();
    const id = this.nextId++;
    return new Promise<SyncOutcome>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // The rules whole (plain data, copied to the thread): the site's readers' numberings and formats too, without
      // which the scan would miss every ambiguous printed card and report the directory clean.
      this.worker!.postMessage({
        id,
        concurrency: options.concurrency,
        maxRemovalRatio: options.maxRemovalRatio,
        full: options.full ?? false,
        ...(options.rules ? { rules: options.rules } : {}),
      } satisfies SyncRequest);
    });
  }

  /**
   * Ends the worker; a sync under way is abandoned (its transaction never commits: the cache stays as it was) and
   * rejects with SyncAbandoned, not as a failure: the agent is stopping.
   */
  async stop(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    this.rejectPending(new SyncAbandoned());
    if (worker) await worker.terminate();
  }

  /** Every sync sent and not yet answered ends with `err`. */
  private rejectPending(err: Error): void {
    for (const waiting of this.pending.values()) waiting.reject(err);
    this.pending.clear();
  }
}
