import { scheduleAllows, type LocalTime, type TimeMapping } from './schedule.js';

/**
 * A door's unlock schedule (issue 14): hours of the week, in the agent's time zone, during which the door is held
 * unlocked. Pure: every function takes the time and a local-time function and returns what should be. Boundaries
 * are whole local hours, which fall on UTC quarter hours in every zone, so the schedule is evaluated per quarter
 * hour; daylight-saving changes follow from the local-time function (a skipped hour never occurs).
 */
export interface UnlockSchedule {
  hours: TimeMapping;
  /** Local dates (YYYY-MM-DD) on which the schedule does not apply. */
  holidays: ReadonlySet<string>;
  /** The hours start only once a first person (of the configured groups) was granted (see `firstPersonArmed`). */
  firstPersonIn: boolean;
}

/** What changes the schedule's course, persisted per door. */
export interface ScheduleMemory {
  /** When a first person was last granted during the schedule's hours (wall ms), or null. */
  firstPersonAt: number | null;
  /** A lock by hand during a run keeps the door locked until the next run: the start of that run (wall ms). */
  suspendedRun: number | null;
}

export const NO_MEMORY: ScheduleMemory = { firstPersonAt: null, suspendedRun: null };

export type ScheduleStateName = 'none' | 'holiday' | 'closed' | 'waiting_for_clock' | 'waiting_for_first_person' | 'suspended' | 'unlocked';

export interface ScheduleState {
  /** unlocked: the door should be held unlocked now. */
  state: ScheduleStateName;
  /** Whether now is within the schedule's hours (holidays excluded). */
  inHours: boolean;
  /** When the current run of hours began (wall ms), null outside the hours. */
  runStart: number | null;
  /** The next time the hours begin or end (wall ms), null when none within LOOKAHEAD_MS. */
  nextChange: number | null;
}

const QUARTER_MS = 15 * 60 * 1000;
/** How far ahead the next change is looked for (and back for the start of a run). @internal */
export const LOOKAHEAD_MS = 8 * 24 * 3600 * 1000;

type LocalTimeOf = (epochMs: number) => LocalTime;

/** Whether the schedule's hours include this instant (a holiday has none). @internal */
export function inScheduleHours(schedule: UnlockSchedule, at: number, localTime: LocalTimeOf): boolean {
  const local = localTime(at);
  return !schedule.holidays.has(local.date) && scheduleAllows(schedule.hours, local);
}

function quarterStart(at: number): number {
  return Math.floor(at / QUARTER_MS) * QUARTER_MS;
}

/** The next instant after `at` where inScheduleHours differs from its value at `at`, or null within the lookahead. @internal */
export function nextScheduleChange(schedule: UnlockSchedule, at: number, localTime: LocalTimeOf): number | null {
  const now = inScheduleHours(schedule, at, localTime);
  for (let t = quarterStart(at) + QUARTER_MS; t <= at + LOOKAHEAD_MS; t += QUARTER_MS) {
    if (inScheduleHours(schedule, t, localTime) !== now) return t;
  }
  return null;
}

/**
 * The start of the run of hours containing `at` (it is in hours). A run longer than the lookahead (a schedule
 * open all week) is taken to start each local midnight: a lock by hand then lasts the day, and first-person-in
 * is needed each day.
 * @internal
 */
export function runStartOf(schedule: UnlockSchedule, at: number, localTime: LocalTimeOf): number {
  let start = quarterStart(at);
  while (inScheduleHours(schedule, start - QUARTER_MS, localTime)) {
    if (start - QUARTER_MS < at - LOOKAHEAD_MS) return localDayStart(at, localTime);
    start -= QUARTER_MS;
  }
  return start;
}

/** The first quarter hour of the local date of `at`. */
function localDayStart(at: number, localTime: LocalTimeOf): number {
  const date = localTime(at).date;
  let start = quarterStart(at);
  while (localTime(start - QUARTER_MS).date === date) start -= QUARTER_MS;
  return start;
}

/**
 * Whether first-person-in has armed the schedule at `at`: a first person was granted during the current run of
 * hours, or earlier on the same local date during the hours (the rest of that day's hours follow on their own).
 * @internal
 */
export function firstPersonArmed(firstPersonAt: number | null, runStart: number, at: number, localTime: LocalTimeOf): boolean {
  if (firstPersonAt === null || firstPersonAt > at) return false;
  return firstPersonAt >= runStart || localTime(firstPersonAt).date === localTime(at).date;
}

/**
 * The schedule's state at `at`. A clock that is neither synchronized (NTP, or a battery-backed RTC) nor trusted
 * (before 2024) says nothing about the hours (a board without an RTC boots at its last saved time): the schedule
 * waits for the clock, door locked, first person not armed, no next change. Lockdown keeps the door locked
 * whatever the hours say; holidays have no hours; a lock by hand during a run suspends the rest of that run.
 */
export function scheduleState(
  schedule: UnlockSchedule | null,
  memory: ScheduleMemory,
  context: { at: number; localTime: LocalTimeOf; lockdown: boolean; clockTrusted: boolean; clockSynchronized: boolean },
): ScheduleState {
  if (schedule === null) return { state: 'none', inHours: false, runStart: null, nextChange: null };
  if (!context.clockTrusted || !context.clockSynchronized) return { state: 'waiting_for_clock', inHours: false, runStart: null, nextChange: null };
  const { at, localTime } = context;
  const inHours = inScheduleHours(schedule, at, localTime);
  const nextChange = nextScheduleChange(schedule, at, localTime);
  if (!inHours) {
    const holiday = schedule.holidays.has(localTime(at).date) && scheduleAllows(schedule.hours, localTime(at));
    return { state: holiday ? 'holiday' : 'closed', inHours, runStart: null, nextChange };
  }
  const runStart = runStartOf(schedule, at, localTime);
  let state: ScheduleStateName = 'unlocked';
  if (context.lockdown) state = 'closed';
  else if (memory.suspendedRun === runStart) state = 'suspended';
  else if (schedule.firstPersonIn && !firstPersonArmed(memory.firstPersonAt, runStart, at, localTime)) state = 'waiting_for_first_person';
  return { state, inHours, runStart, nextChange };
}

/**
 * The longest run of consecutive unlocked hours in a week (wrapping from Saturday into Sunday), for checking a
 * door's maxUnlockSeconds against its schedule. Infinity when every hour of the week is unlocked.
 */
export function longestUnlockRunHours(hours: TimeMapping): number {
  const open: boolean[] = [];
  for (let day = 0; day < 7; day++) {
    for (let hour = 0; hour < 24; hour++) open.push(scheduleAllows(hours, { weekday: day, hour }));
  }
  if (open.every(Boolean)) return Infinity;
  let longest = 0;
  let run = 0;
  // Twice round the week, so a run across Saturday midnight is counted whole.
  for (let i = 0; i < 2 * open.length; i++) {
    run = open[i % open.length] ? run + 1 : 0;
    longest = Math.max(longest, run);
  }
  return longest;
}
