import {
  KEYPAD_IDLE,
  isLockedOut,
  recordFailure,
  restoreKeypadState,
  saveKeypadState,
  type KeypadLockoutPolicy,
  type KeypadState,
  type SavedKeypadState,
} from '../core/keypad.js';
import type { Clock } from '../util/clock.js';

export interface KeypadGuessesDeps {
  policy: KeypadLockoutPolicy;
  clock: Clock;
  /** The state saved by the last run (state.db), read once at construction. */
  load?: () => unknown;
  /** Saves the state (through the pending writes): called after the decision that changed it, never before. */
  save?: (state: SavedKeypadState) => void;
}

/**
 * Wrong PINs counted once for the whole agent (every door's keypad), so the next door gives no fresh tries, and
 * kept in state.db so a restart gives none either. Runs on the monotonic clock; the write is deferred to a
 * microtask, after the reader has been answered, and coalesced.
 */
export class KeypadGuesses {
  private state: KeypadState;
  private saveQueued = false;

  constructor(private readonly deps: KeypadGuessesDeps) {
    const saved = deps.load?.();
    this.state = saved === undefined ? KEYPAD_IDLE : restoreKeypadState(saved, deps.clock.monoNow(), deps.policy);
    // A lockout restarted in full ends later than the saved one said: saved again for `door-agent status`.
    if (this.state.lockedUntil !== null) this.queueSave();
  }

  get policy(): KeypadLockoutPolicy {
    return this.deps.policy;
  }

  isLockedOut(): boolean {
    return isLockedOut(this.state, this.deps.clock.monoNow());
  }

  /** When the lockout in progress ends (monotonic ms); null when there is none. */
  lockedUntil(): number | null {
    return this.isLockedOut() ? this.state.lockedUntil : null;
  }

  /** A wrong PIN at any door. Returns the length (seconds) of the lockout it started, or null. */
  failed(): number | null {
    const now = this.deps.clock.monoNow();
    const { state, lockoutStarted, lockoutMs } = recordFailure(this.state, now, this.deps.policy);
    if (state === this.state) return null;
    this.state = state;
    this.queueSave();
    return lockoutStarted ? lockoutMs / 1000 : null;
  }

  /** Saves now what a deferred save would have (at stop). */
  flush(): void {
    if (!this.saveQueued) return;
    this.saveQueued = false;
    this.deps.save?.(saveKeypadState(this.state, this.deps.clock.monoNow(), this.deps.policy, this.deps.clock.wallNow()));
  }

  private queueSave(): void {
    if (!this.deps.save || this.saveQueued) return;
    this.saveQueued = true;
    queueMicrotask(() => this.flush());
  }
}
