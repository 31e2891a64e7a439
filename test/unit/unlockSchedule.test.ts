import { describe, it, expect } from 'vitest';
import { ALL_WEEK, localTimeIn, type HourRange, type TimeMapping } from '../../src/core/schedule.js';
import {
  LOOKAHEAD_MS,
  NO_MEMORY,
  firstPersonArmed,
  inScheduleHours,
  longestUnlockRunHours,
  nextScheduleChange,
  runStartOf,
  scheduleState,
  type ScheduleMemory,
  type UnlockSchedule,
} from '../../src/core/unlockSchedule.js';

const utc = (iso: string) => Date.parse(iso);
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const SUN = 0;
const MON = 1;
const WED = 3;
const FRI = 5;
const SAT = 6;

/** A week with only the given days' ranges (Sunday = 0). */
function week(byDay: Partial<Record<number, HourRange[]>>): TimeMapping {
  return Array.from({ length: 7 }, (_, day) => byDay[day] ?? []);
}
const weekdays = (ranges: HourRange[]): TimeMapping => week({ 1: ranges, 2: ranges, 3: ranges, 4: ranges, 5: ranges });

function schedule(hours: TimeMapping, options: { holidays?: string[]; firstPersonIn?: boolean } = {}): UnlockSchedule {
  return { hours, holidays: new Set(options.holidays ?? []), firstPersonIn: options.firstPersonIn ?? false };
}

const berlin = localTimeIn('Europe/Berlin');
const newYork = localTimeIn('America/New_York');
const lordHowe = localTimeIn('Australia/Lord_Howe');
const inUtc = localTimeIn('UTC');

// Calendar used below (2026): Jan 9 Fri, Jan 10 Sat, Jan 12 Mon; Mar 29 Sun (Berlin spring forward at 01:00Z);
// Oct 25 Sun (Berlin fall back at 01:00Z); Mar 8 / Nov 1 Sun (New York DST); Apr 5 / Oct 4 Sun (Lord Howe
// half-hour DST); Jun 15 Mon; Jul 4 Sat; Dec 25 Fri.
/** Friday 20:00 to Saturday 06:00: one run across midnight. */
const fridayNight = week({ [FRI]: [[20, 24]], [SAT]: [[0, 6]] });
/** Saturday 20:00 to Sunday 06:00: one run across the end of the time_mapping week. */
const saturdayNight = week({ [SAT]: [[20, 24]], [SUN]: [[0, 6]] });

describe('constants', () => {
  it('looks 8 days ahead and starts with no memory', () => {
    expect(LOOKAHEAD_MS).toBe(8 * DAY);
    expect(NO_MEMORY).toEqual({ firstPersonAt: null, suspendedRun: null });
  });
});

