import { Worker } from 'node:worker_threads';
import { workerPath } from '../util/workerPath.js';
import type { CheckpointReply, CheckpointWorkerData } from './checkpointWorker.js';
import type { Db } from './database.js';

/**
 * How many WAL pages the daemon's own connection lets pile up before it checkpoints by itself: SQLite's default is
 * 1,000. Only a checkpoint thread that has fallen far behind lets the log get there (one that died hands the
 * checkpoints back at 1,000, `sqliteCheckpoints`); it stays bounded (16 MB) all the same.
 */
const DAEMON_AUTOCHECKPOINT_PAGES = 4000;

/**
 * The daemon's connection to state.db appends to the log and leaves the checkpoints to the thread below. And the log
 * is cut back to its first commit after each checkpoint (journal_size_limit 0): SQLite otherwise writes the next
 * round of frames over the old ones, and a WAL frame (a page and 24 bytes) covers part of a 4 KB block, which the
 * kernel must read back from the disk first when its page cache has let it go; past the end of the file there is
 * nothing to read.
 */
export function appendOnly(db: Db): void {
  db.pragma(`wal_autocheckpoint = ${DAEMON_AUTOCHECKPOINT_PAGES}`);
  db.pragma('journal_size_limit = 0');
}

/** Back to SQLite's own checkpoints on the daemon's connection, every 1,000 pages: the thread is gone. */
export function sqliteCheckpoints(db: Db): void {
  db.pragma('wal_autocheckpoint = 1000');
}

/**
 * The daemon's side of the checkpoint worker (checkpointWorker.ts). In WAL mode SQLite copies the log into the
 * database, a checkpoint, on the connection whose commit took the log past 1,000 pages: the daemon's, on the event
 * loop, with a sync of the log before the copy and one of the database after it. On a disk that is slow for a while
 * (an SD card, a busy virtual disk) such a sync took up to a second, and the door saw no card and no contact
 * meanwhile (bench/HISTORY.md, "The tap path"). So the daemon's connection leaves checkpoints to this thread, which
 * makes one when asked, at most one at a time and one asked for meanwhile.
 */
export class CheckpointThread {
  private worker: Worker | null = null;
  private running = false;
  private again = false;

  constructor(
    private readonly file: string,
    private readonly options: {
      /** A checkpoint failed (an I/O error): the next request tries again; the log waits in the meantime. */
      onError: (message: string) => void;
      /** The worker died: no more checkpoints from here (the daemon's connection must make its own). */
      onGone: (message: string) => void;
      /** Each checkpoint made (for the tests). */
      onCheckpoint?: (reply: Extract<CheckpointReply, { ok: true }>) => void;
    },
  ) {}

  start(): void {
    const worker = new Worker(workerPath(import.meta.dirname, 'store', 'checkpointWorker', 'checkpoint worker'), {
      workerData: { file: this.file } satisfies CheckpointWorkerData,
    });
    worker.on('message', (reply: CheckpointReply) => {
      this.running = false;
      if (reply.ok) this.options.onCheckpoint?.(reply);
      else this.options.onError(reply.message);
      if (this.again) {
        this.again = false;
        this.request();
      }
    });
    // A worker that died hands the checkpoints back to the daemon's connection (onGone).
    worker.on('error', (err) => this.gone(worker, `the checkpoint worker failed: ${err.message}`));
    worker.on('exit', (code) => this.gone(worker, `the checkpoint worker stopped (exit ${code})`));
    worker.unref();
    this.worker = worker;
  }

  /** A checkpoint now, or right after the one under way. */
  request(): void {
    if (!this.worker) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    this.worker.postMessage('checkpoint');
  }

  async stop(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }

  private gone(worker: Worker, message: string): void {
    if (this.worker !== worker) return;
    this.worker = null;
    this.running = false;
    this.options.onGone(message);
  }
}
