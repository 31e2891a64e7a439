import type { Logger } from 'pino';
import type { Component } from '../lifecycle.js';
import type { Timers } from '../util/clock.js';
import type { ForwardClock } from '../util/forwardClock.js';
import type { AgentStore } from './agentStore.js';
import { readMeta, writeMeta } from './meta.js';

const KEY = 'clock:high_water';
/** How often the mark is saved: a restart after a clock step loses at most this much of it. */
const SAVE_INTERVAL_MS = 60_000;

/** The forward-only clock's high-water mark in state.db (restored at start, saved each minute and at stop). */
export class ClockMark implements Component {
  readonly name = 'clock';
  private timer: unknown = null;

  constructor(
    /** `store`: read only from start() on (the agent's store, started before this). */
    private readonly deps: { clock: ForwardClock; store: Pick<AgentStore, 'events' | 'state' | 'writes'>; timers: Timers; logger: Logger },
  ) {}

  start(): void {
    const { clock, store, logger } = this.deps;
    clock.onStepBack = (behindMs, heldAt) => {
      const behind = Math.round(behindMs / 1000);
      logger.warn(
        { behindSeconds: behind, heldAt: new Date(heldAt).toISOString() },
        'the system clock stepped back: the agent keeps its own time (never going back) until the system clock catches up',
      );
      try {
        store.events.append({ type: 'clock_skew', door: null, at: heldAt, data: { source: 'system_clock', behind_seconds: behind } });
      } catch (err) {
        logger.error({ err }, 'cannot record clock_skew');
      }
    };
    try {
      const saved = readMeta<number>(store.state, KEY);
      if (typeof saved === 'number') clock.restore(saved);
    } catch (err) {
      logger.error({ err }, 'cannot read the saved clock mark: the system clock is taken as it is');
    }
    clock.wallNow(); // compares the system clock with the mark now: a step back while stopped is reported at start
    this.save();
    this.schedule();
  }

  stop(): void {
    if (this.timer !== null) this.deps.timers.clearTimeout(this.timer);
    this.timer = null;
    this.save();
  }

  private schedule(): void {
    this.timer = this.deps.timers.setTimeout(() => {
      this.save();
      this.schedule();
    }, SAVE_INTERVAL_MS);
    (this.timer as { unref?: () => void }).unref?.();
  }

  private save(): void {
    const { clock, store } = this.deps;
    const mark = Math.floor(clock.mark());
    if (!Number.isFinite(mark)) return;
    store.writes.run('clock-mark', () => writeMeta(store.state, KEY, mark));
  }
}
