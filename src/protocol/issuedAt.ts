/**
 * The order of signed retained messages (lockdown, holidays, guest links and their revocations, the guest-link
 * index) by their issued_at, against a clock that may differ from the signer's.
 *
 * An issued_at more than `futureSkewSeconds` ahead of the agent's clock counts as now + skew (clamped): a
 * service whose clock ran a day ahead cannot stamp a message that later ones, signed once its clock is right,
 * never overtake; they overtake it once signed after that instant (at most the skew after it arrived). The
 * highest clamped issued_at is remembered per subject (`future`), so a copy of a future-stamped message
 * replayed while its stamp is still ahead is not taken as new again.
 */

/** What is held about a subject: the issued_at in force (clamped) and the highest future stamp clamped. */
export interface HeldIssuedAt {
  issuedAt: number | null;
  future?: number | null;
}

export type Ordering = 'newer' | 'same' | 'stale';

export interface Ordered {
  order: Ordering;
  /** Whether this message's issued_at was ahead by more than the skew. */
  clamped: boolean;
  /** What to hold once the message is applied (only when `order` is 'newer'). */
  next: { issuedAt: number; future: number | null };
}

export function orderIssuedAt(held: HeldIssuedAt, issuedAt: number, nowSeconds: number, futureSkewSeconds: number): Ordered {
  const limit = nowSeconds + futureSkewSeconds;
  const clamped = issuedAt > limit;
  const at = clamped ? limit : issuedAt;
  const future = held.future ?? null;
  const next = { issuedAt: at, future: clamped ? Math.max(issuedAt, future ?? 0) : future };
  if (clamped && future !== null && issuedAt <= future) return { order: issuedAt === future ? 'same' : 'stale', clamped, next };
  if (held.issuedAt === null) return { order: 'newer', clamped, next };
  if (at < held.issuedAt) return { order: 'stale', clamped, next };
  // Equal after clamping: a clamped one is newer (its stamp is above every future one held, checked above).
  if (at === held.issuedAt) return { order: clamped ? 'newer' : 'same', clamped, next };
  return { order: 'newer', clamped, next };
}

/** Whether a signed message is older than `maxAgeSeconds` (a replay of something long superseded). */
export function olderThan(issuedAt: number, nowSeconds: number, maxAgeSeconds: number): boolean {
  return nowSeconds - issuedAt > maxAgeSeconds;
}

/** Default skew allowed for the clocks of the service and the agent before a time from the network is clamped. */
export const DEFAULT_FUTURE_SKEW_SECONDS = 300;
