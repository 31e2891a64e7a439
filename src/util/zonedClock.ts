/**
 * A time zone's wall clock: an instant's date (`2026-11-29`) and 24-hour time (`14:05:09`) as that zone shows
 * them. Intl's formatters are costly to build: one per zone, made here once, used for every instant. Throws
 * RangeError for a zone Intl does not know. The console (console/siteTime.ts), the log's pretty form
 * (logFormat.ts) and the demo's terminal all show times through it.
 */
export function zonedClock(timeZone: string): (ms: number) => { date: string; time: string } {
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  return (ms) => {
    const p: Record<string, string> = {};
    for (const part of format.formatToParts(ms)) p[part.type] = part.value;
    return { date: `${p.year}-${p.month}-${p.day}`, time: `${p.hour}:${p.minute}:${p.second}` };
  };
}
