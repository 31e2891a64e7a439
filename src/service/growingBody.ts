/**
 * A body whose bytes arrive in chunks while it is built (or compressed), read from its start by any number of
 * readers at once, each at its own pace, the ones that catch up waiting for the next chunk. The chunks are kept:
 * once complete it is the stored body, served to later requests as it is (issue 28 item 1: a door asking while the
 * 141 MB directory of 250,000 users is being built gets its first bytes at once, not after the build, so it never
 * sits silent past its timeout).
 */
export class GrowingBody {
  private readonly chunks: Buffer[] = [];
  private bytes = 0;
  private failure: Error | null = null;
  private ended = false;
  private waiting: Array<() => void> = [];
  /** Settles when the body is complete (or failed). */
  readonly done: Promise<void>;
  private settle!: { resolve: () => void; reject: (err: Error) => void };

  constructor() {
    this.done = new Promise<void>((resolve, reject) => {
      this.settle = { resolve, reject };
    });
    // A failure is reported to each reader; this promise is only awaited by some.
    this.done.catch(() => undefined);
  }

  get complete(): boolean {
    return this.ended;
  }

  /** The bytes so far (all of them once complete). */
  get length(): number {
    return this.bytes;
  }

  push(chunk: Buffer): void {
    if (this.ended || this.failure !== null || chunk.length === 0) return;
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    this.wake();
  }

  end(): void {
    if (this.ended || this.failure !== null) return;
    this.ended = true;
    this.settle.resolve();
    this.wake();
  }

  fail(err: Error): void {
    if (this.ended || this.failure !== null) return;
    this.failure = err;
    this.settle.reject(err);
    this.wake();
  }

  /** Every chunk from the first, as it arrives; throws the build's error when it fails before the end. */
  async *read(): AsyncGenerator<Buffer> {
    let next = 0;
    for (;;) {
      while (next < this.chunks.length) yield this.chunks[next++]!;
      if (this.failure !== null) throw this.failure;
      if (this.ended) return;
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  /** The chunks of a complete body. */
  parts(): readonly Buffer[] {
    return this.chunks;
  }

  private wake(): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const resolve of waiting) resolve();
  }
}
