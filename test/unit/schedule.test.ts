import { describe, it, expect } from 'vitest';
import { ALL_WEEK, localTimeIn, parseServiceTime, scheduleAllows, type TimeMapping } from '../../src/core/schedule.js';

const utc = (iso: string) => Date.parse(iso);

describe('parseServiceTime', () => {
  it.each([
    ['2026-03-29 01:00:00', '2026-03-29T01:00:00Z'],
    ['2024-02-29 23:59:59', '2024-02-29T23:59:59Z'],
    ['2026-12-31 00:00:00', '2026-12-31T00:00:00Z'],
    ['1999-01-01 12:34:56', '1999-01-01T12:34:56Z'],
  ])('%s is read as UTC', (text, iso) => {
    expect(parseServiceTime(text)).toBe(utc(iso));
  });

  it.each([
    ['', 'empty'],
    ['2026-03-29T01:00:00', 'ISO T separator'],
    ['2026-03-29 01:00:00Z', 'zone suffix'],
    ['2026-03-29 01:00', 'no seconds'],
    ['2026-03-29', 'date only'],
    ['2026-3-29 01:00:00', 'one-digit month'],
    ['2026-03-29 1:00:00', 'one-digit hour'],
    [' 2026-03-29 01:00:00', 'leading space'],
    ['2026-03-29 01:00:00.000', 'fraction'],
    ['2026-03-29  01:00:00', 'two spaces'],
    ['2026-02-30 00:00:00', 'Feb 30'],
    ['2025-02-29 00:00:00', 'Feb 29 in a common year'],
    ['2026-04-31 00:00:00', 'Apr 31'],
    ['2026-13-01 00:00:00', 'month 13'],
    ['2026-00-10 00:00:00', 'month 0'],
    ['2026-01-00 00:00:00', 'day 0'],
    ['2026-01-01 24:00:00', 'hour 24'],
    ['2026-01-01 23:60:00', 'minute 60'],
    ['2026-01-01 23:59:60', 'second 60'],
  ])('rejects %j (%s)', (text) => {
    expect(parseServiceTime(text)).toBeNull();
  });
});

describe('scheduleAllows', () => {
  const noneOnSunday: TimeMapping = [[], [[0, 24]], [[0, 24]], [[0, 24]], [[0, 24]], [[0, 24]], [[0, 24]]];
  const officeHours: TimeMapping = [
    [],
    [
      [8, 12],
      [13, 17],
    ],
    [[8, 17]],
    [[8, 17]],
    [[8, 17]],
    [[8, 17]],
    [],
  ];

  it('[[0,24]] allows every hour of every day', () => {
    for (let weekday = 0; weekday < 7; weekday++) {
      for (let hour = 0; hour < 24; hour++) expect(scheduleAllows(ALL_WEEK, { weekday, hour })).toBe(true);
    }
  });

  it('[] allows no hour of that day, other days unaffected', () => {
    for (let hour = 0; hour < 24; hour++) {
      expect(scheduleAllows(noneOnSunday, { weekday: 0, hour })).toBe(false);
      expect(scheduleAllows(noneOnSunday, { weekday: 1, hour })).toBe(true);
    }
  });

  it.each([
    [1, 7, false],
    [1, 8, true], // start inclusive
    [1, 11, true],
    [1, 12, false], // end exclusive
    [1, 13, true],
    [1, 16, true],
    [1, 17, false],
    [2, 12, true],
    [0, 10, false],
    [6, 10, false],
  ])('office hours: weekday %i hour %i -> %s', (weekday, hour, allowed) => {
    expect(scheduleAllows(officeHours, { weekday, hour })).toBe(allowed);
  });

  it('a mapping with fewer than 7 days denies the missing days', () => {
    expect(scheduleAllows([[[0, 24]]], { weekday: 3, hour: 10 })).toBe(false);
    expect(scheduleAllows([[[0, 24]]], { weekday: 0, hour: 10 })).toBe(true);
  });

  it('Sunday is element 0', () => {
    const sundayOnly: TimeMapping = [[[0, 24]], [], [], [], [], [], []];
    expect(scheduleAllows(sundayOnly, { weekday: 0, hour: 12 })).toBe(true);
    expect(scheduleAllows(sundayOnly, { weekday: 6, hour: 12 })).toBe(false);
    expect(scheduleAllows(sundayOnly, { weekday: 1, hour: 12 })).toBe(false);
  });
});

