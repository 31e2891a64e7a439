import type { EventEmitter } from 'node:events';

type Stream = Pick<NodeJS.WritableStream, 'write'> & Pick<EventEmitter, 'on' | 'once'>;

/**
 * A command's stdout whose reader may go away (`door-agent events | head -n 2`): the write that finds the pipe
 * closed fails later, as an 'error' event (EPIPE), which unhandled would end the process with a stack trace.
 * Here it marks the output gone: later writes are dropped, a wait for 'drain' ends at once, and the handlers
 * given to onReaderGone run (cli.ts stops the long-running commands through them, as on Ctrl-C). Any other
 * write error is kept for cli.ts to report on one line.
 */
export class ReaderOutput {
  private gone = false;
  private failure: Error | null = null;
  private readonly drainWaiters = new Set<() => void>();
  private readonly goneHandlers: (() => void)[] = [];

  constructor(private readonly stream: Stream) {
    stream.on('error', (err: NodeJS.ErrnoException) => this.lost(err));
  }

  /** Whether the reader went away (or the output failed otherwise). */
  get readerGone(): boolean {
    return this.gone;
  }

  /** A write error other than the reader going away, or null. */
  get error(): Error | null {
    return this.failure;
  }

  write(text: string): boolean {
    if (this.gone) return true;
    return this.stream.write(text);
  }

  once(event: 'drain', listener: () => void): this {
    if (this.gone) {
      queueMicrotask(listener);
      return this;
    }
    const once = () => {
      this.drainWaiters.delete(once);
      listener();
    };
    this.drainWaiters.add(once);
    this.stream.once(event, once);
    return this;
  }

  onReaderGone(handler: () => void): void {
    if (this.gone) queueMicrotask(handler);
    else this.goneHandlers.push(handler);
  }

  private lost(err: NodeJS.ErrnoException): void {
    if (err.code !== 'EPIPE' && err.code !== 'ERR_STREAM_DESTROYED') this.failure ??= err;
    if (this.gone) return;
    this.gone = true;
    for (const waiter of [...this.drainWaiters]) waiter();
    for (const handler of this.goneHandlers.splice(0)) handler();
  }
}
