import type { Logger } from 'pino';
import { revisionPayload } from '../protocol/directory.js';
import { guestLinkIndexPayload, guestLinkIndexTopic } from '../protocol/guestLinkIndex.js';
import { guestLinkPayload, guestLinkRevocationPayload } from '../protocol/guestLinks.js';
import { holidaysPayload, holidaysTopic, lockdownPayload, lockdownTopic } from '../protocol/lockdown.js';
import type { Clock } from '../util/clock.js';
import { readRevision } from './directory.js';
import type { ServiceMqtt } from './doorsMqtt.js';
import { revokeLinksNotStored, revokedLinkIds, storedLink, storedLinks, type StoredLink } from './linkStore.js';
import { LockdownStore, issueRetained, lockdownMessage, scopeOf, type StoredLockdown } from './lockdowns.js';
import type { OwedMessage, PublishQueue } from './publishQueue.js';
import type { ChangeFeed } from './sql/changeFeed.js';
import type { Leadership } from './sql/leadership.js';
import type { SqlDb } from './sql/sqlDb.js';

/** Rows read from the queue at a time. */
const BATCH = 200;
/** A message the broker has not acknowledged by then stays owed (sent again at the next turn). */
const ACK_TIMEOUT_MS = 10_000;
/** The queue is looked at this often anyway: a notification lost with its connection costs at most this long. */
const SWEEP_MS = 5000;
/** Every live guest link and revocation is signed and published again this often (doors allow 7 days by default). */
const RESIGN_INTERVAL_MS = 24 * 3600 * 1000;
/** The broker's retained guest links are taken until none has come for this long... */
const RETAINED_QUIET_MS = 1000;
/** ...and for at most this long. */
const RETAINED_MAX_MS = 5000;
/** A guest link's id as the service gives them (any other topic under P/guest-links/ is not one of its links). */
const LINK_ID = /^[1-9][0-9]{0,14}$/;

export interface StatePublisherDeps {
  db: SqlDb;
  queue: PublishQueue;
  feed: ChangeFeed;
  leadership: Leadership;
  mqtt: ServiceMqtt;
  clock: Clock;
  logger: Logger;
  /** The holidays of server.holidaysFile (read at start); null without one: nothing is published on P/holidays. */
  holidays: string[] | null;
  resignIntervalMs?: number;
}

/**
 * Sends the doors what they are owed (publishQueue.ts), from the database's state as it is when sent: the
 * directory revision, guest links and their index, lockdowns, holidays. Only in the process that holds the
 * publisher lock (sql/leadership.ts), so each goes out once however many service processes run; a row is deleted
 * once the broker acknowledged it, so what a dead publisher left is sent by the next (within the lock's takeover,
 * about a second). A message sent twice (a publisher killed between the broker's acknowledgement and the delete)
 * is the same state with a newer issued_at: the doors take it as a repeat. A new publisher, and every connect to
 * the broker, sends everything again (the broker may have lost its retained messages); so does the daily
 * re-signing. Before a connect's or a takeover's, it looks at the guest links the broker retains: one the database
 * has neither live nor revoked (a database restored from a backup) is recorded as revoked, so its tombstone goes
 * out with the others and its id is never given again.
 */
export class StatePublisher {
  private draining: Promise<void> | null = null;
  private again = false;
  private closed = false;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly unsubscribe: () => void;
  private readonly lockdowns: LockdownStore;
  /** Ends a look at the broker's retained guest links under way when the publisher stops. */
  private readonly stopping = new AbortController();
  /** The calls of oweEverything under way (close waits for them: they write to the database). */
  private readonly owing = new Set<Promise<void>>();

