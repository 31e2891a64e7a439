/**
 * The `Retry-After` of a 503 or 429 answer (RFC 9110 section 10.2.3) as a delay in milliseconds: either
 * delay-seconds (`120`) or an HTTP-date (`Wed, 21 Oct 2026 07:28:00 GMT`). A date is read against the answer's
 * own `Date` when it has one, so a door whose clock is off (a Pi without an RTC, before NTP) still waits what the
 * service meant; against `nowMs` otherwise. A date in the past is 0. Anything else (negative, a fraction, text)
 * is null: the answer is then treated as any failure. The cap (the backoff's maximum) is the scheduler's.
 */
export function parseRetryAfter(value: string | undefined, answerDate: string | undefined, nowMs: number): number | null {
  const text = value?.trim();
  if (!text) return null;
  if (/^\d+$/.test(text)) return Number(text) * 1000; // a year or more stays a (large) finite number
  const at = Date.parse(text);
  if (Number.isNaN(at) || !/[A-Za-z]/.test(text)) return null;
  const served = answerDate ? Date.parse(answerDate) : Number.NaN;
  return Math.max(0, at - (Number.isNaN(served) ? nowMs : served));
}