describe('localTimeIn', () => {
  const cases: Array<[string, string, number, number, string]> = [
    // Europe/Berlin, spring forward 2026-03-29 (Sunday): 02:00 CET -> 03:00 CEST at 01:00 UTC.
    ['Europe/Berlin', '2026-03-29T00:30:00Z', 0, 1, '01:30 CET before the gap'],
    ['Europe/Berlin', '2026-03-29T00:59:59Z', 0, 1, 'last second before the gap'],
    ['Europe/Berlin', '2026-03-29T01:00:00Z', 0, 3, '03:00 CEST, hour 2 skipped'],
    ['Europe/Berlin', '2026-03-29T01:30:00Z', 0, 3, '03:30 CEST'],
    // Fall back 2026-10-25 (Sunday): 03:00 CEST -> 02:00 CET at 01:00 UTC; local hour 2 occurs twice.
    ['Europe/Berlin', '2026-10-25T00:30:00Z', 0, 2, '02:30 CEST, first hour 2'],
    ['Europe/Berlin', '2026-10-25T01:30:00Z', 0, 2, '02:30 CET, second hour 2'],
    ['Europe/Berlin', '2026-10-25T02:00:00Z', 0, 3, '03:00 CET'],
    ['Europe/Berlin', '2026-01-04T23:00:00Z', 1, 0, 'midnight is hour 0 (not 24) on Monday'],
    ['Europe/Berlin', '2026-01-03T22:59:59Z', 6, 23, 'Saturday 23:59'],
    ['Europe/Berlin', '2026-07-01T12:00:00Z', 3, 14, 'summer Wednesday'],
    // Asia/Kathmandu, UTC+05:45: the local hour changes at a quarter past the UTC hour.
    ['Asia/Kathmandu', '2026-01-01T00:14:59Z', 4, 5, '05:59'],
    ['Asia/Kathmandu', '2026-01-01T00:15:00Z', 4, 6, '06:00'],
    ['Asia/Kathmandu', '2026-01-03T18:14:59Z', 6, 23, 'Saturday 23:59'],
    ['Asia/Kathmandu', '2026-01-03T18:15:00Z', 0, 0, 'Sunday 00:00'],
    // America/New_York: behind UTC, so the local weekday is earlier than the UTC one.
    ['America/New_York', '2026-01-01T03:00:00Z', 3, 22, 'Wednesday Dec 31 22:00 EST'],
    ['America/New_York', '2026-01-01T05:00:00Z', 4, 0, 'Thursday 00:00 EST'],
    ['America/New_York', '2026-03-08T06:59:00Z', 0, 1, '01:59 EST before the gap'],
    ['America/New_York', '2026-03-08T07:00:00Z', 0, 3, '03:00 EDT'],
    ['America/New_York', '2026-11-01T05:30:00Z', 0, 1, '01:30 EDT'],
    ['America/New_York', '2026-11-01T06:30:00Z', 0, 1, '01:30 EST, repeated hour'],
    ['UTC', '2026-03-29T00:30:00Z', 0, 0, 'UTC Sunday'],
  ];

  it.each(cases)('%s at %s -> weekday %i hour %i (%s)', (zone, iso, weekday, hour) => {
    expect(localTimeIn(zone)(utc(iso))).toMatchObject({ weekday, hour });
  });

  it('gives the same answers when one function is reused across instants in any order (no stale cache)', () => {
    for (const zone of ['Europe/Berlin', 'Asia/Kathmandu', 'America/New_York']) {
      const at = localTimeIn(zone);
      const mine = cases.filter((c) => c[0] === zone);
      for (const order of [mine, [...mine].reverse()]) {
        for (const [, iso, weekday, hour] of order) expect(at(utc(iso))).toMatchObject({ weekday, hour });
      }
    }
  });

  it('walks every hour across the Berlin spring-forward night with hour 2 never seen', () => {
    const at = localTimeIn('Europe/Berlin');
    const hours: number[] = [];
    for (let t = utc('2026-03-28T22:00:00Z'); t < utc('2026-03-29T04:00:00Z'); t += 60 * 60 * 1000) {
      hours.push(at(t).hour);
    }
    expect(hours).toEqual([23, 0, 1, 3, 4, 5]);
  });

  it('walks every hour across the Berlin fall-back night with hour 2 seen twice', () => {
    const at = localTimeIn('Europe/Berlin');
    const hours: number[] = [];
    for (let t = utc('2026-10-24T21:00:00Z'); t < utc('2026-10-25T04:00:00Z'); t += 60 * 60 * 1000) {
      hours.push(at(t).hour);
    }
    expect(hours).toEqual([23, 0, 1, 2, 2, 3, 4]);
  });

  it('every minute of a Kathmandu day maps to the right local hour', () => {
    const at = localTimeIn('Asia/Kathmandu');
    const start = utc('2026-05-10T00:00:00Z');
    for (let m = 0; m < 24 * 60; m++) {
      const t = start + m * 60_000;
      const localMinutes = (m + 5 * 60 + 45) % (24 * 60);
      expect(at(t).hour).toBe(Math.floor(localMinutes / 60));
    }
  });

  it('rejects an unknown time zone', () => {
    expect(() => localTimeIn('Mars/Olympus_Mons')).toThrow();
  });
});

