import type { Logger } from 'pino';
import type { Component } from '../lifecycle.js';
import type { Timers } from '../util/clock.js';
import { recordCacheChange, type CacheRebuild } from './cacheAudit.js';
import { CacheConnection, type CacheChange } from './cacheConnection.js';
import { appendOnly, CheckpointThread, sqliteCheckpoints } from './checkpointThread.js';
import type { CredentialCache } from './credentialCache.js';
import { cachePath, openStateDatabase, statePath, type Db } from './database.js';
import { EventLog, type WireEvent } from './eventLog.js';
import { GuestLinkStore } from './guestLinkStore.js';
import { PendingWrites } from './pendingWrites.js';
import { ReplayCache } from './replayCache.js';
import { writeRuntimeStatus, type BrokerRefusal, type CacheRuntime, type EmergencyRuntime, type RuntimeStatus } from './runtimeStatus.js';
import { WalSync } from './walSync.js';
import { SyslogCursor } from './syslogSource.js';

export interface AgentStoreOptions {
  dataDir: string;
  agentId: string;
  maxEvents: number;
  /** Events go out over MQTT: unpublished ones are never evicted. */
  keepUnpublished: boolean;
  /** For guest links received over MQTT. */
  resourceIds: ReadonlySet<number>;
  maxGuestLinks: number;
  pid: number;
  wallNow: () => number;
  timers: Timers;
  logger: Logger;
  /** How a damaged cache is rebuilt (said in the log and the audit event): `automatic` with a service (default `manual`). */
  cacheRebuild?: CacheRebuild;
  /** The agent's syslog export is on: events the receiver has not had are never evicted (syslogSource.ts). */
  syslogExport?: boolean;
}

/** How long the daemon's connection waits for another process's write lock before queueing the write. */
const DAEMON_BUSY_TIMEOUT_MS = 20;

/**
 * How long after a write state.db's checkpoint thread is asked for a checkpoint: one every 15 s at most while
 * events are written (SQLite's own at 1,000 pages came every 14 s in the tap benchmark), none while nothing is.
 */
const CHECKPOINT_AFTER_MS = 15_000;

/**
 * The daemon's databases. The cache (cache.db: users, credentials, guest links) is written by syncs and imports;
 * the state (state.db: the audit log and outbox, the replay cache, the daemon's status) only by the daemon, so
 * its frequent writes never wait for a sync or an import holding the cache's write lock. Both connections have a
 * short busy timeout: a write that cannot be made at once (busy, disk full) waits in `writes` instead of
 * freezing the event loop with a relay energized.
 */
export class AgentStore implements Component {
  readonly name = 'store';
  readonly writes: PendingWrites;
  /** The cache (cache.db), or the damage found in it (cacheConnection.ts). */
  readonly cache: CacheConnection;
  private state_: Db | null = null;
  private events_: EventLog | null = null;
  private syslogCursor_: SyslogCursor | null = null;
  private walSync: WalSync | null = null;
  private checkpoints: CheckpointThread | null = null;
  private checkpointTimer: unknown = null;
  /** Told when events are durable (the outbox), and of each event as it is written (live notifications). */
  private readonly durableListeners: Array<() => void> = [];
  private readonly eventListeners: Array<(event: WireEvent) => void> = [];
  private readonly status: RuntimeStatus;

  constructor(private readonly options: AgentStoreOptions) {
    this.writes = new PendingWrites({
      timers: options.timers,
      logger: options.logger,
      runWrite: (write) => (this.walSync ? this.walSync.run(write) : write()),
    });
    this.status = { pid: options.pid, startedAt: new Date(options.wallNow()).toISOString(), stoppedAt: null, readers: {} };
    this.cache = new CacheConnection(cachePath(options.dataDir), { busyTimeoutMs: DAEMON_BUSY_TIMEOUT_MS, wallNow: options.wallNow });
    this.cache.onChange((change) => this.cacheChanged(change));
  }