describe('inScheduleHours', () => {
  const office = schedule(weekdays([[8, 17]]));

  it.each([
    // Europe/Berlin in winter, UTC+1: Monday 2026-01-12 08:00 local is 07:00Z.
    ['Europe/Berlin', '2026-01-12T06:59:59.999Z', false, 'just before 08:00'],
    ['Europe/Berlin', '2026-01-12T07:00:00.000Z', true, '08:00, start inclusive'],
    ['Europe/Berlin', '2026-01-12T15:59:59.999Z', true, 'just before 17:00'],
    ['Europe/Berlin', '2026-01-12T16:00:00.000Z', false, '17:00, end exclusive'],
    ['Europe/Berlin', '2026-01-11T10:00:00.000Z', false, 'Sunday has no hours'],
    // Europe/Berlin in summer, UTC+2.
    ['Europe/Berlin', '2026-06-15T05:59:59.999Z', false, 'summer, just before 08:00'],
    ['Europe/Berlin', '2026-06-15T06:00:00.000Z', true, 'summer 08:00'],
    ['Europe/Berlin', '2026-06-15T15:00:00.000Z', false, 'summer 17:00'],
    // America/New_York in summer, UTC-4.
    ['America/New_York', '2026-06-15T11:59:59.999Z', false, 'just before 08:00 EDT'],
    ['America/New_York', '2026-06-15T12:00:00.000Z', true, '08:00 EDT'],
    ['America/New_York', '2026-06-15T20:59:59.999Z', true, 'just before 17:00 EDT'],
    ['America/New_York', '2026-06-15T21:00:00.000Z', false, '17:00 EDT'],
    ['America/New_York', '2026-06-16T00:30:00.000Z', false, 'Monday 20:30 EDT (Tuesday in UTC)'],
    // Australia/Lord_Howe in winter, UTC+10:30: local hours begin at half past the UTC hour.
    ['Australia/Lord_Howe', '2026-06-14T21:29:59.999Z', false, 'Monday 07:59 (Sunday in UTC)'],
    ['Australia/Lord_Howe', '2026-06-14T21:30:00.000Z', true, 'Monday 08:00 (Sunday 21:30 UTC)'],
    ['Australia/Lord_Howe', '2026-06-15T06:29:59.999Z', true, 'Monday 16:59'],
    ['Australia/Lord_Howe', '2026-06-15T06:30:00.000Z', false, 'Monday 17:00'],
    ['UTC', '2026-06-15T07:59:59.999Z', false, 'UTC 07:59'],
    ['UTC', '2026-06-15T08:00:00.000Z', true, 'UTC 08:00'],
    ['UTC', '2026-06-15T17:00:00.000Z', false, 'UTC 17:00'],
  ])('office hours in %s at %s -> %s (%s)', (zone, iso, expected) => {
    expect(inScheduleHours(office, utc(iso), localTimeIn(zone))).toBe(expected);
  });

  it('Lord Howe in winter (UTC+10:30): each local hour runs from half past to half past the UTC hour', () => {
    const seven = schedule(weekdays([[7, 8]]));
    expect(inScheduleHours(seven, utc('2026-06-14T20:29:59.999Z'), lordHowe)).toBe(false);
    expect(inScheduleHours(seven, utc('2026-06-14T20:30:00Z'), lordHowe)).toBe(true);
    expect(inScheduleHours(seven, utc('2026-06-14T21:29:59.999Z'), lordHowe)).toBe(true);
    expect(inScheduleHours(seven, utc('2026-06-14T21:30:00Z'), lordHowe)).toBe(false);
  });

  it('a gap between two ranges of one day is out of hours', () => {
    const split = schedule(
      week({
        [MON]: [
          [8, 12],
          [13, 17],
        ],
      }),
    );
    expect(inScheduleHours(split, utc('2026-01-12T10:59:59.999Z'), berlin)).toBe(true);
    expect(inScheduleHours(split, utc('2026-01-12T11:00:00Z'), berlin)).toBe(false);
    expect(inScheduleHours(split, utc('2026-01-12T11:59:59.999Z'), berlin)).toBe(false);
    expect(inScheduleHours(split, utc('2026-01-12T12:00:00Z'), berlin)).toBe(true);
  });

  it('uses the local weekday, not the UTC one', () => {
    const sundayOnly = schedule(week({ [SUN]: [[0, 24]] }));
    // Saturday 23:30Z is Sunday 00:30 in Berlin, still Saturday in New York.
    expect(inScheduleHours(sundayOnly, utc('2026-01-10T23:30:00Z'), berlin)).toBe(true);
    expect(inScheduleHours(sundayOnly, utc('2026-01-10T23:30:00Z'), inUtc)).toBe(false);
    // Monday 03:00Z is still Sunday 22:00 in New York.
    expect(inScheduleHours(sundayOnly, utc('2026-01-12T03:00:00Z'), newYork)).toBe(true);
    expect(inScheduleHours(sundayOnly, utc('2026-01-12T03:00:00Z'), berlin)).toBe(false);
  });

  it('a holiday has no hours, for the whole local date', () => {
    const withHoliday = schedule(weekdays([[8, 17]]), { holidays: ['2026-12-25'] });
    expect(inScheduleHours(withHoliday, utc('2026-12-24T10:00:00Z'), berlin)).toBe(true);
    expect(inScheduleHours(withHoliday, utc('2026-12-25T07:00:00Z'), berlin)).toBe(false);
    expect(inScheduleHours(withHoliday, utc('2026-12-25T10:00:00Z'), berlin)).toBe(false);
    expect(inScheduleHours(withHoliday, utc('2026-12-28T07:00:00Z'), berlin)).toBe(true);
  });

  it('holidays are local dates: 2026-07-04 in New York runs from 04:00Z to 04:00Z next day', () => {
    const allWeek = schedule(ALL_WEEK, { holidays: ['2026-07-04'] });
    expect(inScheduleHours(allWeek, utc('2026-07-04T03:59:59.999Z'), newYork)).toBe(true); // Jul 3 23:59 EDT
    expect(inScheduleHours(allWeek, utc('2026-07-04T04:00:00Z'), newYork)).toBe(false); // Jul 4 00:00 EDT
    expect(inScheduleHours(allWeek, utc('2026-07-05T03:59:59.999Z'), newYork)).toBe(false); // Jul 4 23:59 EDT
    expect(inScheduleHours(allWeek, utc('2026-07-05T04:00:00Z'), newYork)).toBe(true); // Jul 5 00:00 EDT
    // The same instant in UTC: the holiday is the UTC date.
    expect(inScheduleHours(allWeek, utc('2026-07-04T03:59:59.999Z'), inUtc)).toBe(false);
    expect(inScheduleHours(allWeek, utc('2026-07-05T03:59:59.999Z'), inUtc)).toBe(true);
  });

  it('a holiday on another date does not matter', () => {
    const s = schedule(weekdays([[8, 17]]), { holidays: ['2026-01-13', '2025-01-12'] });
    expect(inScheduleHours(s, utc('2026-01-12T10:00:00Z'), berlin)).toBe(true);
  });

  it('Berlin spring forward: a range 2:00-3:00 on 2026-03-29 never occurs', () => {
    const s = schedule(week({ [SUN]: [[2, 3]] }));
    for (let t = utc('2026-03-28T22:00:00Z'); t < utc('2026-03-29T06:00:00Z'); t += MINUTE) {
      expect(inScheduleHours(s, t, berlin)).toBe(false);
    }
  });

  it('Berlin fall back: a range 2:00-3:00 on 2026-10-25 lasts two hours (the repeated hour)', () => {
    const s = schedule(week({ [SUN]: [[2, 3]] }));
    const inside: number[] = [];
    for (let t = utc('2026-10-24T22:00:00Z'); t < utc('2026-10-25T06:00:00Z'); t += MINUTE) {
      if (inScheduleHours(s, t, berlin)) inside.push(t);
    }
    expect(inside).toHaveLength(120);
    expect(inside[0]).toBe(utc('2026-10-25T00:00:00Z'));
    expect(inside.at(-1)).toBe(utc('2026-10-25T01:59:00Z'));
  });

  it('Lord Howe spring forward (02:00 -> 02:30): a range 2:00-3:00 lasts half an hour', () => {
    const s = schedule(week({ [SUN]: [[2, 3]] }));
    const inside: number[] = [];
    for (let t = utc('2026-10-03T12:00:00Z'); t < utc('2026-10-03T20:00:00Z'); t += MINUTE) {
      if (inScheduleHours(s, t, lordHowe)) inside.push(t);
    }
    expect(inside).toHaveLength(30);
    expect(inside[0]).toBe(utc('2026-10-03T15:30:00Z'));
  });

  it('Lord Howe fall back (02:00 -> 01:30): a range 1:00-2:00 lasts an hour and a half', () => {
    const s = schedule(week({ [SUN]: [[1, 2]] }));
    const inside: number[] = [];
    for (let t = utc('2026-04-04T12:00:00Z'); t < utc('2026-04-04T20:00:00Z'); t += MINUTE) {
      if (inScheduleHours(s, t, lordHowe)) inside.push(t);
    }
    expect(inside).toHaveLength(90);
    expect(inside[0]).toBe(utc('2026-04-04T14:00:00Z'));
  });

  it('an empty mapping never is in hours; ALL_WEEK always is', () => {
    for (let t = utc('2026-03-28T00:00:00Z'); t < utc('2026-03-30T00:00:00Z'); t += 7 * MINUTE) {
      expect(inScheduleHours(schedule(week({})), t, berlin)).toBe(false);
      expect(inScheduleHours(schedule(ALL_WEEK), t, berlin)).toBe(true);
    }
  });
});

