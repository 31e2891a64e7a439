import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { SyncRunAnswer } from '../../../api/identity.js';
import { fullJitterDelay } from '../../../util/backoff.js';
import { systemTimers, type Clock, type Timers } from '../../../util/clock.js';
import { BadRequest } from '../../badRequest.js';
import type { Directory } from '../../directory.js';
import type { LdapSourceOptions } from '../../options.js';
import type { PublishKind } from '../../publishQueue.js';
import { SoleLeader, type Leadership } from '../../sql/leadership.js';
import type { SqlDb } from '../../sql/sqlDb.js';
import type { UserStore } from '../../users.js';
import { readHeldState } from './heldState.js';
import { LdapReadError, type LdapReader, type LdapSnapshot } from './ldapEntries.js';
import { LdapClientReader } from './ldapReader.js';
import type { LdapSyncControl } from './ldapSyncControl.js';
import { applyPlan } from './syncApply.js';
import { judgePlan } from './syncGuard.js';
import { planChangesNothing, planSync, zeroCounts, type SyncPlan } from './syncPlan.js';
import { SyncRecords, type RunOutcome } from './syncRecords.js';

/** How long a sync holds the lease without renewing it (after the read, and at each transaction). */
const LEASE_MS = 10 * 60_000;
/** After a failed scheduled sync: full jitter under 1 min, doubling, at most intervalMinutes. */
const FIRST_RETRY_MS = 60_000;
/** The shortest wait between two scheduled syncs (a full-jitter draw may be near 0). */
const MIN_DELAY_MS = 1_000;
/** The share of intervalMinutes a scheduled sync moves by, either way, so processes and sites do not sync in step. */
const INTERVAL_JITTER = 0.1;
/** Skipped entries named one by one in the log (the rest are counted). */
const SKIPS_LOGGED = 20;

export interface LdapSyncDeps {
  db: SqlDb;
  users: UserStore;
  directory: Directory;
  options: LdapSourceOptions;
  /** The label of a PIN LDAP gives: the first of server.pinLabels. */
  pinLabel: string;
  clock: Clock;
  /** The schedule's timer (tests: a manual one). */
  timers?: Timers;
  /** [0, 1): the schedule's jitter. */
  random?: () => number;
  logger: Logger;
  /** The scheduled sync runs only while this process leads; absent: this process alone (SoleLeader). */
  leadership?: Leadership;
  /** Owes the doors a message (publishQueue.ts), in the caller's transaction: a suspended guest's links. */
  owe(kind: PublishKind, subject?: string): Promise<void>;
  /** Makes the reader of each sync; default: LdapClientReader on `options` (the password file read at each sync). */
  reader?: () => LdapReader;
  /** This process in the lease and the refusal's words; default host:pid with a suffix of its own. */
  holder?: string;
}

/**
 * The LDAP sync (docs/identity-sources.md, "LDAP and Active Directory"): a read of the directory, the plan of what
 * changed, the guard, and the plan applied (syncPlan.ts, syncGuard.ts, syncApply.ts), one at a time across every
 * service process (a lease in identity_sync_state), each run recorded (syncRecords.ts). Scheduled every
 * intervalMinutes with jitter while this process leads, after a failure sooner with backoff; on demand any time
 * (runNow, the route and the console), refused with 409 while another runs.
 */
export class LdapSync implements LdapSyncControl {
  private readonly records: SyncRecords;
  private readonly timers: Timers;
  private readonly random: () => number;
  private readonly leadership: Leadership;
  private readonly makeReader: () => LdapReader;
  private readonly holder: string;
  private current: Promise<SyncRunAnswer> | null = null;
  private timer: unknown = null;
  /** Scheduled syncs failed in a row (the backoff's attempt). */
  private failures = 0;
  private started = false;
  private closed = false;

  constructor(private readonly deps: LdapSyncDeps) {
    this.holder = deps.holder ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.records = new SyncRecords(deps.db, this.holder);
    this.timers = deps.timers ?? systemTimers;
    this.random = deps.random ?? Math.random;
    this.leadership = deps.leadership ?? new SoleLeader();
    this.makeReader = deps.reader ?? (() => new LdapClientReader(deps.options, { logger: deps.logger }));
  }