describe('localTimeIn date (the local calendar date)', () => {
  it.each([
    // Around local midnight in summer: the local date differs from the UTC date.
    ['Europe/Berlin', '2026-06-30T21:59:59Z', 2, 23, '2026-06-30'],
    ['Europe/Berlin', '2026-06-30T22:00:00Z', 3, 0, '2026-07-01'],
    ['Europe/Berlin', '2026-06-30T23:30:00Z', 3, 1, '2026-07-01'],
    ['America/New_York', '2026-07-01T02:00:00Z', 2, 22, '2026-06-30'],
    ['America/New_York', '2026-07-01T03:59:59Z', 2, 23, '2026-06-30'],
    ['America/New_York', '2026-07-01T04:00:00Z', 3, 0, '2026-07-01'],
    ['Australia/Lord_Howe', '2026-06-30T13:29:59Z', 2, 23, '2026-06-30'], // UTC+10:30
    ['Australia/Lord_Howe', '2026-06-30T13:30:00Z', 3, 0, '2026-07-01'],
    ['UTC', '2026-06-30T23:30:00Z', 2, 23, '2026-06-30'],
    ['UTC', '2026-07-01T00:00:00Z', 3, 0, '2026-07-01'],
    // Across the year change.
    ['Europe/Berlin', '2026-12-31T22:59:59Z', 4, 23, '2026-12-31'],
    ['Europe/Berlin', '2026-12-31T23:00:00Z', 5, 0, '2027-01-01'],
    ['America/New_York', '2027-01-01T03:00:00Z', 4, 22, '2026-12-31'],
    ['America/New_York', '2027-01-01T04:59:59Z', 4, 23, '2026-12-31'],
    ['America/New_York', '2027-01-01T05:00:00Z', 5, 0, '2027-01-01'],
    ['Australia/Lord_Howe', '2026-12-31T12:59:59Z', 4, 23, '2026-12-31'], // UTC+11 (summer time)
    ['Australia/Lord_Howe', '2026-12-31T13:00:00Z', 5, 0, '2027-01-01'],
    ['Asia/Kathmandu', '2026-12-31T18:14:59Z', 4, 23, '2026-12-31'],
    ['Asia/Kathmandu', '2026-12-31T18:15:00Z', 5, 0, '2027-01-01'],
    ['UTC', '2026-12-31T23:59:59Z', 4, 23, '2026-12-31'],
    ['UTC', '2027-01-01T00:00:00Z', 5, 0, '2027-01-01'],
    // A leap day, and the DST change days keep their date.
    ['Europe/Berlin', '2028-02-28T23:00:00Z', 2, 0, '2028-02-29'],
    ['Europe/Berlin', '2028-02-29T22:59:59Z', 2, 23, '2028-02-29'],
    ['Europe/Berlin', '2026-03-29T01:00:00Z', 0, 3, '2026-03-29'],
    ['Europe/Berlin', '2026-10-25T00:30:00Z', 0, 2, '2026-10-25'],
    ['Europe/Berlin', '2026-10-25T01:30:00Z', 0, 2, '2026-10-25'],
    ['Australia/Lord_Howe', '2026-10-03T15:30:00Z', 0, 2, '2026-10-04'],
    ['Australia/Lord_Howe', '2026-04-04T15:00:00Z', 0, 1, '2026-04-05'],
  ])('%s at %s -> weekday %i hour %i on %s', (zone, iso, weekday, hour, date) => {
    expect(localTimeIn(zone)(utc(iso))).toMatchObject({ weekday, hour, date });
  });

  it('pads years before 1000 to four digits', () => {
    expect(localTimeIn('UTC')(Date.UTC(999, 5, 1, 12)).date).toBe('0999-06-01');
  });

  it('one function reused across midnight, forwards and backwards, gives each instant its own date', () => {
    for (const zone of ['Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'UTC']) {
      const at = localTimeIn(zone);
      const reference = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' });
      const minutes: number[] = [];
      for (let t = utc('2026-12-31T00:00:00Z'); t < utc('2027-01-02T00:00:00Z'); t += 7 * 60_000) minutes.push(t);
      for (const order of [minutes, [...minutes].reverse()]) {
        for (const t of order) expect(at(t).date).toBe(reference.format(t));
      }
    }
  });

  it('every quarter hour of 2026 in Lord Howe and New York has the local date (DST days included)', () => {
    for (const zone of ['Australia/Lord_Howe', 'America/New_York']) {
      const at = localTimeIn(zone);
      const reference = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' });
      for (let t = utc('2026-01-01T00:00:00Z'); t < utc('2027-01-01T00:00:00Z'); t += 15 * 60_000) {
        // The last instant of each quarter too: a quarter never straddles a local midnight.
        const date = at(t).date;
        if (date !== reference.format(t) || at(t + 15 * 60_000 - 1).date !== reference.format(t + 15 * 60_000 - 1)) {
          expect.fail(`${zone} at ${new Date(t).toISOString()}: ${date} vs ${reference.format(t)}`);
        }
      }
    }
  });
});
