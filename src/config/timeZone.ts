/** ICU's canonical zone names (some 420), listed once: looking one up costs no locale data. */
let canonicalZones: ReadonlySet<string> | undefined;

/**
 * A zone ICU knows. The canonical names are looked up in ICU's list; only an alias (UTC, US/Eastern, a renamed zone)
 * is asked of a DateTimeFormat, whose first construction loads ICU's locale data (about 25 ms here, several times
 * that on a small Pi): a command that never formats a local time (relock, events) no longer pays it to read its
 * configuration.
 */
export function isValidTimeZone(zone: string): boolean {
  canonicalZones ??= new Set(Intl.supportedValuesOf('timeZone'));
  if (canonicalZones.has(zone)) return true;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}
