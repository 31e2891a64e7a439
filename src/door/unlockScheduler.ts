import type { Logger } from 'pino';
import { isClockTrusted } from '../core/decision.js';
import type { LocalTime, TimeMapping } from '../core/schedule.js';
import { NO_MEMORY, scheduleState, type ScheduleMemory, type ScheduleState } from '../core/unlockSchedule.js';
import type { Clock, Timers } from '../util/clock.js';
import type { LockController, LockSnapshot } from './lockController.js';
import { withProps } from '../core/objects.js';

/** The lock causes of the schedule's own moves: a hold it made, and its end. */
export const SCHEDULE_UNLOCK_CAUSE = 'unlock schedule';
const SCHEDULE_LOCK_CAUSE = 'unlock schedule ended';
/**
 * A lock by hand (a lock command from an operator, Home Assistant or the service) suspends the rest of a run;
 * the automatic ones (a timer, a door closing, a lockdown, the schedule's own end) do not.
 */
function lockedByHand(cause: string): boolean {
  return cause.startsWith('remote command');
}

export type ScheduleEventType = 'first_person_in' | 'schedule_waiting_for_clock' | 'schedule_clock_synchronized' | 'schedule_waiting_for_interlock';

/** The schedule is looked at again at least this often: a wall clock set by NTP moves under the timers. */
const RECHECK_MS = 60_000;
const MAX_TIMER_MS = 2 ** 31 - 1;
const QUARTER_MS = 15 * 60 * 1000;

export interface UnlockSchedulerDeps {
  hours: TimeMapping;
  firstPersonIn: boolean;
  holidays: () => ReadonlySet<string>;
  lockdown: () => boolean;
  controller: LockController;
  localTime: (epochMs: number) => LocalTime;
  clock: Clock;
  /** Whether the wall clock is synchronized (NTP, or agent.rtc): the hours are followed only then. */
  clockSynchronized: () => boolean;
  timers: Timers;
  logger: Logger;
  loadMemory: () => ScheduleMemory | undefined;
  /** Makes the memory durable (the write queue: a busy database delays it, never loses it). */
  saveMemory: (memory: ScheduleMemory) => void;
  /** Records an audit event (after the relay has acted). */
  record: (type: ScheduleEventType, data: Record<string, unknown>) => void;
  /** The schedule's state changed (for the published door state). */
  onStateChange?: (state: ScheduleState) => void;
  /**
   * The door of its interlock that keeps this one from unlocking now, or null (door/doorGroups.ts: the gate every
   * unlock asks). Absent: the door is in no interlock. The caller calls `evaluate` again when that door changes.
   */
  interlockBlocker?: () => string | null;
}

/**
 * Holds a door unlocked during its schedule's hours (issue 14): from the start of a run (or its first person in)
 * to its end, except on holidays, in lockdown, after a lock by hand during the run, or on a clock nobody set
 * (neither synchronized nor backed by an RTC, issue 32 item 11: the door stays locked, recorded once as
 * schedule_waiting_for_clock, and follows its hours from the evaluation after the clock is synchronized). A door
 * of an interlock is held only when its gate allows it (also a timed unlock in progress, which otherwise runs out as
 * it is), else the schedule waits until the door that blocks has locked and closed (recorded once as
 * schedule_waiting_for_interlock; docs/areas.md).
 * At the end of a run the door locks, unless someone held it open since (it is then theirs to lock).
 */
export class UnlockScheduler {
  private memory: ScheduleMemory = NO_MEMORY;
  private timer: unknown = null;
  private stopped = false;
  /** Started (its memory read): before that, nothing asks it to move the door. */
  private started = false;
  private waitedForClock = false;
  /** The door of the interlock the schedule's unlock waits for (recorded once per wait), or null. */
  private waitingFor: string | null = null;
  private last: ScheduleState | null = null;
  private cached: {
    key: { quarter: number; holidays: ReadonlySet<string>; lockdown: boolean; memory: ScheduleMemory; synchronized: boolean };
    state: ScheduleState;
  } | null = null;

  constructor(private readonly deps: UnlockSchedulerDeps) {}

  start(): void {
    try {
      this.memory = this.deps.loadMemory() ?? NO_MEMORY;
    } catch (err) {
      this.deps.logger.error({ err }, 'cannot read the unlock schedule memory: starting without it');
    }
    this.started = true;
    this.evaluate();
  }

  stop(): void {
    this.stopped = true;
    this.clearTimer();
  }

  private clearTimer(): void {
    if (this.timer !== null) this.deps.timers.clearTimeout(this.timer);
    this.timer = null;
  }

  /** The schedule's state now (for status and the published door state). */
  state(): ScheduleState {
    return this.compute(this.deps.clock.wallNow());
  }

  /** A member of firstPersonIn was granted: during the hours, the schedule starts. */
  onFirstPerson(holders: readonly unknown[]): void {
    const now = this.deps.clock.wallNow();
    if (this.compute(now).state !== 'waiting_for_first_person') return;
    this.remember(withProps(this.memory, { firstPersonAt: now }));
    this.deps.record('first_person_in', { holders });
    this.deps.logger.info('first person in: the unlock schedule starts');
    this.evaluate();
  }

