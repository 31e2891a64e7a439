import { describe, expect, it } from 'vitest';
import { nextReset, parseDailyTime } from '../../src/core/dailyReset.js';

const utc = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();

describe('parseDailyTime', () => {
  it.each([
    ['00:00', 0],
    ['03:30', 210],
    ['23:59', 1439],
  ])('%s is minute %i of the day', (text, minute) => {
    expect(parseDailyTime(text)).toBe(minute);
  });

  it.each(['24:00', '23:60', '3:30', '03:3', '03:30:00', ' 03:30', '', 'noon'])('rejects %j', (text) => {
    expect(parseDailyTime(text)).toBeNull();
  });
});

describe('nextReset', () => {
  it.each([
    // An ordinary day: today's time if still ahead, else tomorrow's.
    ['Europe/Berlin', '03:00', '2026-06-10T00:00:00Z', '2026-06-10T01:00:00.000Z'],
    ['Europe/Berlin', '03:00', '2026-06-10T01:00:00Z', '2026-06-11T01:00:00.000Z'],
    ['Europe/Berlin', '03:00', '2026-06-10T01:00:00.001Z', '2026-06-11T01:00:00.000Z'],
    ['UTC', '00:00', '2026-12-31T23:59:59Z', '2027-01-01T00:00:00.000Z'],
    ['Asia/Kathmandu', '00:00', '2026-06-10T00:00:00Z', '2026-06-10T18:15:00.000Z'],
    // Spring forward: 02:30 does not exist in Berlin on 2026-03-29; it falls at the first minute after the gap (03:00 CEST).
    ['Europe/Berlin', '02:30', '2026-03-28T12:00:00Z', '2026-03-29T01:00:00.000Z'],
    ['Europe/Berlin', '02:00', '2026-03-28T12:00:00Z', '2026-03-29T01:00:00.000Z'],
    // ... and on the next day at 02:30 again.
    ['Europe/Berlin', '02:30', '2026-03-29T01:00:00Z', '2026-03-30T00:30:00.000Z'],
    ['America/New_York', '02:15', '2026-03-08T05:00:00Z', '2026-03-08T07:00:00.000Z'],
    // Lord Howe moves by half an hour: 02:00-02:30 is skipped on 2026-10-04.
    ['Australia/Lord_Howe', '02:10', '2026-10-03T12:00:00Z', '2026-10-03T15:30:00.000Z'],
    // Santiago skips its midnight (24:00 -> 01:00) on 2026-09-06: 00:00 falls at 01:00 -03.
    ['America/Santiago', '00:00', '2026-09-05T12:00:00Z', '2026-09-06T04:00:00.000Z'],
    // Fall back: 02:30 happens twice in Berlin on 2026-10-25; the first (CEST, 00:30Z) only.
    ['Europe/Berlin', '02:30', '2026-10-24T12:00:00Z', '2026-10-25T00:30:00.000Z'],
    ['Europe/Berlin', '02:30', '2026-10-25T00:30:00Z', '2026-10-26T01:30:00.000Z'],
    ['Europe/Berlin', '02:30', '2026-10-25T01:00:00Z', '2026-10-26T01:30:00.000Z'],
  ])('%s %s after %s: %s', (zone, time, after, expected) => {
    expect(iso(nextReset(utc(after), time, zone))).toBe(expected);
  });

  it('fires once a day across a whole year of DST changes, each at the local time or just after a gap', () => {
    for (const zone of ['Europe/Berlin', 'Australia/Lord_Howe']) {
      let at = utc('2026-01-01T00:00:00Z');
      const fired = new Set<string>();
      for (let i = 0; i < 365; i++) {
        const next = nextReset(at, '02:15', zone);
        const gap = next - at;
        // Between 21 and 27 hours apart (a 23- or 25-hour day, half an hour on Lord Howe), never twice on a date.
        if (i > 0) expect(gap).toBeGreaterThanOrEqual(21 * 3600_000);
        expect(gap).toBeLessThanOrEqual(27 * 3600_000);
        const local = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(next);
        expect(fired.has(local), `${zone} ${local}`).toBe(false);
        fired.add(local);
        at = next;
      }
    }
  });

  it('throws on a time that is not HH:MM', () => {
    expect(() => nextReset(0, '25:00', 'UTC')).toThrow(/HH:MM/);
  });
});