  start(): void {
    // Checkpoints (the log copied into the database, with a sync before and after) on a thread of their own: the
    // daemon's connection only appends to the log (checkpointThread.ts). The thread opens state.db at its first
    // checkpoint, so it starts first: a missing worker fails the start before any database is open.
    const checkpoints = new CheckpointThread(statePath(this.options.dataDir), {
      onError: (message) => this.options.logger.warn({ message }, 'state database checkpoint failed: tried again at the next'),
      onGone: (message) => {
        this.options.logger.error({ message }, "state database checkpoints are back on the daemon's own thread (SQLite's default)");
        this.checkpoints = null;
        if (this.state_?.open) sqliteCheckpoints(this.state_);
      },
    });
    checkpoints.start();
    this.checkpoints = checkpoints;
    try {
      // A damaged cache does not stop the start: the daemon runs without it (every credential refused) and says so.
      this.cache.open();
      this.state_ = openStateDatabase(statePath(this.options.dataDir), { busyTimeoutMs: DAEMON_BUSY_TIMEOUT_MS });
    } catch (err) {
      // A component whose start failed is not stopped: what it opened is closed here.
      this.cache.close();
      this.checkpoints = null;
      void checkpoints.stop();
      throw err;
    }
    appendOnly(this.state_);
    // state.db's writes are committed at once and synced right after on libuv's thread pool: the event loop never
    // waits for the disk, neither before nor after a relay moves (a crash of the process loses nothing).
    this.walSync = new WalSync(this.state_, {
      timers: this.options.timers,
      onError: (err, failures) => {
        // One line at the first failure and then at powers of two: a failing disk must not also flood the journal.
        if ((failures & (failures - 1)) === 0)
          this.options.logger.error({ err, failures }, 'cannot sync the state database: retrying; events wait to be published');
      },
    });
    this.walSync.onSynced(() => this.checkpointSoon());
    const syslogCursor = this.options.syslogExport ? new SyslogCursor(this.state_, this.writes) : null;
    this.syslogCursor_ = syslogCursor;
    this.events_ = new EventLog(this.state_, {
      agentId: this.options.agentId,
      maxEvents: this.options.maxEvents,
      keepUnpublished: this.options.keepUnpublished,
      ...(syslogCursor ? { keepFrom: () => syslogCursor.nextUnsent() } : {}),
      onOverCap: (oldest) =>
        this.options.logger.warn(
          { oldestUnpublished: oldest, maxEvents: this.options.maxEvents },
          'audit log past agent.maxEvents: events the broker has not acknowledged are kept, never evicted (see door-agent status)',
        ),
      writes: this.writes,
      walSync: this.walSync,
      onAppend: () => {
        for (const listener of this.durableListeners) listener();
      },
      onWritten: (event) => {
        for (const listener of this.eventListeners) listener(event);
      },
    });
    this.saveStatus();
    this.cache.announce();
  }

  async stop(): Promise<void> {
    this.status.stoppedAt = new Date(this.options.wallNow()).toISOString();
    this.saveStatus();
    this.writes.flush();
    this.writes.stop();
    // Detached first: a sync finishing meanwhile must not ask for a checkpoint again. Stopped before the daemon's
    // connection closes (its close makes the last checkpoint, as SQLite does); a checkpoint under way is waited for.
    const checkpoints = this.checkpoints;
    this.checkpoints = null;
    if (this.checkpointTimer !== null) this.options.timers.clearTimeout(this.checkpointTimer);
    this.checkpointTimer = null;
    await checkpoints?.stop();
    if (this.state_?.open) this.walSync?.syncNow();
    this.walSync?.close();
    this.walSync = null;
    this.state_?.close();
    this.state_ = null;
    this.cache.close();
  }

  /** Writes were made durable: a checkpoint within CHECKPOINT_AFTER_MS, unless one is due already. */
  private checkpointSoon(): void {
    if (this.checkpointTimer !== null || !this.checkpoints) return;
    this.checkpointTimer = this.options.timers.setTimeout(() => {
      this.checkpointTimer = null;
      this.checkpoints?.request();
    }, CHECKPOINT_AFTER_MS);
  }

  /** The cache (cache.db); throws CacheDamagedError while it is damaged. */
  get db(): Db {
    return this.cache.db;
  }

  /** The daemon's state (state.db). */
  get state(): Db {
    if (!this.state_) throw new Error('the store is not started');
    return this.state_;
  }

  get events(): EventLog {
    if (!this.events_) throw new Error('the store is not started');
    return this.events_;
  }

  /** How far the syslog export is sure of (with `syslogExport`). */
  get syslogCursor(): SyslogCursor {
    if (!this.syslogCursor_) throw new Error('the store is not started, or has no syslog export');
    return this.syslogCursor_;
  }

  /** Called once per event written, with the event (the MQTT outbox then publishes it). */
  /** `listener` hears of each event as it is committed (before it is durable: not for the outbox). */
  onEventWritten(listener: (event: WireEvent) => void): void {
    this.eventListeners.push(listener);
  }