  /** Starts the schedule: while this process leads, the next sync at the stored next_at (at once when none is due later). */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.leadership.onChange((leading) => {
      if (leading) void this.resume();
      else this.clearTimer();
    });
    if (this.leadership.leading) void this.resume();
  }

  async runNow(request: { trigger: string; confirmSuspensions?: number }): Promise<SyncRunAnswer> {
    return this.run(request.trigger, request.confirmSuspensions);
  }

  /** Stops the schedule and waits for a sync under way to end. */
  async close(): Promise<void> {
    this.closed = true;
    this.clearTimer();
    await this.current?.catch(() => undefined);
  }

  private clearTimer(): void {
    if (this.timer !== null) this.timers.clearTimeout(this.timer);
    this.timer = null;
  }

  /** The schedule picked up from the database: a restart or a new leader keeps the stored next_at. */
  private async resume(): Promise<void> {
    let delay = 0;
    try {
      const at = await this.records.nextAt();
      if (at !== null) delay = Math.max(0, at - this.deps.clock.wallNow());
    } catch (err) {
      delay = FIRST_RETRY_MS;
      this.deps.logger.warn({ err: { message: (err as Error).message } }, 'LDAP sync: cannot read its schedule; trying in 1 min');
    }
    this.arm(delay);
  }

  private arm(delay: number): void {
    if (this.closed || !this.started || !this.leadership.leading) return;
    this.clearTimer();
    this.timer = this.timers.setTimeout(() => {
      this.timer = null;
      void this.scheduled();
    }, delay);
  }

  /** A scheduled sync, then the next one's time stored and armed. */
  private async scheduled(): Promise<void> {
    if (this.closed || !this.leadership.leading) return;
    const intervalMs = this.deps.options.intervalMinutes * 60_000;
    let delay = intervalMs * (1 - INTERVAL_JITTER + 2 * INTERVAL_JITTER * this.random());
    const backOff = () => {
      delay = Math.max(MIN_DELAY_MS, fullJitterDelay(this.failures, { initialMs: FIRST_RETRY_MS, maxMs: intervalMs }, this.random));
      this.failures++;
    };
    try {
      const run = await this.run('schedule');
      if (run.outcome === 'failed') backOff();
      else this.failures = 0;
    } catch (err) {
      // Another sync runs (on demand, or in another process): the next one on the schedule. Anything else (the
      // database out of reach) is a failure, tried again sooner.
      if (!(err instanceof BadRequest)) {
        this.deps.logger.warn({ err: { message: (err as Error).message } }, 'LDAP sync: the scheduled sync could not run');
        backOff();
      }
    }
    if (this.closed) return;
    delay = Math.round(delay);
    try {
      await this.records.setNextAt(this.deps.clock.wallNow() + delay);
    } catch (err) {
      this.deps.logger.warn({ err: { message: (err as Error).message } }, 'LDAP sync: cannot store the next sync time');
    }
    this.arm(delay);
  }

  /** One sync, never two at once in this process (nor, by the lease, in any). */
  private run(trigger: string, confirmSuspensions?: number): Promise<SyncRunAnswer> {
    if (this.current !== null) return Promise.reject(new BadRequest('an LDAP sync is running in this service process: ask again when it has ended', 409));
    const run = this.leased(trigger, confirmSuspensions).finally(() => {
      this.current = null;
    });
    this.current = run;
    return run;
  }

  private async leased(trigger: string, confirmSuspensions?: number): Promise<SyncRunAnswer> {
    const { clock } = this.deps;
    const now = clock.wallNow();
    if (!(await this.records.takeLease(now, now + LEASE_MS))) {
      const by = await this.records.leaseHolder(now);
      throw new BadRequest(`an LDAP sync is running${by === null ? '' : ` (in ${by})`}: ask again when it has ended`, 409);
    }
    try {
      const runId = await this.records.begin(trigger, now);
      const started = clock.monoNow();
      const outcome = await this.sync(confirmSuspensions);
      const answer = await this.records.finish(runId, clock.wallNow(), outcome);
      this.report(answer, outcome, Math.round(clock.monoNow() - started));
      return answer;
    } finally {
      await this.records
        .releaseLease()
        .catch((err: unknown) => this.deps.logger.warn({ err: { message: (err as Error).message } }, 'LDAP sync: cannot release its lease'));
    }
  }

  /** Read, plan, guard, apply: how the run ended (never throws: a failure is an outcome). */
  private async sync(confirmSuspensions?: number): Promise<RunOutcome> {
    const { options } = this.deps;
    const failed = (reason: string, counts = zeroCounts()): RunOutcome => ({ outcome: 'failed', reason, counts, wouldSuspend: null, sample: null });
    let snapshot: LdapSnapshot;
    try {
      snapshot = await this.makeReader().read();
    } catch (err) {
      // Nothing was read, so nothing is changed: every user stays as they are.
      return failed(err instanceof LdapReadError ? err.message : `cannot read LDAP at ${options.url}: ${(err as Error).message}`);
    }
    const counts = zeroCounts(snapshot.people.length, snapshot.groups.length);
    let plan: SyncPlan;
    try {
      await this.renewLease();
      const cardsMapped = options.attributes.card !== undefined || options.attributes.pin !== undefined;
      const held = await readHeldState(this.deps.db, snapshot, cardsMapped);
      plan = planSync(held, snapshot, {
        onMissing: options.onMissing,
        cards: cardsMapped ? { card: options.attributes.card !== undefined, pin: options.attributes.pin !== undefined, pinLabel: this.deps.pinLabel } : null,
      });
    } catch (err) {
      return failed(`cannot read the service's database: ${(err as Error).message}`, counts);
    }
    counts.skipped = plan.counts.skipped;
    this.logSkips(plan);
    const verdict = judgePlan(plan, options.maxSuspendShare, confirmSuspensions);
    if (verdict.held) return { outcome: 'held', reason: verdict.reason, counts, wouldSuspend: verdict.wouldSuspend, sample: verdict.sample };
    if (!planChangesNothing(plan)) {
      try {
        await applyPlan(plan, Object.assign({ renewLease: () => this.renewLease() }, this.deps), counts);
      } catch (err) {
        // What committed before it stays (counted); the next sync plans from what is then held.
        return failed(`cannot write the service's database: ${(err as Error).message}`, counts);
      }
    }
    return { outcome: 'ok', reason: null, counts, wouldSuspend: null, sample: null };
  }

  private async renewLease(): Promise<void> {
    if (!(await this.records.renewLease(this.deps.clock.wallNow() + LEASE_MS))) {
      throw new Error(`this sync no longer holds its lease (it ran over ${LEASE_MS / 60_000} min without renewing it)`);
    }
  }

  private logSkips(plan: SyncPlan): void {
    const { logger } = this.deps;
    if (plan.skips.length > 0) {
      logger.warn({ skipped: plan.skips.length, entries: plan.skips.slice(0, SKIPS_LOGGED) }, 'LDAP sync: entries skipped (each with its reason)');
    }
    for (const clash of plan.nameClashes) {
      // Doors match access.groups by name: the LDAP group's members get the other group's doors too.
      logger.warn(
        { group: clash.name, dn: clash.dn },
        `LDAP sync: LDAP group ${clash.dn} is named "${clash.name}" as a local user group is: its members get the doors of access.groups "${clash.name}"`,
      );
    }
    // A card is named by its last 4 digits at most, a PIN not at all (syncPlan.ts).
    if (plan.cardNotes.length > 0) {
      logger.warn({ cards: plan.cardNotes.slice(0, SKIPS_LOGGED) }, 'LDAP sync: cards or PINs not given');
    }
  }

  private report(answer: SyncRunAnswer, outcome: RunOutcome, ms: number): void {
    const { logger } = this.deps;
    const fields = { run: answer.run_id, trigger: answer.trigger, ms, counts: answer.counts };
    if (outcome.outcome === 'held') {
      logger.error({ ...fields, wouldSuspend: outcome.wouldSuspend, sample: outcome.sample }, `LDAP sync held: ${outcome.reason}`);
    } else if (outcome.outcome === 'failed') {
      logger.warn(fields, `LDAP sync failed: ${outcome.reason}`);
    } else {
      const { entries, groups, skipped, ...changes } = answer.counts;
      const changed = Object.values(changes).some((n) => n > 0);
      if (changed) logger.info(fields, 'LDAP sync applied');
      else logger.debug(fields, 'LDAP sync: nothing changed');
    }
  }
}
