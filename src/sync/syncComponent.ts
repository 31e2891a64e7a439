import type { Logger } from 'pino';
import { z } from 'zod';
import type { Env } from '../config/secrets.js';
import type { Component } from '../lifecycle.js';
import { cachePath } from '../store/database.js';
import type { Timers } from '../util/clock.js';
import type { SyncServiceOptions } from './options.js';
import { SyncScheduler } from './scheduler.js';
import { serviceClientOptions } from './serviceClient.js';
import type { SyncResult } from './sync.js';
import { SyncThread } from './syncThread.js';
import type { DirectoryFindings, DirectoryRules } from '../core/directoryFindings.js';

const revisionSchema = z.object({ revision: z.number().int().nonnegative(), at: z.string().max(64) });

/** What a `P/directory/revision` payload asks for, given the revision held: pure, for the tests too. */
export function judgeRevision(held: number | null, payload: Buffer): { action: 'sync' | 'full' | 'none'; revision: number | null; why: string } {
  let parsed: z.infer<typeof revisionSchema> | null = null;
  try {
    const result = revisionSchema.safeParse(JSON.parse(payload.toString('utf8')));
    if (result.success) parsed = result.data;
  } catch {
    // not JSON
  }
  if (parsed === null) return { action: 'full', revision: null, why: 'not understood (expected {"revision":N,"at":"..."})' };
  if (held !== null && parsed.revision < held) return { action: 'full', revision: parsed.revision, why: 'went backwards (a service restored from a backup?)' };
  if (held === null || parsed.revision > held) return { action: 'sync', revision: parsed.revision, why: 'ahead of the revision held' };
  return { action: 'none', revision: parsed.revision, why: 'already held' };
}

/**
 * Periodic sync from the access-control service (see SyncScheduler), on request (MQTT `P/agents/<id>/sync`),
 * and pushed: when the service's retained directory revision (`P/directory/revision`) is ahead of the one the
 * cache holds. Each sync runs in a worker thread with its own connection to the cache (syncThread.ts): the door
 * never waits for it. A flood of revisions leads to at most one sync running and one queued.
 */
export class SyncComponent implements Component {
  readonly name = 'sync';
  private scheduler: SyncScheduler | null = null;
  private thread: SyncThread | null = null;
  private held: number | null = null;
  private fullNext = false;
  private pushSeen = false;

  constructor(
    private readonly deps: {
      options: SyncServiceOptions;
      dataDir: string;
      env: Env;
      timers: Timers;
      logger: Logger;
      /** The revision the cache holds (read at start and for each revision message: an import may have reset it). */
      heldRevision: () => number | null;
      /** A revision message was taken (for door-agent status). */
      onPush?: (revision: number | null) => void;
      /** Scan the directory after each sync (short cards, duress collisions) with these rules. */
      rules?: DirectoryRules;
      /** The findings of that scan, after each successful sync. */
      onFindings?: (findings: DirectoryFindings) => void;
      /** A sync run succeeded (the fleet benchmark times the push with it). */
      onSynced?: (result: SyncResult) => void;
    },
  ) {}

  start(): void {
    const { options, logger } = this.deps;
    this.held = this.deps.heldRevision();
    const thread = new SyncThread({ cacheFile: cachePath(this.deps.dataDir), client: serviceClientOptions(options, this.deps.env) });
    thread.start();
    this.thread = thread;
    this.scheduler = new SyncScheduler({
      run: async () => {
        const full = this.fullNext;
        this.fullNext = false;
        const result = await thread.run({ concurrency: options.concurrency, maxRemovalRatio: options.maxRemovalRatio, full, rules: this.deps.rules });
        if (result.revision !== null) this.held = result.revision;
        if (result.findings) this.deps.onFindings?.(result.findings);
        this.deps.onSynced?.(result);
        return result;
      },
      intervalMs: options.syncIntervalSeconds * 1000,
      timers: this.deps.timers,
      logger,
    });
    this.scheduler.start();
  }

  /** Sync now (or right after the sync under way). */
  trigger(): void {
    this.scheduler?.trigger();
  }

  /** A `P/directory/revision` message: sync when it is ahead; a bad or backward one leads to a full sync. */
  onRevision(payload: Buffer): void {
    const { logger } = this.deps;
    // The cache's own record, not only the last sync's: an import in between forgets the revision held.
    this.held = this.deps.heldRevision();
    const judged = judgeRevision(this.held, payload);
    if (!this.pushSeen) logger.info('directory revisions are pushed: changes reach this door within seconds');
    this.pushSeen = true;
    this.deps.onPush?.(judged.revision);
    if (judged.action === 'none') return;
    if (judged.action === 'full') {
      logger.warn({ held: this.held, revision: judged.revision, bytes: payload.length }, `directory revision ${judged.why}: full sync`);
      this.fullNext = true;
    } else logger.info({ held: this.held, revision: judged.revision }, 'directory changed at the service: syncing');
    this.trigger();
  }

  async stop(): Promise<void> {
    this.scheduler?.stop();
    this.scheduler = null;
    await this.thread?.stop();
    this.thread = null;
  }
}
