import { describe, expect, it } from 'vitest';
import { compileWeeklySchedule, scheduleOpenAt, skippedLocalMinutes, type WeeklySchedule } from '../../src/core/weeklySchedule.js';
import { localTimeIn, zonedInstant } from '../../src/core/schedule.js';

function compiled(spec: unknown): WeeklySchedule {
  const result = compileWeeklySchedule(spec);
  if ('problems' in result) throw new Error(JSON.stringify(result.problems));
  return result.schedule;
}

function problems(spec: unknown): string[] {
  const result = compileWeeklySchedule(spec);
  if ('schedule' in result) return [];
  return result.problems.map((p) => `${p.path.join('.')}: ${p.message}`);
}

/** Minute of the week from a day (0 = Sunday) and "HH:MM". */
const at = (day: number, clock: string) => day * 1440 + Number(clock.slice(0, 2)) * 60 + Number(clock.slice(3));

describe('compileWeeklySchedule', () => {
  it('opens at the start minute and closes at the end minute (end exclusive), per weekday', () => {
    const s = compiled({ mon: ['07:30-18:00'] });
    expect(scheduleOpenAt(s, at(1, '07:29'))).toBe(false);
    expect(scheduleOpenAt(s, at(1, '07:30'))).toBe(true);
    expect(scheduleOpenAt(s, at(1, '17:59'))).toBe(true);
    expect(scheduleOpenAt(s, at(1, '18:00'))).toBe(false);
    expect(scheduleOpenAt(s, at(2, '08:00'))).toBe(false);
    expect(s.holidays).toBe('closed');
  });

  it('runs an overnight range past midnight into the next day, Saturday into Sunday too', () => {
    const s = compiled({ mon: ['22:00-06:00'], sat: ['23:00-01:00'] });
    expect(scheduleOpenAt(s, at(1, '21:59'))).toBe(false);
    expect(scheduleOpenAt(s, at(1, '23:59'))).toBe(true);
    expect(scheduleOpenAt(s, at(2, '00:00'))).toBe(true);
    expect(scheduleOpenAt(s, at(2, '05:59'))).toBe(true);
    expect(scheduleOpenAt(s, at(2, '06:00'))).toBe(false);
    // Tuesday's own evening is not Monday's night.
    expect(scheduleOpenAt(s, at(2, '23:00'))).toBe(false);
    expect(scheduleOpenAt(s, at(6, '23:30'))).toBe(true);
    expect(scheduleOpenAt(s, at(0, '00:30'))).toBe(true);
    expect(scheduleOpenAt(s, at(0, '01:00'))).toBe(false);
  });

  it('takes 24:00 as the end of the day and the whole day as 00:00-24:00', () => {
    const s = compiled({ fri: ['00:00-24:00'], holidays: 'open' });
    expect(scheduleOpenAt(s, at(5, '00:00'))).toBe(true);
    expect(scheduleOpenAt(s, at(5, '23:59'))).toBe(true);
    expect(scheduleOpenAt(s, at(6, '00:00'))).toBe(false);
    expect(s.holidays).toBe('open');
  });

  it('names every bad range by its path', () => {
    expect(problems({ mon: [] })).toEqual(['mon: an empty list: leave the day out for no access that day']);
    expect(problems({ mon: ['18:00-25:00'] })).toEqual(['mon.0: "18:00-25:00" is past 24:00']);
    expect(problems({ mon: ['24:00-02:00'] })).toEqual(['mon.0: "24:00-02:00" starts at 24:00: write 00:00 on the next day']);
    expect(problems({ mon: ['09:00-09:00'] })).toEqual(['mon.0: "09:00-09:00" is empty (start and end are the same)']);
    expect(problems({ mon: ['9-17'] })).toEqual(['mon.0: "9-17": expected a range "HH:MM-HH:MM" (e.g. "07:30-18:00")']);
    expect(problems({ tue: ['08:60-09:00'] })).toEqual(['tue.0: "08:60-09:00": minutes run from 00 to 59']);
    expect(problems({ monday: ['08:00-09:00'] })).toEqual(['monday: unknown key: use sun, mon, tue, wed, thu, fri, sat and holidays']);
    expect(problems({ holidays: 'closed' })).toEqual([': no weekday has a range: list at least one day']);
    expect(problems({ mon: ['08:00-09:00'], holidays: 'sometimes' })).toEqual(['holidays: expected "closed" or "open"']);
  });

  it('refuses overlapping ranges, an overnight tail over the next day included', () => {
    expect(problems({ mon: ['08:00-12:00', '11:00-14:00'] })).toEqual(['mon.1: "11:00-14:00" overlaps "08:00-12:00" (mon[0]): merge them into one range']);
    expect(problems({ mon: ['22:00-06:00'], tue: ['05:00-09:00'] })).toEqual([
      'tue.0: "05:00-09:00" overlaps "22:00-06:00" (mon[0]): merge them into one range',
    ]);
    // Touching is not overlapping.
    expect(problems({ mon: ['08:00-12:00', '12:00-14:00'] })).toEqual([]);
  });
});