  constructor(private readonly deps: StatePublisherDeps) {
    this.lockdowns = new LockdownStore(deps.db);
    this.unsubscribe = deps.feed.subscribe(
      (topic) => {
        if (topic === 'publish') this.kick();
      },
      () => this.kick(),
    );
    deps.leadership.onChange((leading) => {
      if (leading) this.oweEverything('took over as the publisher', true);
    });
    deps.mqtt.onConnected(() => {
      if (deps.leadership.leading) this.oweEverything('connected to the broker', true);
    });
    const sweep = setInterval(() => this.kick(), SWEEP_MS);
    const resign = setInterval(() => {
      if (deps.leadership.leading) this.oweEverything('daily re-signing');
    }, deps.resignIntervalMs ?? RESIGN_INTERVAL_MS);
    for (const timer of [sweep, resign]) {
      timer.unref();
      this.timers.push(timer);
    }
    if (deps.leadership.leading) this.oweEverything('started as the publisher', true);
  }

  /**
   * Owes the broker everything. `lookFirst` (a start, a connect, a takeover): first the links only the broker still
   * holds are recorded as revoked; what was owed before goes meanwhile.
   */
  private oweEverything(why: string, lookFirst = false): void {
    let looked = Promise.resolve();
    if (lookFirst) {
      this.kick();
      looked = this.revokeLinksOnlyRetained();
    }
    const done = looked
      .then(async () => {
        if (this.closed) return;
        await this.deps.queue.owe('all');
        this.kick();
      })
      .catch((err: unknown) => this.deps.logger.warn({ err, why }, 'cannot queue the retained state to publish again'))
      .finally(() => this.owing.delete(done));
    this.owing.add(done);
  }

  /**
   * Every guest link the broker retains whose id the database has neither live nor revoked, recorded as revoked
   * (linkStore.ts): unsigned, a door keeps a retained link until its tombstone comes. Waits up to
   * RETAINED_MAX_MS for the broker's retained messages, outside the publish path. Not connected: the connect does
   * it. A failure is logged and everything is still sent.
   */
  private async revokeLinksOnlyRetained(): Promise<void> {
    const { mqtt, db, clock, logger } = this.deps;
    if (!mqtt.connected) return;
    try {
      const retained = await mqtt.retainedGuestLinks(RETAINED_QUIET_MS, RETAINED_MAX_MS, this.stopping.signal);
      if (this.closed || !this.deps.leadership.leading) return;
      const ids = retained.filter((id) => LINK_ID.test(id)).map(Number);
      for (const id of await revokeLinksNotStored(db, ids, clock.wallNow())) {
        logger.warn(
          { guestLink: id },
          `guest link ${id} is retained at the broker but not in the database (the database restored from a backup, or replaced): revoked so no door keeps it and its id is not given again`,
        );
      }
    } catch (err) {
      logger.warn(
        { err },
        'cannot check the guest links the broker retains against the database: a link only the broker still holds (a database restored from a backup) stays at the doors',
      );
    }
  }