describe('nextScheduleChange', () => {
  const office = schedule(weekdays([[8, 17]]));

  it.each([
    ['2026-01-12T03:17:42.123Z', '2026-01-12T07:00:00Z', 'before opening: the opening'],
    ['2026-01-12T06:59:59.999Z', '2026-01-12T07:00:00Z', '1 ms before opening'],
    ['2026-01-12T07:00:00.000Z', '2026-01-12T16:00:00Z', 'exactly at opening: the closing'],
    ['2026-01-12T07:00:00.001Z', '2026-01-12T16:00:00Z', 'just after opening'],
    ['2026-01-12T15:59:59.999Z', '2026-01-12T16:00:00Z', '1 ms before closing'],
    ['2026-01-12T16:00:00.000Z', '2026-01-13T07:00:00Z', 'exactly at closing: the next opening'],
    ['2026-01-09T16:00:00.000Z', '2026-01-12T07:00:00Z', 'Friday closing: Monday opening'],
    ['2026-01-10T12:00:00.000Z', '2026-01-12T07:00:00Z', 'weekend'],
  ])('Berlin office hours from %s -> %s (%s)', (from, expected) => {
    expect(nextScheduleChange(office, utc(from), berlin)).toBe(utc(expected));
  });

  it('is strictly after `at` and lands exactly on the boundary', () => {
    const s = schedule(
      week({
        [MON]: [
          [8, 12],
          [13, 17],
        ],
      }),
    );
    const changes: number[] = [];
    let t = utc('2026-01-12T00:00:00Z');
    for (let i = 0; i < 5; i++) {
      const next = nextScheduleChange(s, t, berlin);
      expect(next).not.toBeNull();
      expect(next!).toBeGreaterThan(t);
      changes.push(next!);
      t = next!;
    }
    expect(changes).toEqual(['2026-01-12T07:00:00Z', '2026-01-12T11:00:00Z', '2026-01-12T12:00:00Z', '2026-01-12T16:00:00Z', '2026-01-19T07:00:00Z'].map(utc));
  });

  it('ranges that touch ([8,12] and [12,17]) change only at 8 and 17', () => {
    const s = schedule(
      week({
        [MON]: [
          [8, 12],
          [12, 17],
        ],
      }),
    );
    expect(nextScheduleChange(s, utc('2026-01-12T07:00:00Z'), berlin)).toBe(utc('2026-01-12T16:00:00Z'));
  });

  it('a run across midnight ends at its end, not at midnight', () => {
    // Friday 20:00 CET = 19:00Z; Saturday 06:00 CET = 05:00Z.
    expect(nextScheduleChange(schedule(fridayNight), utc('2026-01-09T12:00:00Z'), berlin)).toBe(utc('2026-01-09T19:00:00Z'));
    expect(nextScheduleChange(schedule(fridayNight), utc('2026-01-09T19:00:00Z'), berlin)).toBe(utc('2026-01-10T05:00:00Z'));
    expect(nextScheduleChange(schedule(fridayNight), utc('2026-01-09T22:59:59Z'), berlin)).toBe(utc('2026-01-10T05:00:00Z'));
  });

  it('a run across Saturday -> Sunday (the end of the mapping week) is one run', () => {
    expect(nextScheduleChange(schedule(saturdayNight), utc('2026-01-10T19:00:00Z'), berlin)).toBe(utc('2026-01-11T05:00:00Z'));
  });

  it('Berlin spring forward: a range starting at 2:00 on 2026-03-29 opens at 03:00 CEST (01:00Z)', () => {
    const s = schedule(week({ [SUN]: [[2, 5]] }));
    expect(nextScheduleChange(s, utc('2026-03-29T00:30:00Z'), berlin)).toBe(utc('2026-03-29T01:00:00Z'));
    expect(nextScheduleChange(s, utc('2026-03-28T12:00:00Z'), berlin)).toBe(utc('2026-03-29T01:00:00Z'));
    expect(nextScheduleChange(s, utc('2026-03-29T01:00:00Z'), berlin)).toBe(utc('2026-03-29T03:00:00Z')); // 05:00 CEST
  });

  it('Berlin spring forward: a range of only the skipped hour opens the next Sunday', () => {
    const s = schedule(week({ [SUN]: [[2, 3]] }));
    // 2026-04-05 02:00 CEST = 00:00Z.
    expect(nextScheduleChange(s, utc('2026-03-28T23:00:00Z'), berlin)).toBe(utc('2026-04-05T00:00:00Z'));
  });

  it('Berlin spring forward: a range ending at 3:00 ends at the gap', () => {
    const s = schedule(week({ [SUN]: [[0, 3]] }));
    expect(nextScheduleChange(s, utc('2026-03-28T23:30:00Z'), berlin)).toBe(utc('2026-03-29T01:00:00Z'));
  });

  it('Berlin fall back: the repeated hour 2:00 is in hours twice, so 2:00-3:00 ends at 03:00 CET (02:00Z)', () => {
    const s = schedule(week({ [SUN]: [[2, 3]] }));
    expect(nextScheduleChange(s, utc('2026-10-24T23:30:00Z'), berlin)).toBe(utc('2026-10-25T00:00:00Z')); // 02:00 CEST
    expect(nextScheduleChange(s, utc('2026-10-25T00:00:00Z'), berlin)).toBe(utc('2026-10-25T02:00:00Z')); // not 01:00Z
    expect(nextScheduleChange(s, utc('2026-10-25T01:30:00Z'), berlin)).toBe(utc('2026-10-25T02:00:00Z')); // second 02:30
  });

  it('Berlin fall back: a range from 3:00 opens after both 2:00 hours', () => {
    const s = schedule(week({ [SUN]: [[3, 4]] }));
    expect(nextScheduleChange(s, utc('2026-10-25T00:30:00Z'), berlin)).toBe(utc('2026-10-25T02:00:00Z'));
    expect(nextScheduleChange(s, utc('2026-10-25T02:00:00Z'), berlin)).toBe(utc('2026-10-25T03:00:00Z'));
  });

  it('New York spring forward (2026-03-08) and fall back (2026-11-01)', () => {
    const spring = schedule(week({ [SUN]: [[2, 4]] }));
    expect(nextScheduleChange(spring, utc('2026-03-08T06:30:00Z'), newYork)).toBe(utc('2026-03-08T07:00:00Z')); // 03:00 EDT
    expect(nextScheduleChange(spring, utc('2026-03-08T07:00:00Z'), newYork)).toBe(utc('2026-03-08T08:00:00Z')); // 04:00 EDT
    const fall = schedule(week({ [SUN]: [[1, 2]] }));
    expect(nextScheduleChange(fall, utc('2026-11-01T04:30:00Z'), newYork)).toBe(utc('2026-11-01T05:00:00Z')); // 01:00 EDT
    expect(nextScheduleChange(fall, utc('2026-11-01T05:00:00Z'), newYork)).toBe(utc('2026-11-01T07:00:00Z')); // 02:00 EST
  });

  it('Lord Howe: boundaries at half past the UTC hour, and the 30-minute DST shifts', () => {
    // Standard time UTC+10:30: Monday 2026-06-15 08:00 = 2026-06-14T21:30Z.
    expect(nextScheduleChange(office, utc('2026-06-14T12:00:00Z'), lordHowe)).toBe(utc('2026-06-14T21:30:00Z'));
    expect(nextScheduleChange(office, utc('2026-06-14T21:30:00Z'), lordHowe)).toBe(utc('2026-06-15T06:30:00Z'));
    // 2026-10-04 02:00 +10:30 becomes 02:30 +11 at 15:30Z: hour 2 is only 02:30-03:00.
    const two = schedule(week({ [SUN]: [[2, 3]] }));
    expect(nextScheduleChange(two, utc('2026-10-03T14:00:00Z'), lordHowe)).toBe(utc('2026-10-03T15:30:00Z'));
    expect(nextScheduleChange(two, utc('2026-10-03T15:30:00Z'), lordHowe)).toBe(utc('2026-10-03T16:00:00Z'));
    // 2026-04-05 02:00 +11 becomes 01:30 +10:30 at 15:00Z: hour 1 lasts 14:00Z-15:30Z.
    const one = schedule(week({ [SUN]: [[1, 2]] }));
    expect(nextScheduleChange(one, utc('2026-04-04T13:30:00Z'), lordHowe)).toBe(utc('2026-04-04T14:00:00Z'));
    expect(nextScheduleChange(one, utc('2026-04-04T14:00:00Z'), lordHowe)).toBe(utc('2026-04-04T15:30:00Z'));
    expect(nextScheduleChange(one, utc('2026-04-04T15:00:00Z'), lordHowe)).toBe(utc('2026-04-04T15:30:00Z'));
  });

  it('skips a holiday to the next opening', () => {
    const s = schedule(weekdays([[8, 17]]), { holidays: ['2026-12-25'] });
    expect(nextScheduleChange(s, utc('2026-12-24T10:00:00Z'), berlin)).toBe(utc('2026-12-24T16:00:00Z'));
    expect(nextScheduleChange(s, utc('2026-12-24T16:00:00Z'), berlin)).toBe(utc('2026-12-28T07:00:00Z'));
    expect(nextScheduleChange(s, utc('2026-12-25T10:00:00Z'), berlin)).toBe(utc('2026-12-28T07:00:00Z'));
  });

  it('a holiday on the second day cuts a run across midnight at local midnight', () => {
    const s = schedule(fridayNight, { holidays: ['2026-01-10'] });
    expect(nextScheduleChange(s, utc('2026-01-09T20:00:00Z'), berlin)).toBe(utc('2026-01-09T23:00:00Z'));
  });

  it('a holiday in an all-week schedule: changes at the local midnights', () => {
    const s = schedule(ALL_WEEK, { holidays: ['2026-07-04'] });
    expect(nextScheduleChange(s, utc('2026-07-03T12:00:00Z'), newYork)).toBe(utc('2026-07-04T04:00:00Z'));
    expect(nextScheduleChange(s, utc('2026-07-04T04:00:00Z'), newYork)).toBe(utc('2026-07-05T04:00:00Z'));
  });

  it('null when nothing changes within 8 days', () => {
    expect(nextScheduleChange(schedule(ALL_WEEK), utc('2026-03-29T00:30:00Z'), berlin)).toBeNull();
    expect(nextScheduleChange(schedule(ALL_WEEK), utc('2026-10-25T00:30:00Z'), lordHowe)).toBeNull();
    expect(nextScheduleChange(schedule(week({})), utc('2026-01-12T00:00:00Z'), berlin)).toBeNull();
    // Only holidays in the hours for the next 8 days.
    const s = schedule(week({ [MON]: [[0, 1]] }), { holidays: ['2026-01-12', '2026-01-19'] });
    expect(nextScheduleChange(s, utc('2026-01-11T00:00:00Z'), inUtc)).toBeNull();
  });

  it('finds a change exactly LOOKAHEAD_MS ahead, but not one a quarter hour beyond', () => {
    // Monday 00:00-01:00 UTC with the first Monday a holiday: the next opening is Monday 2026-01-19 00:00Z.
    const s = schedule(week({ [MON]: [[0, 1]] }), { holidays: ['2026-01-12'] });
    expect(nextScheduleChange(s, utc('2026-01-11T00:00:00Z'), inUtc)).toBe(utc('2026-01-19T00:00:00Z'));
    expect(nextScheduleChange(s, utc('2026-01-10T23:45:00Z'), inUtc)).toBeNull();
  });

  it('the week until the next opening is within the lookahead', () => {
    const s = schedule(week({ [MON]: [[0, 1]] }));
    expect(nextScheduleChange(s, utc('2026-01-12T01:00:00Z'), inUtc)).toBe(utc('2026-01-19T00:00:00Z'));
  });
});

