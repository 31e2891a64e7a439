import type { Timers } from '../util/clock.js';
import type { CommandError } from '../protocol/commands.js';

/** What a refused command leaves in the audit log. */
export interface RejectionRecord {
  status: number;
  error: string;
  request_id: string | null;
  /** Present on a summary: how many more were refused in the window, by status. */
  count?: number;
  by_status?: Record<string, number>;
  since?: string;
}

/**
 * Refused commands, counted rather than stored one by one: per door, the first refusal of a window is recorded
 * in full, the rest of the window only counted and recorded as one summary when it closes. A flood of forged
 * commands thus writes one event a minute, and can never push real events out of the bounded audit log.
 */
export class RejectionLog {
  private readonly windows = new Map<string, { count: number; byStatus: Record<string, number>; last: CommandError; since: number; timer: unknown }>();

  constructor(
    private readonly deps: {
      windowMs: number;
      timers: Timers;
      wallNow: () => number;
      record: (doorUuid: string, record: RejectionRecord) => void;
    },
  ) {}

  reject(doorUuid: string, error: CommandError): void {
    const window = this.windows.get(doorUuid);
    if (window) {
      window.count++;
      window.byStatus[error.status] = (window.byStatus[error.status] ?? 0) + 1;
      window.last = error;
      return;
    }
    this.deps.record(doorUuid, { status: error.status, error: error.error, request_id: error.requestId });
    this.open(doorUuid, error);
  }

  private open(doorUuid: string, last: CommandError): void {
    const timer = this.deps.timers.setTimeout(() => this.close(doorUuid), this.deps.windowMs);
    this.windows.set(doorUuid, { count: 0, byStatus: {}, last, since: this.deps.wallNow(), timer });
  }

  private close(doorUuid: string): void {
    const window = this.windows.get(doorUuid);
    if (!window) return;
    this.windows.delete(doorUuid);
    if (window.count === 0) return;
    this.summarize(doorUuid, window);
    // Still under fire: the next window summarizes what follows.
    this.open(doorUuid, window.last);
  }

  private summarize(doorUuid: string, window: { count: number; byStatus: Record<string, number>; last: CommandError; since: number }): void {
    this.deps.record(doorUuid, {
      status: window.last.status,
      error: window.last.error,
      request_id: window.last.requestId,
      count: window.count,
      by_status: window.byStatus,
      since: new Date(window.since).toISOString(),
    });
  }

  /** Records what is still counted (at stop). */
  flush(): void {
    for (const [doorUuid, window] of this.windows) {
      this.deps.timers.clearTimeout(window.timer);
      if (window.count > 0) this.summarize(doorUuid, window);
    }
    this.windows.clear();
  }
}
