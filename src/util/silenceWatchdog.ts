/**
 * Fires once when `ms` pass with no `touch()`: the timeout of a connection that went silent.
 *
 * Judged on the monotonic clock, and only after the event loop's poll phase has run (a setImmediate): when the
 * thread was busy for longer than `ms` (a long synchronous task: a big cache write, a stalled machine), the loop
 * runs its due timers before it reads the sockets, so a plain timer would abort an answer whose bytes had long
 * arrived and only waited to be read. Here the bytes are read first, `touch()` is called, and the watchdog stays
 * quiet.
 *
 * Only the far end's silence counts: while the reader itself holds the bytes back (`pause()`: it is still
 * processing the last chunk, and asks for no more), nothing is judged; `resume()` starts the silence from then.
 * A pause has its own bound, `maxPauseMs`: a reader that never finishes its chunk (a decompression whose thread
 * pool is stuck) ends the wait too, as 'stuck', rather than holding it forever.
 */
export class SilenceWatchdog {
  private last: number;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private done = false;
  /** When the current pause began (monotonic ms), or null when not paused. */
  private pausedAt: number | null = null;

  /**
   * `onSilent` is told why: the far end was silent for `ms`, or the reader was stuck in one pause for `maxPauseMs`
   * (default ten times `ms`).
   */
  constructor(
    private readonly ms: number,
    private readonly onSilent: (why: 'silent' | 'stuck') => void,
    private readonly now: () => number = () => performance.now(),
    readonly maxPauseMs: number = ms * 10,
  ) {
    this.last = now();
    this.arm(ms);
  }

  /** Something arrived: the silence starts again from now. */
  touch(): void {
    this.last = this.now();
  }

  /** The reader is busy with what arrived and reads no more meanwhile: the far end is not being waited for. */
  pause(): void {
    this.pausedAt ??= this.now();
  }

  /** The reader waits for the far end again: a silence counts from now. */
  resume(): void {
    this.pausedAt = null;
    this.last = this.now();
  }

  /** Done with the connection: never fires after this. */
  stop(): void {
    this.done = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private arm(delayMs: number): void {
    this.timer = setTimeout(() => {
      this.timer = null;
      setImmediate(() => this.judge());
    }, delayMs);
  }

  private judge(): void {
    if (this.done) return;
    if (this.pausedAt !== null) {
      const pausedMs = this.now() - this.pausedAt;
      if (pausedMs < this.maxPauseMs) return this.arm(Math.min(this.ms, this.maxPauseMs - pausedMs));
      this.done = true;
      return this.onSilent('stuck');
    }
    const quietMs = this.now() - this.last;
    if (quietMs < this.ms) return this.arm(this.ms - quietMs);
    this.done = true;
    this.onSilent('silent');
  }
}
