import type { Logger } from 'pino';
import type { Component } from '../lifecycle.js';
import type { ScheduleMemory } from '../core/unlockSchedule.js';
import type { AgentStore } from '../store/agentStore.js';
import {
  readLockdown,
  readPublishedHolidays,
  readScheduleMemory,
  writeLockdown,
  writePublishedHolidays,
  writeScheduleMemory,
} from '../store/operationsState.js';
import type { Clock } from '../util/clock.js';
import type { AccessChecker } from './accessChecker.js';
import type { Door } from './door.js';
import { Lockdowns } from './lockdowns.js';
import { withProps } from '../core/objects.js';

export interface SiteOperationsDeps {
  store: AgentStore;
  doors: readonly Door[];
  checker: () => AccessChecker;
  clock: Clock;
  logger: Logger;
}

/**
 * The agent's site-wide operations state (issue 14), started after the store and before the doors: the
 * lockdowns in force and the holidays published by the service, both read back from state.db so that a restart
 * changes neither; and each door's unlock schedule memory.
 */
export class SiteOperations implements Component {
  readonly name = 'operations';
  private lockdowns_: Lockdowns | null = null;
  private holidaysIssuedAt: number | null = null;

  constructor(private readonly deps: SiteOperationsDeps) {}

  start(): void {
    const { store, logger } = this.deps;
    const lockdowns = new Lockdowns({
      doorUuids: this.deps.doors.map((d) => d.options.uuid),
      load: (scope) => readLockdown(store.state, scope),
      save: (scope, record) => store.writes.run(`lockdown-${scope}`, () => writeLockdown(store.state, scope, record)),
      record: (event) => store.events.append(event),
      wallNow: () => this.deps.clock.wallNow(),
      logger: logger.child({ component: 'lockdown' }),
    });
    lockdowns.onChange((uuid, lockedDown) => this.deps.doors.find((d) => d.options.uuid === uuid)?.lockdownChanged(lockedDown));
    this.lockdowns_ = lockdowns;
    for (const door of this.deps.doors) {
      if (lockdowns.isLockedDown(door.options.uuid)) logger.warn({ door: door.options.uuid, ...lockdowns.effective(door.options.uuid) }, 'door in lockdown');
    }
    try {
      const published = readPublishedHolidays(store.state);
      if (published) {
        this.deps.checker().setPublishedHolidays(published.dates);
        this.holidaysIssuedAt = published.issuedAt;
      }
    } catch (err) {
      logger.error({ err }, 'cannot read the holidays published by the service: the configured ones apply until they arrive again');
    }
  }

  stop(): void {}

  get lockdowns(): Lockdowns {
    if (!this.lockdowns_) throw new Error('site operations are not started');
    return this.lockdowns_;
  }

  /** Whether a door is in lockdown; before the start (never asked then) a door counts as locked down. */
  isLockedDown(doorUuid: string): boolean {
    return this.lockdowns_?.isLockedDown(doorUuid) ?? true;
  }

  get heldHolidaysIssuedAt(): number | null {
    return this.holidaysIssuedAt;
  }

  /** The switch to signed mode: the holidays stay, the issued_at an unsigned message set is forgotten. */
  forgetHolidaysIssuedAt(): void {
    const { store } = this.deps;
    this.holidaysIssuedAt = null;
    store.writes.run('holidays-issued-at', () => {
      const published = readPublishedHolidays(store.state);
      if (published) writePublishedHolidays(store.state, withProps(published, { issuedAt: null }));
    });
  }

  /** Holidays published by the service: in force at once, kept across restarts, the schedules look again. */
  applyPublishedHolidays(dates: string[], issuedAt: number | null): void {
    const { store, logger } = this.deps;
    this.deps.checker().setPublishedHolidays(dates);
    this.holidaysIssuedAt = issuedAt;
    store.writes.run('holidays', () => writePublishedHolidays(store.state, { dates, issuedAt }));
    logger.info({ holidays: dates.length }, 'holidays received from the service');
    for (const door of this.deps.doors) door.holidaysChanged();
  }

  scheduleMemory(doorUuid: string): { load: () => ScheduleMemory | undefined; save: (memory: ScheduleMemory) => void } {
    const { store } = this.deps;
    return {
      load: () => readScheduleMemory(store.state, doorUuid),
      save: (memory) => store.writes.run(`schedule-${doorUuid}`, () => writeScheduleMemory(store.state, doorUuid, memory)),
    };
  }
}