  /** `listener` is told when events are durable: the outbox may publish them. */
  onEventsDurable(listener: () => void): void {
    this.durableListeners.push(listener);
  }

  credentials(): CredentialCache {
    return this.cache.credentials();
  }

  replayCache(): ReplayCache {
    return new ReplayCache(this.state, this.writes);
  }

  /** On whichever cache is in place (a rebuilt one replaces the damaged one). */
  guestLinks(): GuestLinkStore {
    return new GuestLinkStore(() => this.db, this.options.resourceIds, this.options.maxGuestLinks);
  }

  /**
   * Cache writes that must never hold up the pending writes of state.db: none is made while the cache is damaged
   * (what it would have stored comes again after the rebuild), and one that finds damage is dropped, not retried.
   */
  readonly cacheWrites = {
    run: (key: string, write: () => void): void => {
      if (this.cache.damage)
        return void this.options.logger.warn({ write: key }, 'not written: the cache is damaged (it comes again once the cache is rebuilt)');
      this.writes.run(key, () => {
        try {
          write();
        } catch (err) {
          if (!this.cache.failed(err)) throw err;
        }
      });
    },
  };

  /** An attempt to rebuild the damaged cache failed (shown by `door-agent status`). */
  setCacheRebuildFailed(error: string): void {
    if (!this.status.cache || this.status.cache.damagedSince === null) return;
    this.status.cache.lastAttempt = { at: new Date(this.options.wallNow()).toISOString(), error };
    this.saveStatus();
  }

  /** The cache's damage and its last rebuild, as `door-agent status` shows them. */
  private cacheChanged(change: CacheChange): void {
    const iso = (ms: number) => new Date(ms).toISOString();
    const cache: CacheRuntime =
      change.kind === 'damaged'
        ? { damagedSince: iso(change.damage.since), error: change.damage.error, rebuiltAt: null, keptAs: null }
        : { damagedSince: null, error: null, rebuiltAt: iso(this.options.wallNow()), keptAs: change.keptAs };
    this.status.cache = cache;
    this.saveStatus();
    const { logger, wallNow, cacheRebuild } = this.options;
    if (this.events_) recordCacheChange(change, { events: this.events_, logger, rebuild: cacheRebuild ?? 'manual', at: wallNow() });
  }

  /** A directory revision arrived over MQTT (push is active; shown by `door-agent status`). */
  setDirectoryPush(revision: number | null): void {
    if (this.status.push && this.status.push.lastRevision === revision) return; // a flood of the same revision writes nothing
    this.status.push = { lastRevision: revision, at: new Date(this.options.wallNow()).toISOString() };
    this.saveStatus();
  }

  /** The topics the broker refuses now (shown by `door-agent status`). */
  setBrokerRefusals(refused: BrokerRefusal[]): void {
    this.status.refused = refused;
    this.saveStatus();
  }

  /** A reader came or went (shown by `door-agent status`); keyed by readerStatusKey. */
  setReaderConnected(readerKey: string, connected: boolean): void {
    this.status.readers[readerKey] = connected;
    this.saveStatus();
  }

  /** The power inputs as they are now (shown by `door-agent status`). */
  setPower(power: NonNullable<RuntimeStatus['power']>): void {
    this.status.power = power;
    this.saveStatus();
  }

  /** The emergency input as it reads now (shown by `door-agent status`). */
  setEmergency(emergency: EmergencyRuntime): void {
    this.status.emergency = emergency;
    this.saveStatus();
  }

  /** An OSDP reader's secure channel as it is now (shown by `door-agent status`); keyed by readerStatusKey. */
  setReaderChannel(readerKey: string, channel: string): void {
    this.status.readerChannels ??= {};
    this.status.readerChannels[readerKey] = channel;
    this.saveStatus();
  }

  /** What a reader says it is (a PN532's firmware version), shown by `door-agent status`; keyed by readerStatusKey. */
  setReaderIdentity(readerKey: string, identity: string): void {
    this.status.readerIdentities ??= {};
    this.status.readerIdentities[readerKey] = identity;
    this.saveStatus();
  }

  private saveStatus(): void {
    const snapshot = structuredClone(this.status);
    this.writes.run('runtime', () => {
      if (this.state_?.open) writeRuntimeStatus(this.state_, snapshot);
    });
  }
}