describe('the local minute of the week across daylight-saving changes', () => {
  const night = compiled({ sat: ['22:00-06:00'] });
  const minuteOfWeek = (zone: string, iso: string) => {
    const t = localTimeIn(zone)(Date.parse(iso));
    return t.weekday * 1440 + t.minuteOfDay;
  };

  it('Europe/Berlin, spring forward in the night of Saturday 2026-03-28: open until 06:00 local, which comes an hour sooner', () => {
    // 05:30 CEST on Sunday 29 March is 03:30Z; 06:00 CEST is 04:00Z.
    expect(scheduleOpenAt(night, minuteOfWeek('Europe/Berlin', '2026-03-29T03:30:00Z'))).toBe(true);
    expect(scheduleOpenAt(night, minuteOfWeek('Europe/Berlin', '2026-03-29T04:00:00Z'))).toBe(false);
    // 22:00 CET on Saturday is 21:00Z.
    expect(scheduleOpenAt(night, minuteOfWeek('Europe/Berlin', '2026-03-28T20:59:00Z'))).toBe(false);
    expect(scheduleOpenAt(night, minuteOfWeek('Europe/Berlin', '2026-03-28T21:00:00Z'))).toBe(true);
  });

  it('America/New_York, fall back in the night of Saturday 2026-10-31: the repeated hour is inside, 06:00 EST ends it', () => {
    // 01:30 local happens twice (05:30Z EDT, 06:30Z EST); 06:00 EST is 11:00Z.
    expect(scheduleOpenAt(night, minuteOfWeek('America/New_York', '2026-11-01T05:30:00Z'))).toBe(true);
    expect(scheduleOpenAt(night, minuteOfWeek('America/New_York', '2026-11-01T06:30:00Z'))).toBe(true);
    expect(scheduleOpenAt(night, minuteOfWeek('America/New_York', '2026-11-01T10:59:00Z'))).toBe(true);
    expect(scheduleOpenAt(night, minuteOfWeek('America/New_York', '2026-11-01T11:00:00Z'))).toBe(false);
  });
});

describe('skippedLocalMinutes', () => {
  it('finds the spring-forward gap of Europe/Berlin (Sunday 02:00-03:00) and of Australia/Lord_Howe (30 minutes)', () => {
    const from = Date.parse('2026-01-01T00:07:13Z'); // not on a quarter hour
    expect(skippedLocalMinutes('Europe/Berlin', from)).toContainEqual({ day: 0, start: 120, end: 180, date: '2026-03-29' });
    expect(skippedLocalMinutes('Australia/Lord_Howe', from)).toContainEqual({ day: 0, start: 120, end: 150, date: '2026-10-04' });
    expect(skippedLocalMinutes('UTC', from)).toEqual([]);
  });
});

describe('zonedInstant', () => {
  it('gives the instant of a local time, the first of a repeated one, and null in a gap', () => {
    expect(new Date(zonedInstant('Europe/Berlin', '2026-12-24', 19 * 60)!).toISOString()).toBe('2026-12-24T18:00:00.000Z');
    expect(new Date(zonedInstant('America/New_York', '2026-11-01', 90)!).toISOString()).toBe('2026-11-01T05:30:00.000Z');
    expect(zonedInstant('Europe/Berlin', '2026-03-29', 150)).toBeNull();
    expect(zonedInstant('Europe/Berlin', '2026-02-30', 600)).toBeNull();
  });
});