  /** Sends what is owed, now or right after the turn under way. */
  kick(): void {
    if (this.closed) return;
    if (this.draining !== null) {
      this.again = true;
      return;
    }
    this.draining = this.drain()
      .catch((err: unknown) => this.deps.logger.warn({ err }, 'publishing to the broker stopped: what is owed is sent at the next turn'))
      .finally(() => {
        this.draining = null;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  private async drain(): Promise<void> {
    const { queue, leadership, mqtt } = this.deps;
    for (;;) {
      if (this.closed || !leadership.leading || !mqtt.connected) return;
      const rows = await queue.next(BATCH);
      if (rows.length === 0) return;
      await this.send(rows);
      await queue.sent(rows);
    }
  }

  /** The rows of one batch, in order, each subject once (each is sent as it is now); the index after any link. */
  private async send(rows: OwedMessage[]): Promise<void> {
    const seen = new Set<string>();
    let links = false;
    for (const row of rows) {
      const key = `${row.kind}\u0000${row.subject}`;
      if (seen.has(key)) continue;
      seen.add(key);
      switch (row.kind) {
        case 'revision':
          await this.sendRevision();
          break;
        case 'link':
          await this.sendLink(row.subject);
          links = true;
          break;
        case 'lockdown':
          await this.sendLockdown(row.subject);
          break;
        case 'holidays':
          await this.sendHolidays();
          break;
        case 'all':
          await this.sendAll();
          links = false; // the index went with them
          break;
      }
    }
    if (links) await this.sendIndex(await storedLinks(this.deps.db));
  }

  private publish(topic: string, payload: string): Promise<void> {
    return this.deps.mqtt.publishRetained(topic, payload, ACK_TIMEOUT_MS);
  }

  /** The next issued_at of a subject, kept in the database (whichever process published the one before). */
  private issue(subject: string): Promise<number> {
    return issueRetained(this.deps.db, subject, this.deps.clock.wallNow());
  }

  private async sendRevision(): Promise<void> {
    const revision = await readRevision(this.deps.db);
    await this.publish(this.deps.mqtt.topics.directoryRevision, revisionPayload(revision));
  }

  /**
   * A link's message when it is live; its tombstone when it was revoked (an empty payload unsigned). `known`: the
   * link as already read (null: known to be gone); read by its id otherwise.
   */
  private async sendLink(id: string, known?: StoredLink | null): Promise<void> {
    const link = known === undefined ? await storedLink(this.deps.db, id) : known;
    const secret = this.deps.mqtt.secret;
    const issuedAt = await this.issue(`link:${id}`);
    const payload = link ? guestLinkPayload({ ...link }, secret, issuedAt) : guestLinkRevocationPayload(id, secret, issuedAt);
    await this.publish(this.deps.mqtt.topics.guestLink(id), payload);
  }

  /**
   * Retained P/guest-link-index: the ids of every live link (protocol/guestLinkIndex.ts), after the links' own
   * messages; a door in signed mode drops the links it holds that the index no longer lists.
   */
  private async sendIndex(live: StoredLink[]): Promise<void> {
    const payload = guestLinkIndexPayload(
      live.map((l) => l.magic_link_id),
      this.deps.mqtt.secret,
      await this.issue('index'),
    );
    await this.publish(guestLinkIndexTopic(this.deps.mqtt.topics.prefix), payload);
  }

  private async sendLockdown(scopeName: string): Promise<void> {
    const stored = await this.lockdowns.get(scopeOf(scopeName));
    if (stored) await this.publishLockdown(stored);
  }

  /** A stored lockdown's message, with the issued_at stored with it. */
  private publishLockdown(stored: StoredLockdown): Promise<void> {
    const { mqtt } = this.deps;
    return this.publish(lockdownTopic(mqtt.topics.prefix, stored.scope), lockdownPayload(stored.scope, lockdownMessage(stored), mqtt.secret, stored.issuedAt));
  }

  private async sendHolidays(): Promise<void> {
    const { holidays } = this.deps;
    if (holidays === null) return;
    const issuedAt = await this.issue('holidays');
    await this.publish(holidaysTopic(this.deps.mqtt.topics.prefix), holidaysPayload({ dates: holidays }, this.deps.mqtt.secret, issuedAt));
  }

  /**
   * Everything, signed now: every revocation (a tombstone never published would leave the old link retained),
   * every live link, the index, the lockdowns, the holidays and the revision. Unsigned, the lockdown topics are
   * shared with anyone on the broker (a Home Assistant switch): sending an ended lockdown again would lift one
   * started there since, so only an active one is sent again (an end a door missed leaves it locked down, the
   * safe side). Signed, every message is ours and the newest wins.
   */
  private async sendAll(): Promise<void> {
    const { db, mqtt } = this.deps;
    const live = await storedLinks(db);
    const liveIds = new Set(live.map((l) => l.magic_link_id));
    for (const id of await revokedLinkIds(db)) if (!liveIds.has(id)) await this.sendLink(id, null);
    for (const link of live) await this.sendLink(link.magic_link_id, link);
    await this.sendIndex(live);
    for (const l of await this.lockdowns.reissueAll(this.deps.clock.wallNow())) {
      if (mqtt.secret !== null || l.active) {
        await this.publishLockdown(l);
      }
    }
    await this.sendHolidays();
    await this.sendRevision();
  }

  /** Stops: what is being sent finishes first (it reads the database, which the caller closes after). */
  async close(): Promise<void> {
    this.closed = true;
    this.stopping.abort();
    this.unsubscribe();
    for (const timer of this.timers) clearInterval(timer);
    await Promise.all([this.draining, ...this.owing]);
  }
}
