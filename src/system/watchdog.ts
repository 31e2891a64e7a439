import type { Logger } from 'pino';
import type { Notify } from './sdNotify.js';

export interface WatchdogOptions {
  notify: Notify;
  /** WATCHDOG_USEC: systemd restarts the agent when no ping arrives within this; null without WatchdogSec. */
  watchdogUsec: number | null;
  logger: Logger;
  setInterval?: (callback: () => void, ms: number) => unknown;
  clearInterval?: (handle: unknown) => void;
}

/**
 * systemd supervision (Type=notify, WatchdogSec=): READY=1 once the agent is ready, WATCHDOG=1 at half the
 * watchdog period from a timer on the event loop (so a stuck loop, with a strike energized, stops the pings
 * and systemd restarts the agent, which locks first), STOPPING=1 when the stop begins.
 */
export class SystemdWatchdog {
  private timer: unknown = null;

  constructor(private readonly options: WatchdogOptions) {}

  /** The ping period: half of WATCHDOG_USEC, as sd_watchdog_enabled(3) advises. */
  get intervalMs(): number | null {
    return this.options.watchdogUsec === null ? null : Math.max(1, Math.floor(this.options.watchdogUsec / 2000));
  }

  ready(): void {
    this.send('READY=1');
    const interval = this.intervalMs;
    if (interval === null || this.timer !== null) return;
    const every = this.options.setInterval ?? ((cb, ms) => setInterval(cb, ms));
    this.timer = every(() => this.send('WATCHDOG=1'), interval);
  }

  stopping(): void {
    if (this.timer !== null) (this.options.clearInterval ?? ((h) => clearInterval(h as NodeJS.Timeout)))(this.timer);
    this.timer = null;
    this.send('STOPPING=1');
  }

  private send(state: string): void {
    try {
      this.options.notify(state);
    } catch (err) {
      this.options.logger.warn({ err, state }, 'cannot notify systemd');
    }
  }
}

/** WATCHDOG_USEC as systemd sets it, when meant for this process (WATCHDOG_PID absent or ours). */
export function watchdogUsecFrom(env: { WATCHDOG_USEC?: string; WATCHDOG_PID?: string }, pid: number): number | null {
  const usec = Number(env.WATCHDOG_USEC);
  if (!env.WATCHDOG_USEC || !Number.isInteger(usec) || usec <= 0) return null;
  if (env.WATCHDOG_PID && Number(env.WATCHDOG_PID) !== pid) return null;
  return usec;
}
