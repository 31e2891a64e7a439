import type { Logger } from 'pino';
import type { Env } from '../util/secretFiles.js';
import type { Component } from '../lifecycle.js';
import { parseRevisionMessage, type DirectoryVersion } from '../protocol/directory.js';
import { cachePath } from '../store/database.js';
import type { Timers } from '../util/clock.js';
import type { LinkAttempt } from '../util/linkWatch.js';
import type { SyncServiceOptions } from './options.js';
import { MassRemovalError } from '../store/snapshotMerge.js';
import { SyncScheduler } from './scheduler.js';
import { ServiceError, serviceClientOptions } from './serviceClient.js';
import type { SyncResult } from './sync.js';
import { SyncThread } from './syncThread.js';
import type { SyncOrder, SyncOutcome, SyncRunner, SyncWorkerData } from './syncSession.js';
import { rebuildCache } from './cacheRebuild.js';
import { SyncAbandoned } from './syncFailure.js';
import type { CacheConnection } from '../store/cacheConnection.js';
import type { DirectoryFindings, DirectoryRules } from '../core/directoryFindings.js';

/**
 * What a `P/directory/revision` payload asks for, given the version held: pure, for the tests too. A message
 * without history (a service from before histories) is judged on its revision alone, as before.
 * @internal
 */
export function judgeRevision(held: DirectoryVersion | null, payload: Buffer): { action: 'sync' | 'full' | 'none'; revision: number | null; why: string } {
  const pushed = parseRevisionMessage(payload);
  if (pushed === null) return { action: 'full', revision: null, why: 'not understood (expected {"revision":N,"at":"...","history":"..."})' };
  if (held !== null && held.history !== null && pushed.history !== null && pushed.history !== held.history) {
    return { action: 'full', revision: pushed.revision, why: "changed history (the service's database was restored from a backup or replaced)" };
  }
  if (held !== null && pushed.revision < held.revision)
    return { action: 'full', revision: pushed.revision, why: 'went backwards (a service restored from a backup?)' };
  if (held !== null && pushed.revision === held.revision && held.tag !== null && pushed.tag !== null && pushed.tag !== held.tag) {
    return { action: 'full', revision: pushed.revision, why: 'is the same number with another tag (a service restored from a backup?)' };
  }
  if (held === null || pushed.revision > held.revision) return { action: 'sync', revision: pushed.revision, why: 'ahead of the revision held' };
  return { action: 'none', revision: pushed.revision, why: 'already held' };
}

/**
 * Whether a failed sync reached the service: false when no answer came or the answer was a 5xx (the service is
 * unreachable or down); true when it answered (a refused key, a mass removal, a bad body); null for a failure of
 * the agent's own (its worker, its disk), which says nothing about the link.
 */
