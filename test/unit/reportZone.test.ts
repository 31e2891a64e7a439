import { describe, expect, it } from 'vitest';
import { csvLine } from '../../src/service/audit/csv.js';
import { readReportRange } from '../../src/service/audit/reportRange.js';
import { ReportZone } from '../../src/service/audit/reportZone.js';

// The reports' calendar (service/audit/reportZone.ts, reportRange.ts): a site's days and times as the reports read
// and write them, across the changes of its clocks.
const berlin = new ReportZone('Europe/Berlin');

describe("a report's range in the site's zone", () => {
  it('takes the autumn day of 25 hours whole, its times with their offsets', () => {
    const range = readReportRange(berlin, '2026-10-25', '2026-10-25', 1);
    expect((range.end - range.start) / 3_600_000).toBe(25);
    expect([berlin.iso(range.start), berlin.iso(range.end)]).toEqual(['2026-10-25T00:00:00+02:00', '2026-10-26T00:00:00+01:00']);
    expect([range.firstDate, range.lastDate]).toEqual(['2026-10-25', '2026-10-25']);
  });

  it('reads a wall time the autumn repeats as its first instant, and refuses one the spring skips', () => {
    expect(new Date(readReportRange(berlin, '2026-10-25T02:30', '2026-10-26', 5).start).toISOString()).toBe('2026-10-25T00:30:00.000Z');
    expect(() => readReportRange(berlin, '2026-03-29T02:30', '2026-03-30', 5)).toThrow('from: 2026-03-29 02:30 does not exist in Europe/Berlin');
  });

  it('starts a day whose midnight the zone skips at its first minute', () => {
    const santiago = new ReportZone('America/Santiago');
    // Chile's clocks went from 00:00 to 01:00 on 2026-09-06.
    expect(santiago.iso(santiago.dayStart('2026-09-06')!)).toBe('2026-09-06T01:00:00-03:00');
    expect(santiago.iso(santiago.dayStart('2026-09-05')!)).toBe('2026-09-05T00:00:00-04:00');
  });

  it('writes an offset of half an hour, and a time to the second', () => {
    expect(new ReportZone('Asia/Kolkata').iso(Date.parse('2026-01-01T00:00:00Z'))).toBe('2026-01-01T05:30:00+05:30');
    expect(new ReportZone('America/New_York').iso(Date.parse('2026-01-01T00:00:00.900Z'))).toBe('2025-12-31T19:00:00-05:00');
  });
});

describe('a CSV line', () => {
  it('quotes what needs it, doubles a quote, and prefixes a formula with a quote mark', () => {
    expect(csvLine(['plain', 'a,b', 'say "hi"', 'two\nlines', '=1+2', '+49 30', '-x', '@SUM(A1)', 42, -3, null])).toBe(
      'plain,"a,b","say ""hi""","two\nlines",\'=1+2,\'+49 30,\'-x,\'@SUM(A1),42,-3,\r\n',
    );
  });
});