  /** A lock change of the door: a lock by hand during the run holds the door locked until the next run. */
  onLockChange(snapshot: LockSnapshot): void {
    if (snapshot.state !== 'LOCKED' || !lockedByHand(snapshot.cause)) return;
    const current = this.compute(this.deps.clock.wallNow());
    if (current.state !== 'unlocked' || current.runStart === null) return;
    this.remember(withProps(this.memory, { suspendedRun: current.runStart }));
    this.deps.logger.info({ cause: snapshot.cause }, 'locked during the unlock schedule: it resumes with its next run');
    this.evaluate();
  }

  /** Something the schedule depends on changed (lockdown, holidays): look again now. */
  evaluate(): void {
    if (this.stopped || !this.started) return;
    this.clearTimer();
    const now = this.deps.clock.wallNow();
    const state = this.compute(now);
    this.reportClock(state);
    const lock = this.deps.controller.snapshot();
    // The schedule takes the door over (a locked door, or a timed unlock in progress: the first person's own card, a
    // tap just before the hours or one the fire override let through) only when its interlock allows it. Refused, a
    // timed unlock runs out as it is, and the schedule waits for the door that blocks to lock and close.
    const takesOver = state.state === 'unlocked' && (lock.state === 'LOCKED' || !lock.heldOpen);
    const blocker = takesOver ? (this.deps.interlockBlocker?.() ?? null) : null;
    this.reportInterlock(blocker);
    if (takesOver) {
      if (blocker === null) this.deps.controller.unlock(null, SCHEDULE_UNLOCK_CAUSE);
    } else if (state.state !== 'unlocked' && lock.state === 'UNLOCKED' && lock.cause === SCHEDULE_UNLOCK_CAUSE) {
      this.deps.controller.lock(SCHEDULE_LOCK_CAUSE);
    }
    if (this.last === null || this.last.state !== state.state || this.last.nextChange !== state.nextChange) {
      this.last = state;
      this.deps.onStateChange?.(state);
    }
    const untilChange = state.nextChange === null ? Infinity : Math.max(0, state.nextChange - now);
    // The unlock or lock above may have led here again (a partner's lock tells this schedule to look again), and that
    // evaluation set a timer of its own: one timer only.
    this.clearTimer();
    this.timer = this.deps.timers.setTimeout(
      () => {
        this.timer = null;
        this.evaluate();
      },
      Math.min(untilChange, RECHECK_MS, MAX_TIMER_MS),
    );
  }

  /** A wait for the interlock goes into the audit log once, when it begins (the unlock is recorded when it happens). */
  private reportInterlock(blocker: string | null): void {
    if (blocker !== null && this.waitingFor === null) {
      this.deps.logger.info({ blockedBy: blocker }, 'the unlock schedule waits: another door of the interlock is unlocked or open');
      this.deps.record('schedule_waiting_for_interlock', { blocked_by: blocker });
    }
    this.waitingFor = blocker;
  }

  /** The wait for the clock goes into the audit log once, and so does its end. */
  private reportClock(state: ScheduleState): void {
    if (state.state === 'waiting_for_clock' && !this.waitedForClock) {
      this.waitedForClock = true;
      const reason = isClockTrusted(this.deps.clock.wallNow()) ? 'clock not synchronized (no RTC configured)' : 'clock before 2024-01-01 (not trusted)';
      this.deps.logger.warn({ reason }, 'the unlock schedule waits for the clock: the door stays locked');
      this.deps.record('schedule_waiting_for_clock', { reason });
    } else if (state.state !== 'waiting_for_clock' && this.waitedForClock) {
      this.waitedForClock = false;
      this.deps.logger.info({ state: state.state }, 'the clock is synchronized: the unlock schedule follows its hours');
      this.deps.record('schedule_clock_synchronized', { state: state.state });
    }
  }

  /**
   * The state at `at`, reused within a quarter hour while its inputs are the same: a schedule open all week looks
   * through some 1,500 quarter hours for its next change, and the published state asks at every lock change.
   */
  private compute(at: number): ScheduleState {
    const { hours, firstPersonIn, localTime } = this.deps;
    const key = {
      quarter: Math.floor(at / QUARTER_MS),
      holidays: this.deps.holidays(),
      lockdown: this.deps.lockdown(),
      memory: this.memory,
      synchronized: this.deps.clockSynchronized(),
    };
    const cached = this.cached;
    if (
      cached &&
      cached.key.quarter === key.quarter &&
      cached.key.holidays === key.holidays &&
      cached.key.lockdown === key.lockdown &&
      cached.key.memory === key.memory &&
      cached.key.synchronized === key.synchronized
    ) {
      return cached.state;
    }
    const state = scheduleState({ hours, firstPersonIn, holidays: key.holidays }, this.memory, {
      at,
      localTime,
      lockdown: key.lockdown,
      clockTrusted: isClockTrusted(at),
      clockSynchronized: key.synchronized,
    });
    this.cached = { key, state };
    return state;
  }

  private remember(memory: ScheduleMemory): void {
    this.memory = memory;
    try {
      this.deps.saveMemory(memory);
    } catch (err) {
      this.deps.logger.error({ err }, 'cannot save the unlock schedule memory (in force now, but may not survive a restart)');
    }
  }
}