describe('runStartOf', () => {
  it.each([
    ['2026-01-12T07:00:00Z', '2026-01-12T07:00:00Z', 'exactly at the start'],
    ['2026-01-12T11:34:56.789Z', '2026-01-12T07:00:00Z', 'mid-run, not on a quarter'],
    ['2026-01-12T15:59:59.999Z', '2026-01-12T07:00:00Z', 'last instant of the run'],
  ])('Berlin office hours at %s -> %s (%s)', (at, expected) => {
    expect(runStartOf(schedule(weekdays([[8, 17]])), utc(at), berlin)).toBe(utc(expected));
  });

  it('separate ranges of one day are separate runs; touching ranges are one', () => {
    const split = schedule(
      week({
        [MON]: [
          [8, 12],
          [13, 17],
        ],
      }),
    );
    expect(runStartOf(split, utc('2026-01-12T13:00:00Z'), berlin)).toBe(utc('2026-01-12T12:00:00Z'));
    const touching = schedule(
      week({
        [MON]: [
          [8, 12],
          [12, 17],
        ],
      }),
    );
    expect(runStartOf(touching, utc('2026-01-12T13:00:00Z'), berlin)).toBe(utc('2026-01-12T07:00:00Z'));
  });

  it('a run across midnight ([20,24] then [0,6]) starts at 20:00 of the first day', () => {
    const s = schedule(fridayNight);
    for (const at of ['2026-01-09T19:00:00Z', '2026-01-09T22:59:59.999Z', '2026-01-09T23:00:00Z', '2026-01-10T02:00:00Z', '2026-01-10T04:59:59.999Z']) {
      expect(runStartOf(s, utc(at), berlin)).toBe(utc('2026-01-09T19:00:00Z'));
    }
  });

  it('a run across Saturday -> Sunday starts on Saturday', () => {
    expect(runStartOf(schedule(saturdayNight), utc('2026-01-11T04:59:00Z'), berlin)).toBe(utc('2026-01-10T19:00:00Z'));
    expect(runStartOf(schedule(saturdayNight), utc('2026-01-11T10:59:00Z'), newYork)).toBe(utc('2026-01-11T01:00:00Z'));
  });

  it('a holiday on the first day starts the run at local midnight', () => {
    expect(runStartOf(schedule(fridayNight, { holidays: ['2026-01-09'] }), utc('2026-01-10T02:00:00Z'), berlin)).toBe(utc('2026-01-09T23:00:00Z'));
  });

  it('across the Berlin spring-forward gap', () => {
    // A range from 2:00 starts at 03:00 CEST.
    expect(runStartOf(schedule(week({ [SUN]: [[2, 5]] })), utc('2026-03-29T02:30:00Z'), berlin)).toBe(utc('2026-03-29T01:00:00Z'));
    // Saturday 22:00 CET through the gap into Sunday is one run.
    const s = schedule(week({ [SAT]: [[22, 24]], [SUN]: [[0, 24]] }));
    expect(runStartOf(s, utc('2026-03-29T10:00:00Z'), berlin)).toBe(utc('2026-03-28T21:00:00Z'));
  });

  it('across the Berlin fall-back repeated hour', () => {
    const s = schedule(week({ [SUN]: [[2, 3]] }));
    expect(runStartOf(s, utc('2026-10-25T01:30:00Z'), berlin)).toBe(utc('2026-10-25T00:00:00Z'));
  });

  it('Lord Howe: starts at half past the UTC hour, and at 02:30 on the spring-forward day', () => {
    expect(runStartOf(schedule(weekdays([[8, 17]])), utc('2026-06-15T03:00:00Z'), lordHowe)).toBe(utc('2026-06-14T21:30:00Z'));
    expect(runStartOf(schedule(week({ [SUN]: [[2, 3]] })), utc('2026-10-03T15:45:00Z'), lordHowe)).toBe(utc('2026-10-03T15:30:00Z'));
  });

  it('takes a run longer than LOOKAHEAD_MS (all week open) to start at local midnight', () => {
    const at = utc('2026-06-15T12:00:00Z');
    expect(runStartOf(schedule(ALL_WEEK), at, inUtc)).toBe(utc('2026-06-15T00:00:00Z'));
    expect(runStartOf(schedule(ALL_WEEK), at + 3600_000, inUtc)).toBe(utc('2026-06-15T00:00:00Z'));
  });

  it('the longest possible finite run (all week but one hour) is found whole', () => {
    const hours = Array.from({ length: 7 }, (_, day): HourRange[] =>
      day === WED
        ? [
            [0, 3],
            [4, 24],
          ]
        : [[0, 24]],
    );
    // Wednesday 2026-01-14 04:00Z to Wednesday 2026-01-21 03:00Z.
    expect(runStartOf(schedule(hours), utc('2026-01-21T02:59:00Z'), inUtc)).toBe(utc('2026-01-14T04:00:00Z'));
  });
});

