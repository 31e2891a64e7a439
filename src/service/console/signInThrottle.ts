/** How often the console's mailed sign-in may be asked for (docs/reference-service.md, "The console"). */
export interface SignInLimits {
  /** Links asked for one address within `windowMs`. */
  perAddress: number;
  /** Links asked for by one client (its remote address) within `windowMs`, whatever the addresses. */
  perClient: number;
  windowMs: number;
  /** Addresses and clients counted at once: past it every request waits (the memory stays bounded). */
  maxTracked: number;
}

const SIGN_IN_LIMITS: Readonly<SignInLimits> = { perAddress: 3, perClient: 10, windowMs: 15 * 60_000, maxTracked: 10_000 };

/** A request refused: which limit, how long until one more is allowed, and whether it is the first refusal since. */
export interface ThrottleRefusal {
  limit: 'address' | 'client' | 'busy';
  retryMs: number;
  /** The first refusal of this address or client since its last allowed request: the one to log. */
  first: boolean;
}

interface Counted {
  /** When each allowed request came (monotonic ms), oldest first. */
  times: number[];
  refused: boolean;
}

/**
 * The throttle on mailed sign-in links (issue 51 item 6), over a sliding window: at most `perAddress` requests for
 * one address and `perClient` from one client, counted whether or not the address belongs to anyone (a refusal
 * tells nothing about who may sign in). Only allowed requests count; what has left the window is dropped at each
 * request, so the counts hold at most the last window's addresses and clients.
 */
export class SignInThrottle {
  private readonly counted = new Map<string, Counted>();
  private busyRefused = false;

  constructor(private readonly limits: Readonly<SignInLimits> = SIGN_IN_LIMITS) {}

  /** Counts a request for `address` from `client` at `now`, or says why it is refused (then it does not count). */
  take(address: string, client: string, now: number): ThrottleRefusal | null {
    this.prune(now);
    const keys: Array<[ThrottleRefusal['limit'], string, number]> = [
      ['address', `address ${address.trim().toLowerCase()}`, this.limits.perAddress],
      ['client', `client ${client}`, this.limits.perClient],
    ];
    for (const [limit, key, max] of keys) {
      const entry = this.counted.get(key);
      if (entry && entry.times.length >= max) {
        const first = !entry.refused;
        entry.refused = true;
        return { limit, retryMs: entry.times[0]! + this.limits.windowMs - now, first };
      }
    }
    const fresh = keys.filter(([, key]) => !this.counted.has(key)).length;
    if (this.counted.size + fresh > this.limits.maxTracked) {
      const first = !this.busyRefused;
      this.busyRefused = true;
      return { limit: 'busy', retryMs: this.oldest() + this.limits.windowMs - now, first };
    }
    this.busyRefused = false;
    for (const [, key] of keys) {
      const entry = this.counted.get(key) ?? { times: [], refused: false };
      entry.times.push(now);
      entry.refused = false;
      this.counted.set(key, entry);
    }
    return null;
  }

  private prune(now: number): void {
    const since = now - this.limits.windowMs;
    for (const [key, entry] of this.counted) {
      while (entry.times.length > 0 && entry.times[0]! <= since) entry.times.shift();
      if (entry.times.length === 0) this.counted.delete(key);
    }
  }

  private oldest(): number {
    let oldest = Infinity;
    for (const entry of this.counted.values()) oldest = Math.min(oldest, entry.times[0]!);
    return oldest;
  }
}