function serviceReached(err: unknown): boolean | null {
  if (err instanceof MassRemovalError) return true;
  if (!(err instanceof ServiceError)) return null;
  return err.status !== null && err.status < 500;
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
  private thread: SyncRunner | null = null;
  /** The damaged cache's rebuild under way (cacheRebuild.ts), stopped with the component. */
  private rebuilding: SyncRunner | null = null;
  /**
   * What this component last knew the cache to hold: read at start and whenever a message is not plainly ahead of
   * it, set to the revision of each successful sync (its history and tag then unknown: null). undefined: not
   * known yet.
   */
  private held: DirectoryVersion | null | undefined = undefined;
  private fullNext = false;
  private pushSeen = false;

  constructor(
    private readonly deps: {
      options: SyncServiceOptions;
      dataDir: string;
      env: Env;
      timers: Timers;
      logger: Logger;
      /** The version the cache holds (read at start and for each revision message: an import may have reset it). */
      heldVersion: () => DirectoryVersion | null;
      /** A revision message was taken (for door-agent status). */
      onPush?: (revision: number | null) => void;
      /** Scan the directory after each sync (short cards, duress collisions) with these rules. */
      rules?: DirectoryRules;
      /** The findings of that scan, after each successful sync. */
      onFindings?: (findings: DirectoryFindings) => void;
      /** The mass-removal guard refused an answer; its restrictive part was applied (err.restricted says what). */
      onRefused?: (err: MassRemovalError) => void;
      /** A sync run succeeded (the fleet benchmark times the push with it). */
      onSynced?: (result: SyncResult) => void;
      /** Where the syncs run: a worker thread of their own (the default, the daemon's), or one a fleet shares. */
      runner?: (data: SyncWorkerData) => SyncRunner;
      /** Told whether each sync reached the service (link_lost / link_restored, util/linkWatch.ts). */
      link?: { attempt(): LinkAttempt; failed(attempt: LinkAttempt): void; succeeded(): void };
      /**
       * The daemon's cache (store/cacheConnection.ts): told of damage a sync found; while it is damaged, each sync
       * is a rebuild (cacheRebuild.ts) whose file then replaces it.
       */
      cache?: Pick<CacheConnection, 'damage' | 'failed' | 'replace'>;
      /** A rebuild of the damaged cache failed (door-agent status shows it); the scheduler tries again. */
      onRebuildFailed?: (err: unknown) => void;
    },
  ) {}

  start(): void {
    const { options, logger, cache } = this.deps;
    this.held = cache?.damage ? null : this.deps.heldVersion();
    const data: SyncWorkerData = { cacheFile: cachePath(this.deps.dataDir), client: serviceClientOptions(options, this.deps.env) };
    const thread = this.deps.runner?.(data) ?? new SyncThread(data);
    // On a damaged cache the worker starts with the first sync after the rebuild (it would open the damaged file).
    if (!cache?.damage) thread.start();
    this.thread = thread;
    this.scheduler = new SyncScheduler({
      run: async () => {
        const full = this.fullNext;
        this.fullNext = false;
        let result: SyncOutcome;
        const attempt = this.deps.link?.attempt();
        const order = { concurrency: options.concurrency, maxRemovalRatio: options.maxRemovalRatio, full, rules: this.deps.rules };
        const rebuilding = cache?.damage != null;
        try {
          result = rebuilding ? await this.rebuild(data, order) : await thread.run(order);
        } catch (err) {
          if (err instanceof MassRemovalError) this.deps.onRefused?.(err);
          const reached = serviceReached(err);
          if (reached === false && attempt) this.deps.link?.failed(attempt);
          else if (reached === true) this.deps.link?.succeeded();
          // A damaged page the worker read: the cache's listeners ask for the rebuild, which runs right after this.
          if (!rebuilding) cache?.failed(err);
          else if (!(err instanceof SyncAbandoned)) this.deps.onRebuildFailed?.(err);
          throw err;
        }
        this.deps.link?.succeeded();
        if (result.revision !== null) this.held = { revision: result.revision, history: null, tag: null };
        if (result.findings) this.deps.onFindings?.(result.findings);
        this.deps.onSynced?.(result);
        return result;
      },
      intervalMs: options.syncIntervalSeconds * 1000,
      startDelayMs: options.startDelaySeconds * 1000,
      timers: this.deps.timers,
      logger,
    });
    this.scheduler.start();
    // Damaged at start: the rebuild does not wait for the start delay (the doors refuse every credential meanwhile).
    if (cache?.damage) this.scheduler.trigger();
  }

  /**
   * The damaged cache rebuilt: a full sync into a new file, which then takes its place (the damaged one kept
   * aside). The worker's connection to the damaged file ends first; the next sync opens the rebuilt one.
   */
  private async rebuild(data: SyncWorkerData, order: SyncOrder): Promise<SyncOutcome> {
    const { logger, cache } = this.deps;
    await this.thread?.stop();
    logger.info('rebuilding the damaged cache: a full sync from the service into a new file');
    const { outcome, file } = await rebuildCache({ data, order, runner: this.deps.runner, running: (runner) => (this.rebuilding = runner) });
    cache!.replace(file);
    return outcome;
  }

  /** Asked to sync (`P/agents/<id>/sync`): now (or right after the sync under way), even during the start delay. */
  trigger(): void {
    this.scheduler?.trigger();
  }

  /**
   * A `P/directory/revision` message: sync when it is ahead; a bad or backward one leads to a full sync. Before
   * the first sync (its random start delay) it waits for that one: every door gets the retained message at
   * connect, so after a power cut it would otherwise bring them all to the service at once.
   */
  onRevision(payload: Buffer): void {
    const { logger } = this.deps;
    // A damaged cache holds no version to judge by: the rebuild (a full sync) runs now, unless it must wait.
    if (this.deps.cache?.damage) return void this.scheduler?.changed();
    // Ahead of what this component knows: a sync, which reads the cache's own record. Anything else (already held,
    // backwards, another history) is judged on the cache's record: an import in between forgets the revision held.
    let judged = this.held === undefined ? null : judgeRevision(this.held, payload);
    if (judged?.action !== 'sync') {
      this.held = this.deps.heldVersion();
      judged = judgeRevision(this.held, payload);
    }
    if (!this.pushSeen) logger.info('directory revisions are pushed: changes reach this door within seconds');
    this.pushSeen = true;
    this.deps.onPush?.(judged.revision);
    if (judged.action === 'none') return;
    if (judged.action === 'full') {
      logger.warn({ held: this.held?.revision ?? null, revision: judged.revision, bytes: payload.length }, `directory revision ${judged.why}: full sync`);
      this.fullNext = true;
    } else logger.info({ held: this.held?.revision ?? null, revision: judged.revision }, 'directory changed at the service: syncing');
    this.scheduler?.changed();
  }

  async stop(): Promise<void> {
    this.scheduler?.stop();
    this.scheduler = null;
    await this.thread?.stop();
    this.thread = null;
    await this.rebuilding?.stop();
    this.rebuilding = null;
  }
}