describe('firstPersonArmed', () => {
  const runStart = utc('2026-01-12T12:00:00Z'); // Monday 13:00 Berlin
  const at = utc('2026-01-12T14:00:00Z'); // Monday 15:00 Berlin

  it('not armed without a grant', () => {
    expect(firstPersonArmed(null, runStart, at, berlin)).toBe(false);
  });

  it('armed by a grant within the current run, from its first instant', () => {
    expect(firstPersonArmed(runStart, runStart, at, berlin)).toBe(true);
    expect(firstPersonArmed(at, runStart, at, berlin)).toBe(true);
    expect(firstPersonArmed(at - MINUTE, runStart, at, berlin)).toBe(true);
  });

  it('armed by a grant earlier on the same local date (an earlier run that day)', () => {
    expect(firstPersonArmed(utc('2026-01-12T07:30:00Z'), runStart, at, berlin)).toBe(true);
    expect(firstPersonArmed(utc('2026-01-11T23:00:00Z'), runStart, at, berlin)).toBe(true); // Monday 00:00 Berlin
  });

  it('not armed by a grant on the previous local date', () => {
    expect(firstPersonArmed(utc('2026-01-11T22:59:59.999Z'), runStart, at, berlin)).toBe(false); // Sunday 23:59 Berlin
    expect(firstPersonArmed(utc('2026-01-09T10:00:00Z'), runStart, at, berlin)).toBe(false);
  });

  it('not armed by a grant after `at` (a clock step back)', () => {
    expect(firstPersonArmed(at + 1, runStart, at, berlin)).toBe(false);
  });

  it('a grant in a run across midnight arms the rest of that run on the next date', () => {
    const start = utc('2026-01-09T19:00:00Z'); // Friday 20:00 Berlin
    expect(firstPersonArmed(utc('2026-01-09T21:00:00Z'), start, utc('2026-01-10T03:00:00Z'), berlin)).toBe(true);
    // A grant at the very start of the run counts as within it.
    expect(firstPersonArmed(start, start, utc('2026-01-10T03:00:00Z'), berlin)).toBe(true);
    expect(firstPersonArmed(start - 1, start, utc('2026-01-10T03:00:00Z'), berlin)).toBe(false);
  });

  it('compares local dates, not UTC dates', () => {
    // New York: 00:30 EDT and 23:30 EDT on Jun 15 are different UTC dates but one local date.
    const nyAt = utc('2026-06-16T03:30:00Z');
    expect(firstPersonArmed(utc('2026-06-15T04:30:00Z'), nyAt - HOUR, nyAt, newYork)).toBe(true);
    expect(firstPersonArmed(utc('2026-06-15T04:30:00Z'), nyAt - HOUR, nyAt, inUtc)).toBe(false);
    // Berlin: 21:30Z and 22:30Z on Jun 15 are one UTC date but Jun 15 23:30 and Jun 16 00:30 local.
    const beAt = utc('2026-06-15T22:30:00Z');
    expect(firstPersonArmed(utc('2026-06-15T21:30:00Z'), beAt - 30 * MINUTE, beAt, berlin)).toBe(false);
    expect(firstPersonArmed(utc('2026-06-15T21:30:00Z'), beAt - 30 * MINUTE, beAt, inUtc)).toBe(true);
  });

  it('Lord Howe: the local date turns at 13:30Z in winter', () => {
    const lhAt = utc('2026-06-15T13:30:00Z'); // Jun 16 00:00 +10:30
    expect(firstPersonArmed(utc('2026-06-15T13:29:00Z'), lhAt, lhAt + HOUR, lordHowe)).toBe(false);
    expect(firstPersonArmed(utc('2026-06-15T13:30:00Z'), lhAt + 30 * MINUTE, lhAt + HOUR, lordHowe)).toBe(true);
  });
});

