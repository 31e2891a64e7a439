import type { Logger } from 'pino';
import type { Env } from '../config/secrets.js';
import type { Component } from '../lifecycle.js';
import type { AgentStore } from '../store/agentStore.js';
import type { Clock, Timers } from '../util/clock.js';
import type { SyncServiceOptions } from './options.js';
import { SyncScheduler } from './scheduler.js';
import { createServiceClient } from './serviceClient.js';
import { syncOnce } from './sync.js';

/** Periodic sync from the access-control service (see SyncScheduler), and on request (MQTT). */
export class SyncComponent implements Component {
  readonly name = 'sync';
  private scheduler: SyncScheduler | null = null;

  constructor(
    private readonly deps: { options: SyncServiceOptions; store: AgentStore; env: Env; clock: Clock; timers: Timers; logger: Logger },
  ) {}

  start(): void {
    const { options, store, clock } = this.deps;
    const client = createServiceClient(options, this.deps.env);
    this.scheduler = new SyncScheduler({
      run: () => syncOnce(store.db, client, { concurrency: options.concurrency, maxRemovalRatio: options.maxRemovalRatio, now: () => clock.wallNow() }),
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

  stop(): void {
    this.scheduler?.stop();
    this.scheduler = null;
  }
}
