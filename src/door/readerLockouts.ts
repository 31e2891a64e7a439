import type { Logger } from 'pino';
import { KEYPAD_IDLE, isLockedOut, recordFailure, type KeypadLockoutPolicy } from '../core/keypad.js';
import type { EventType } from '../store/eventLog.js';
import type { Clock, Timers } from '../util/clock.js';

export type LockoutKind = 'pin' | 'card';

export interface ReaderLockoutsDeps {
  policies: Record<LockoutKind, KeypadLockoutPolicy>;
  clock: Clock;
  timers: Timers;
  logger: Logger;
  record: (type: EventType, data: Record<string, unknown>) => void;
}

const STARTED: Record<LockoutKind, { type: EventType; log: string }> = {
  pin: { type: 'keypad_locked_out', log: 'keypad locked out after repeated wrong PINs' },
  card: { type: 'card_locked_out', log: 'reader locked out after repeated unknown cards' },
};

/**
 * A door's two lockouts: wrong PINs lock the keypad, unknown cards and tokens the reader (a card emulator cannot
 * try numbers at serial speed). Attempts refused during a lockout: the first is recorded by the caller, the rest
 * counted and recorded as one summary (with `count`) when the lockout ends, so a flood cannot fill the audit log.
 */
export class ReaderLockouts {
  private readonly failures: Record<LockoutKind, typeof KEYPAD_IDLE> = { pin: KEYPAD_IDLE, card: KEYPAD_IDLE };
  private readonly refused: Record<LockoutKind, number> = { pin: 0, card: 0 };
  private readonly timers: Record<LockoutKind, unknown> = { pin: null, card: null };

  constructor(private readonly deps: ReaderLockoutsDeps) {}

  isLockedOut(kind: LockoutKind): boolean {
    return isLockedOut(this.failures[kind], this.deps.clock.monoNow());
  }

  /** A wrong PIN or an unknown card: counted; the lockout it may start is recorded. */
  failed(kind: LockoutKind): void {
    const policy = this.deps.policies[kind];
    const { state, lockoutStarted } = recordFailure(this.failures[kind], this.deps.clock.monoNow(), policy);
    this.failures[kind] = state;
    if (!lockoutStarted) return;
    this.deps.record(STARTED[kind].type, { seconds: policy.lockoutSeconds });
    this.deps.logger.warn(STARTED[kind].log);
    this.timers[kind] = this.deps.timers.setTimeout(() => {
      this.timers[kind] = null;
      this.summarize(kind);
    }, policy.lockoutSeconds * 1000);
  }

  /** An attempt refused for the lockout; true for the first of this lockout (the caller records that one). */
  refusedDuringLockout(kind: LockoutKind): boolean {
    return this.refused[kind]++ === 0;
  }

  stop(): void {
    for (const kind of ['pin', 'card'] as const) {
      if (this.timers[kind] !== null) this.deps.timers.clearTimeout(this.timers[kind]);
      this.timers[kind] = null;
      this.summarize(kind);
    }
  }

  private summarize(kind: LockoutKind): void {
    const count = this.refused[kind] - 1; // the first one was recorded on its own
    this.refused[kind] = 0;
    if (count <= 0) return;
    const reason = kind === 'pin' ? 'keypad_locked_out' : 'card_locked_out';
    this.deps.record('access_denied', { kind, hint: kind === 'pin' ? 'PIN' : '…', reason, holders: [], count });
  }
}