describe('scheduleState', () => {
  const context = (at: string, localTime = berlin, extra: Partial<{ lockdown: boolean; clockTrusted: boolean; clockSynchronized: boolean }> = {}) => ({
    at: utc(at),
    localTime,
    lockdown: false,
    clockTrusted: true,
    clockSynchronized: true,
    ...extra,
  });
  const office = schedule(weekdays([[8, 17]]), { holidays: ['2026-12-25'] });

  it("'none' without a schedule, whatever else", () => {
    expect(scheduleState(null, NO_MEMORY, context('2026-01-12T10:00:00Z'))).toEqual({
      state: 'none',
      inHours: false,
      runStart: null,
      nextChange: null,
    });
    expect(scheduleState(null, { firstPersonAt: 1, suspendedRun: 1 }, context('2026-01-12T10:00:00Z', berlin, { lockdown: true }))).toEqual({
      state: 'none',
      inHours: false,
      runStart: null,
      nextChange: null,
    });
  });

  it("'unlocked' in hours, with the run start and the next change", () => {
    expect(scheduleState(office, NO_MEMORY, context('2026-01-12T10:00:00Z'))).toEqual({
      state: 'unlocked',
      inHours: true,
      runStart: utc('2026-01-12T07:00:00Z'),
      nextChange: utc('2026-01-12T16:00:00Z'),
    });
  });

  it("'closed' out of hours, with the next opening and no run start", () => {
    expect(scheduleState(office, NO_MEMORY, context('2026-01-12T16:00:00Z'))).toEqual({
      state: 'closed',
      inHours: false,
      runStart: null,
      nextChange: utc('2026-01-13T07:00:00Z'),
    });
  });

  it("'holiday' on a holiday when the hours would be open, 'closed' when they would not", () => {
    expect(scheduleState(office, NO_MEMORY, context('2026-12-25T10:00:00Z'))).toEqual({
      state: 'holiday',
      inHours: false,
      runStart: null,
      nextChange: utc('2026-12-28T07:00:00Z'),
    });
    expect(scheduleState(office, NO_MEMORY, context('2026-12-25T07:00:00Z')).state).toBe('holiday'); // 08:00
    expect(scheduleState(office, NO_MEMORY, context('2026-12-25T06:59:59Z')).state).toBe('closed'); // 07:59
    expect(scheduleState(office, NO_MEMORY, context('2026-12-25T16:00:00Z')).state).toBe('closed'); // 17:00
    expect(scheduleState(office, NO_MEMORY, context('2026-12-25T20:00:00Z')).state).toBe('closed');
  });

  it("'holiday' follows the local date (New York, Jul 4)", () => {
    const s = schedule(ALL_WEEK, { holidays: ['2026-07-04'] });
    expect(scheduleState(s, NO_MEMORY, context('2026-07-04T03:00:00Z', newYork)).state).toBe('unlocked'); // Jul 3 23:00
    expect(scheduleState(s, NO_MEMORY, context('2026-07-04T05:00:00Z', newYork))).toEqual({
      state: 'holiday',
      inHours: false,
      runStart: null,
      nextChange: utc('2026-07-05T04:00:00Z'),
    });
  });

  it("lockdown keeps it 'closed' in hours (still reporting the hours)", () => {
    expect(scheduleState(office, NO_MEMORY, context('2026-01-12T10:00:00Z', berlin, { lockdown: true }))).toEqual({
      state: 'closed',
      inHours: true,
      runStart: utc('2026-01-12T07:00:00Z'),
      nextChange: utc('2026-01-12T16:00:00Z'),
    });
  });

  // Issue 32 item 11: a clock nobody set (no NTP yet, no RTC) says nothing about the hours.
  it.each([
    ['an untrusted clock (before 2024)', { clockTrusted: false }],
    ['a clock not synchronized (no NTP yet, no agent.rtc)', { clockSynchronized: false }],
  ])("%s: 'waiting_for_clock' in hours, out of hours and on holidays, with no next change", (_what, clock) => {
    for (const at of ['2026-01-12T10:00:00Z', '2026-01-12T20:00:00Z', '2026-12-25T10:00:00Z']) {
      expect(scheduleState(office, NO_MEMORY, context(at, berlin, clock))).toEqual({
        state: 'waiting_for_clock',
        inHours: false,
        runStart: null,
        nextChange: null,
      });
    }
  });

  it('lockdown and a clock nobody set come before suspension and first-person-in', () => {
    const fpi = schedule(weekdays([[8, 17]]), { firstPersonIn: true });
    const suspended: ScheduleMemory = { firstPersonAt: null, suspendedRun: utc('2026-01-12T07:00:00Z') };
    const armed: ScheduleMemory = { firstPersonAt: utc('2026-01-12T07:30:00Z'), suspendedRun: null };
    for (const memory of [NO_MEMORY, suspended, armed]) {
      expect(scheduleState(fpi, memory, context('2026-01-12T10:00:00Z', berlin, { lockdown: true })).state).toBe('closed');
      expect(scheduleState(fpi, memory, context('2026-01-12T10:00:00Z', berlin, { clockTrusted: false })).state).toBe('waiting_for_clock');
      expect(scheduleState(fpi, memory, context('2026-01-12T10:00:00Z', berlin, { clockSynchronized: false })).state).toBe('waiting_for_clock');
    }
  });

  it('a lock by hand suspends the rest of its run; the next run is not suspended', () => {
    const memory: ScheduleMemory = { firstPersonAt: null, suspendedRun: utc('2026-01-12T07:00:00Z') };
    expect(scheduleState(office, memory, context('2026-01-12T10:00:00Z')).state).toBe('suspended');
    expect(scheduleState(office, memory, context('2026-01-12T15:59:59Z'))).toEqual({
      state: 'suspended',
      inHours: true,
      runStart: utc('2026-01-12T07:00:00Z'),
      nextChange: utc('2026-01-12T16:00:00Z'),
    });
    expect(scheduleState(office, memory, context('2026-01-12T16:00:00Z')).state).toBe('closed');
    expect(scheduleState(office, memory, context('2026-01-13T07:00:00Z')).state).toBe('unlocked');
    expect(scheduleState(office, memory, context('2026-01-13T10:00:00Z')).state).toBe('unlocked');
  });

  it('a suspension lasts across midnight for a run across midnight, then ends with it', () => {
    const memory: ScheduleMemory = { firstPersonAt: null, suspendedRun: utc('2026-01-09T19:00:00Z') };
    expect(scheduleState(schedule(fridayNight), memory, context('2026-01-09T21:00:00Z')).state).toBe('suspended');
    expect(scheduleState(schedule(fridayNight), memory, context('2026-01-10T04:59:00Z')).state).toBe('suspended');
    expect(scheduleState(schedule(fridayNight), memory, context('2026-01-10T05:00:00Z')).state).toBe('closed');
    expect(scheduleState(schedule(fridayNight), memory, context('2026-01-16T19:00:00Z')).state).toBe('unlocked');
  });

  it('a suspension of an earlier run of the same day does not suspend the next one', () => {
    const split = schedule(
      week({
        [MON]: [
          [8, 12],
          [13, 17],
        ],
      }),
    );
    const memory: ScheduleMemory = { firstPersonAt: null, suspendedRun: utc('2026-01-12T07:00:00Z') };
    expect(scheduleState(split, memory, context('2026-01-12T10:00:00Z')).state).toBe('suspended');
    expect(scheduleState(split, memory, context('2026-01-12T12:00:00Z')).state).toBe('unlocked');
  });

  it('a suspension of another instant than the run start does not suspend', () => {
    const memory: ScheduleMemory = { firstPersonAt: null, suspendedRun: utc('2026-01-12T08:00:00Z') };
    expect(scheduleState(office, memory, context('2026-01-12T10:00:00Z')).state).toBe('unlocked');
  });

  describe('first-person-in', () => {
    const fpi = schedule(
      weekdays([
        [8, 12],
        [13, 17],
      ]),
      { firstPersonIn: true },
    );
    const at = (iso: string, firstPersonAt: string | null, extra: Partial<ScheduleMemory> = {}) =>
      scheduleState(fpi, { firstPersonAt: firstPersonAt === null ? null : utc(firstPersonAt), suspendedRun: null, ...extra }, context(iso)).state;

    it("'waiting_for_first_person' in hours until someone is granted", () => {
      expect(scheduleState(fpi, NO_MEMORY, context('2026-01-12T08:00:00Z'))).toEqual({
        state: 'waiting_for_first_person',
        inHours: true,
        runStart: utc('2026-01-12T07:00:00Z'),
        nextChange: utc('2026-01-12T11:00:00Z'),
      });
    });

    it("'closed' out of hours even when granted", () => {
      expect(at('2026-01-12T11:30:00Z', '2026-01-12T08:00:00Z')).toBe('closed');
    });

    it('a grant within the run unlocks it', () => {
      expect(at('2026-01-12T08:00:00Z', '2026-01-12T07:00:00Z')).toBe('unlocked');
      expect(at('2026-01-12T08:00:00Z', '2026-01-12T07:59:00Z')).toBe('unlocked');
    });

    it('a grant in the morning run arms the afternoon run of the same local date', () => {
      expect(at('2026-01-12T12:00:00Z', '2026-01-12T08:00:00Z')).toBe('unlocked');
      expect(at('2026-01-12T15:59:00Z', '2026-01-12T07:00:00Z')).toBe('unlocked');
    });

    it('a grant on the previous day does not arm today', () => {
      expect(at('2026-01-13T07:00:00Z', '2026-01-12T15:00:00Z')).toBe('waiting_for_first_person');
      expect(at('2026-01-13T12:00:00Z', '2026-01-12T15:59:59Z')).toBe('waiting_for_first_person');
      // Friday's grant does not arm Monday.
      expect(at('2026-01-12T07:00:00Z', '2026-01-09T15:00:00Z')).toBe('waiting_for_first_person');
    });

    it('a grant later than now (clock stepped back) does not arm', () => {
      expect(at('2026-01-12T08:00:00Z', '2026-01-12T09:00:00Z')).toBe('waiting_for_first_person');
    });

    it('suspension comes before first-person-in', () => {
      expect(at('2026-01-12T08:00:00Z', null, { suspendedRun: utc('2026-01-12T07:00:00Z') })).toBe('suspended');
      expect(at('2026-01-12T08:00:00Z', '2026-01-12T07:30:00Z', { suspendedRun: utc('2026-01-12T07:00:00Z') })).toBe('suspended');
    });

    it('a run across midnight: a grant before midnight arms it after midnight; the next run waits again', () => {
      const night = schedule(fridayNight, { firstPersonIn: true });
      const memory: ScheduleMemory = { firstPersonAt: utc('2026-01-09T21:00:00Z'), suspendedRun: null };
      expect(scheduleState(night, memory, context('2026-01-09T20:59:00Z')).state).toBe('waiting_for_first_person');
      expect(scheduleState(night, memory, context('2026-01-09T21:00:00Z')).state).toBe('unlocked');
      expect(scheduleState(night, memory, context('2026-01-10T03:00:00Z')).state).toBe('unlocked');
      expect(scheduleState(night, memory, context('2026-01-16T19:00:00Z')).state).toBe('waiting_for_first_person');
    });

    it('without first-person-in a grant is irrelevant', () => {
      expect(scheduleState(schedule(weekdays([[8, 17]])), NO_MEMORY, context('2026-01-12T08:00:00Z')).state).toBe('unlocked');
    });
  });

  // A run longer than the lookahead (all week open) starts each local midnight: a lock by hand lasts the day.
  it('a lock by hand on an all-week schedule stays suspended for the rest of the local day', () => {
    const s = schedule(ALL_WEEK);
    const lockedAt = utc('2026-06-15T10:00:00Z');
    const { runStart } = scheduleState(s, NO_MEMORY, context('2026-06-15T10:00:00Z'));
    // Midnight in Berlin (CEST) is 22:00Z the day before.
    expect(runStart).toBe(utc('2026-06-14T22:00:00Z'));
    const memory: ScheduleMemory = { firstPersonAt: null, suspendedRun: runStart };
    expect(scheduleState(s, memory, { ...context('2026-06-15T10:00:00Z'), at: lockedAt + MINUTE }).state).toBe('suspended');
    expect(scheduleState(s, memory, context('2026-06-15T21:59:00Z')).state).toBe('suspended');
    expect(scheduleState(s, memory, context('2026-06-15T22:00:00Z')).state).toBe('unlocked');
  });

  it('all week open: unlocked, no next change', () => {
    const state = scheduleState(schedule(ALL_WEEK), NO_MEMORY, context('2026-03-29T01:30:00Z'));
    expect(state.state).toBe('unlocked');
    expect(state.inHours).toBe(true);
    expect(state.nextChange).toBeNull();
  });

  it('Berlin spring forward: a range from 2:00 is unlocked from 01:00Z with that run start', () => {
    const s = schedule(week({ [SUN]: [[2, 5]] }));
    expect(scheduleState(s, NO_MEMORY, context('2026-03-29T00:59:59Z'))).toEqual({
      state: 'closed',
      inHours: false,
      runStart: null,
      nextChange: utc('2026-03-29T01:00:00Z'),
    });
    expect(scheduleState(s, NO_MEMORY, context('2026-03-29T01:00:00Z'))).toEqual({
      state: 'unlocked',
      inHours: true,
      runStart: utc('2026-03-29T01:00:00Z'),
      nextChange: utc('2026-03-29T03:00:00Z'),
    });
  });

  it('Lord Howe fall back: the run of hour 1 lasts 90 minutes and a suspension holds throughout', () => {
    const s = schedule(week({ [SUN]: [[1, 2]] }));
    const memory: ScheduleMemory = { firstPersonAt: null, suspendedRun: utc('2026-04-04T14:00:00Z') };
    for (const iso of ['2026-04-04T14:00:00Z', '2026-04-04T14:59:00Z', '2026-04-04T15:00:00Z', '2026-04-04T15:29:00Z']) {
      expect(scheduleState(s, memory, context(iso, lordHowe))).toEqual({
        state: 'suspended',
        inHours: true,
        runStart: utc('2026-04-04T14:00:00Z'),
        nextChange: utc('2026-04-04T15:30:00Z'),
      });
    }
    expect(scheduleState(s, memory, context('2026-04-04T15:30:00Z', lordHowe)).state).toBe('closed');
  });
});

