import type { RefusalReason } from './refusals.js';

/** The service's bounds on directory work (config server.maxDirectoryAnswers, maxDirectoryBuilds, retryAfterSeconds). */
export interface LoadLimits {
  /** Full GET /directory answers being sent at once; one more is answered 503 with Retry-After. */
  maxDirectoryAnswers: number;
  /** Directory answers being built or compressed at once (each distinct one; requests for the same share it). */
  maxDirectoryBuilds: number;
  /** The Retry-After of a refusal is this to twice this, at random. */
  retryAfterSeconds: number;
}

export const DEFAULT_LOAD_LIMITS: Readonly<LoadLimits> = { maxDirectoryAnswers: 200, maxDirectoryBuilds: 4, retryAfterSeconds: 5 };

/**
 * A bound on work in flight (issue 28 item 2): `tryEnter` takes a place, or answers null when all `max` are taken,
 * so the caller sheds the request (503 with Retry-After) instead of queueing it until it times out.
 */
export class Gate {
  private taken = 0;

  constructor(readonly max: number) {}

  /** The places taken now. */
  get inFlight(): number {
    return this.taken;
  }

  /** A place, with its release (which may be called more than once), or null when the gate is full. */
  tryEnter(): (() => void) | null {
    if (this.taken >= this.max) return null;
    this.taken++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.taken--;
    };
  }
}

/** The service is over a configured bound: the request is answered 503 with Retry-After (server.ts). */
export class Overloaded extends Error {
  constructor(
    readonly reason: RefusalReason,
    message: string,
  ) {
    super(message);
  }
}
