import type { Logger } from 'pino';
import type { EmergencyEventType } from '../core/emergencyRelease.js';
import type { EventLog } from '../store/eventLog.js';
import type { Clock } from '../util/clock.js';
import type { LockController } from './lockController.js';

export interface DoorEmergencyDeps {
  controller: LockController;
  clock: Clock;
  logger: Logger;
  /** What the door is held under when the input clears (the unlock schedule's cause in its hours), or null: locked. */
  holdCause: () => string | null;
  /** A release ended: the unlock schedule decides again. */
  afterCleared: () => void;
  record: (type: EmergencyEventType, data: Record<string, unknown>) => void;
  /** The audit log, where a release saved at a stop is looked up (when it began). */
  events: () => EventLog;
  doorUuid: string;
}

const sinceOf = (at: number | null) => (at === null ? {} : { since: new Date(at).toISOString() });
type Logged = NonNullable<ReturnType<EventLog['last']>>;
/** When an event's last occurrence was: a flood's summary is written when its minute ends, after what it counts. */
const lastAt = (event: Logged) => (event.data.summary === true && typeof event.data.last_at === 'string' ? Date.parse(event.data.last_at) : event.at);
const later = (a: Logged, b: Logged) => lastAt(a) > lastAt(b) || (lastAt(a) === lastAt(b) && a.seq > b.seq);

/**
 * One door under the agent's emergency input (a door listed in `emergency.doors`): active, the door is released at
 * once and stays released whatever else happens; cleared, it goes to what it should be now (held by its unlock
 * schedule when the schedule says so, else locked). Records `emergency_release` and `emergency_cleared`, the latter
 * with since when the release held, across a restart of the agent too: a release saved at the stop is not resumed
 * but decided again by the input's first reading (`savedAtStop`, then `changed(…, true)`).
 */
export class DoorEmergency {
  /** When the current release began (wall ms); null when not released, or begun before a restart at a time not known. */
  private since: number | null = null;
  /** The state saved at the last stop was a release, begun at `at` (null: not known). */
  private saved: { at: number | null } | null = null;

  constructor(private readonly deps: DoorEmergencyDeps) {}

  /** The saved state was a release: when it began is read from the audit log (null: not known). */
  savedAtStop(): void {
    this.saved = { at: this.lastReleaseAt() };
  }

  /**
   * When this door's saved release began, from the audit log: its emergency_release, or the `since` of one recorded
   * at a start during it (a release across several restarts; `since: null` there: not known), or the last release a
   * flood's summary counted (a flapping input; `last_at`). Null when not known:
   * no such event, an emergency_cleared after it (the saved release's own event was lost: an older fire's is not
   * taken for it), or the log unreadable.
   */
  private lastReleaseAt(): number | null {
    try {
      const events = this.deps.events();
      const release = events.last('emergency_release', this.deps.doorUuid);
      const cleared = events.last('emergency_cleared', this.deps.doorUuid);
      if (release === null || (cleared !== null && later(cleared, release))) return null;
      if (release.data.summary === true) return lastAt(release); // a flapping input: the last release counted began it
      if (!('since' in release.data)) return release.at;
      const since = typeof release.data.since === 'string' ? Date.parse(release.data.since) : Number.NaN;
      return Number.isFinite(since) ? since : null;
    } catch (err) {
      this.deps.logger.warn({ err }, 'cannot read when the emergency release began: emergency_cleared will not say since when');
      return null;
    }
  }

  /** The input's reading (`atStart`: its first, once the inputs are set up). Returns whether the door changed. */
  changed(active: boolean, atStart: boolean): boolean {
    const { controller, logger } = this.deps;
    if (active && !controller.released) {
      controller.release();
      // Still active at start after a restart during the release: the release began before the restart, and its
      // event says when (null: not known), for the next restart's sake.
      const saved = this.saved;
      this.since = saved ? saved.at : this.deps.clock.wallNow();
      this.saved = null;
      const data = saved ? { at_start: true, since: saved.at === null ? null : new Date(saved.at).toISOString() } : atStart ? { at_start: true } : {};
      this.deps.record('emergency_release', data);
      logger.warn('released by the emergency input (fire alarm): the door stays unlocked until the input clears');
      return true;
    }
    if (!active && controller.released) {
      controller.endRelease(this.deps.holdCause());
      const since = this.since;
      this.since = null;
      this.deps.record('emergency_cleared', sinceOf(since));
      const { state, cause } = controller.snapshot();
      logger.warn({ state, cause }, 'the emergency input cleared: the door is back to what it should be now');
      this.deps.afterCleared();
      return true;
    }
    if (!active && atStart && this.saved !== null) {
      // Released when the agent stopped, and the input is normal now: the release ended while it was stopped.
      const { at } = this.saved;
      this.saved = null;
      this.deps.record('emergency_cleared', { at_start: true, ...sinceOf(at) });
      return true;
    }
    return false;
  }
}