describe('longestUnlockRunHours', () => {
  it.each<[string, TimeMapping, number]>([
    ['all week', ALL_WEEK, Infinity],
    [
      'all week in split ranges',
      Array.from({ length: 7 }, (): HourRange[] => [
        [0, 12],
        [12, 24],
      ]),
      Infinity,
    ],
    ['empty week', week({}), 0],
    ['no days at all', [], 0],
    ['one day given', [[[0, 24]]], 24],
    ['office hours', weekdays([[8, 17]]), 9],
    [
      'lunch break',
      week({
        [MON]: [
          [8, 12],
          [13, 17],
        ],
        [WED]: [[9, 11]],
      }),
      4,
    ],
    [
      'touching ranges',
      week({
        [MON]: [
          [8, 12],
          [12, 17],
        ],
      }),
      9,
    ],
    [
      'overlapping ranges',
      week({
        [MON]: [
          [8, 12],
          [10, 17],
        ],
      }),
      9,
    ],
    ['across midnight', fridayNight, 10],
    ['across Saturday -> Sunday (wrap)', saturdayNight, 10],
    ['Friday evening to Sunday morning', week({ [FRI]: [[18, 24]], [SAT]: [[0, 24]], [SUN]: [[0, 6]] }), 36],
    ['the wrap is the longest run', week({ [SAT]: [[12, 24]], [SUN]: [[0, 24]], [MON]: [[0, 1]], [WED]: [[0, 24]] }), 37],
    ['one hour', week({ [WED]: [[3, 4]] }), 1],
    ['Sunday 00:00 only', week({ [SUN]: [[0, 1]] }), 1],
    ['Saturday 23:00 only', week({ [SAT]: [[23, 24]] }), 1],
    [
      'all week but one hour (the run wraps)',
      Array.from({ length: 7 }, (_, day): HourRange[] =>
        day === WED
          ? [
              [0, 3],
              [4, 24],
            ]
          : [[0, 24]],
      ),
      167,
    ],
    ['all week but Sunday 00:00', Array.from({ length: 7 }, (_, day): HourRange[] => (day === SUN ? [[1, 24]] : [[0, 24]])), 167],
    ['every day [0,24] but Saturday empty', Array.from({ length: 7 }, (_, day): HourRange[] => (day === SAT ? [] : [[0, 24]])), 144],
  ])('%s -> %d', (_name, hours, expected) => {
    expect(longestUnlockRunHours(hours)).toBe(expected);
  });
});
