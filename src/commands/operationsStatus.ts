import { isClockTrusted } from '../core/decision.js';
import { localTimeIn } from '../core/schedule.js';
import { NO_MEMORY, scheduleState, type ScheduleStateName } from '../core/unlockSchedule.js';
import type { AgentOptions } from '../config/options.js';
import type { Db } from '../store/database.js';
import { NO_LOCKDOWN, readLockdown, readPublishedHolidays, readScheduleMemory } from '../store/operationsState.js';
import { effectiveLockdown } from '../door/lockdowns.js';
import { isClockSynchronized } from '../util/clockSync.js';

export interface DoorOperationsView {
  lockdown: { active: boolean; scope: 'agent' | 'door' | null; by: string | null; reason: string | null; since: string | null };
  /** reason: why the door is not following its hours (waiting_for_clock), else null. */
  schedule: { state: ScheduleStateName; nextChange: string | null; reason: string | null } | null;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * The lockdowns and holidays in force, read from state.db as the daemon keeps them (for `status` and `check`).
 */
export function readOperations(config: AgentOptions, state: Db | null) {
  const agent = (state && readLockdown(state, 'agent')) || NO_LOCKDOWN;
  const published = (state && readPublishedHolidays(state)) || null;
  return {
    agent,
    holidays: new Set([...config.access.holidays, ...(published?.dates ?? [])]),
    lockdown: (doorUuid: string) => effectiveLockdown((state && readLockdown(state, `door:${doorUuid}`)) || NO_LOCKDOWN, agent),
  };
}

/**
 * What `status` shows of the door operations (issue 14): the lockdown in force per door, and the unlock
 * schedule's state and next change, worked out as the daemon does (with the same clock-synchronization check,
 * asked only when a door has a schedule).
 */
export function operationsStatus(
  config: AgentOptions,
  state: Db | null,
  now: number,
  clockSynchronized: () => boolean = () => isClockSynchronized({ rtc: config.agent.rtc }),
) {
  const { agent, holidays, lockdown: lockdownOf } = readOperations(config, state);
  const localTime = localTimeIn(config.agent.timezone);
  let synchronized: boolean | undefined;
  const isSynchronized = (): boolean => {
    synchronized ??= clockSynchronized();
    return synchronized;
  };
  const doors = new Map<string, DoorOperationsView>();
  for (const door of config.doors) {
    const record = lockdownOf(door.uuid);
    const lockdown = { active: record.active, scope: record.scope, by: record.by, reason: record.reason, since: iso(record.since) };
    const schedule = door.unlockSchedule
      ? scheduleState(
          { hours: door.unlockSchedule, holidays, firstPersonIn: door.firstPersonIn !== undefined },
          (state && readScheduleMemory(state, door.uuid)) || NO_MEMORY,
          { at: now, localTime, lockdown: lockdown.active, clockTrusted: isClockTrusted(now), clockSynchronized: isSynchronized() },
        )
      : null;
    const reason = schedule?.state !== 'waiting_for_clock' ? null : isClockTrusted(now) ? CLOCK_NOT_SYNCHRONIZED : CLOCK_NOT_TRUSTED;
    doors.set(door.uuid, { lockdown, schedule: schedule && { state: schedule.state, nextChange: iso(schedule.nextChange), reason } });
  }
  return { doors, holidays: [...holidays].sort(), agentLockdown: { ...agent, since: iso(agent.since) } };
}

const CLOCK_NOT_SYNCHRONIZED = 'clock not synchronized (no RTC configured): unlock schedule waits';
const CLOCK_NOT_TRUSTED = 'clock before 2024-01-01 (not trusted): unlock schedule waits';

const SCHEDULE_WORDS: Record<ScheduleStateName, string> = {
  none: 'none',
  waiting_for_clock: 'NOT following its hours, door locked',
  closed: 'outside its hours',
  holiday: 'not today (holiday)',
  waiting_for_first_person: 'waiting for the first person in',
  suspended: 'locked by hand until the next run',
  unlocked: 'holding the door unlocked',
};

/** The status lines of one door's operations. */
export function operationsLines(view: DoorOperationsView): string[] {
  const lines: string[] = [];
  if (view.lockdown.active) {
    lines.push(
      `    LOCKDOWN (${view.lockdown.scope === 'agent' ? 'whole agent' : 'this door'}) since ${view.lockdown.since ?? '?'} by ${view.lockdown.by ?? '?'}` +
        (view.lockdown.reason ? `: ${view.lockdown.reason}` : ''),
    );
  }
  if (view.schedule) {
    lines.push(
      view.schedule.reason
        ? `    unlock schedule: ${SCHEDULE_WORDS[view.schedule.state]}: ${view.schedule.reason}`
        : `    unlock schedule: ${SCHEDULE_WORDS[view.schedule.state]}; next change ${view.schedule.nextChange ?? 'none within 8 days'}`,
    );
  }
  return lines;
}
