import type { Logger } from 'pino';
import type { Env } from '../config/secrets.js';
import type { Component } from '../lifecycle.js';
import type { Clock, Timers } from '../util/clock.js';
import type { SyncServiceOptions } from './options.js';
import { SyncScheduler } from './scheduler.js';
import { serviceClientOptions } from './serviceClient.js';
import { SyncThread } from './syncThread.js';
import { cachePath } from '../store/database.js';

/**
 * Periodic sync from the access-control service (see SyncScheduler), and on request (MQTT). Each sync runs in a
 * worker thread with its own connection to the cache (syncThread.ts): the door never waits for it.
 */
export class SyncComponent implements Component {
  readonly name = 'sync';
  private scheduler: SyncScheduler | null = null;
  private thread: SyncThread | null = null;

  constructor(
    private readonly deps: { options: SyncServiceOptions; dataDir: string; env: Env; clock: Clock; timers: Timers; logger: Logger },
  ) {}

  start(): void {
    const { options } = this.deps;
    const thread = new SyncThread({ cacheFile: cachePath(this.deps.dataDir), client: serviceClientOptions(options, this.deps.env) });
    thread.start();
    this.thread = thread;
    this.scheduler = new SyncScheduler({
      run: () => thread.run({ concurrency: options.concurrency, maxRemovalRatio: options.maxRemovalRatio }),
      intervalMs: options.syncIntervalSeconds * 1000,
      timers: this.deps.timers,
      logger: this.deps.logger,
    });
    this.scheduler.start();
  }

  /** Sync now (or right after the sync under way). */
  trigger(): void {
    this.scheduler?.trigger();
  }

  async stop(): Promise<void> {
    this.scheduler?.stop();
    this.scheduler = null;
    await this.thread?.stop();
    this.thread = null;
  }
}
