import { closeSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { ByteSource } from '../snapshot/jsonStream.js';

/** The answer grew past what a spool holds (a broken or hostile service must not fill the disk). */
export class SpoolLimitError extends Error {
  constructor(readonly maxBytes: number) {
    super(`the answer is larger than ${Math.round(maxBytes / (1 << 20))} MiB`);
    this.name = 'SpoolLimitError';
  }
}

let spools = 0;

/**
 * An HTTP answer kept out of the JavaScript heap until it is read member by member: in Buffers (outside V8's
 * heap) up to `memoryBytes`, beyond that in a file in `dir` that is unlinked as soon as it is created, so
 * nothing is left behind if the process dies. The directory of 250,000 users is ~60 MB of JSON: parsed whole it
 * would not fit the agent's 64 MB heap; spooled, it is read back in 1 MiB chunks.
 */
export class ResponseSpool {
  private readonly chunks: Buffer[] = [];
  private fd: number | null = null;
  private written = 0;

  constructor(
    private readonly dir: string,
    private readonly limits: { memoryBytes: number; maxBytes: number },
  ) {}

  get size(): number {
    return this.written;
  }

  append(chunk: Uint8Array): void {
    if (this.written + chunk.length > this.limits.maxBytes) throw new SpoolLimitError(this.limits.maxBytes);
    // A copy: the HTTP client may reuse the memory behind a chunk once it has been handed over.
    const piece = Buffer.from(chunk);
    this.written += piece.length;
    if (this.fd === null && this.written <= this.limits.memoryBytes) {
      this.chunks.push(piece);
      return;
    }
    if (this.fd === null) {
      const path = join(this.dir, `.sync-answer-${process.pid}-${++spools}.tmp`);
      this.fd = openSync(path, 'wx+', 0o600);
      unlinkSync(path);
      for (const held of this.chunks) writeSync(this.fd, held);
      this.chunks.length = 0;
    }
    writeSync(this.fd, piece);
  }

  /** The start of the answer as text (for an error message). */
  head(bytes: number): string {
    const buf = Buffer.alloc(Math.min(bytes, this.written));
    const n = this.source()(buf);
    return buf.subarray(0, n).toString('utf8');
  }

  /** The whole answer as text: only for answers known to be small (their maxBytes says so). */
  text(): string {
    const buf = Buffer.alloc(this.written);
    let at = 0;
    const read = this.source();
    while (at < buf.length) {
      const n = read(buf.subarray(at));
      if (n === 0) break;
      at += n;
    }
    return buf.toString('utf8');
  }

  /** Reads the answer from its start, each call filling the buffer it is given. */
  source(): ByteSource {
    if (this.fd !== null) {
      const fd = this.fd;
      let position = 0;
      return (buf) => {
        const n = readSync(fd, buf, 0, buf.length, position);
        position += n;
        return n;
      };
    }
    let index = 0;
    let offset = 0;
    const chunks = this.chunks;
    return (buf) => {
      let filled = 0;
      while (filled < buf.length && index < chunks.length) {
        const chunk = chunks[index]!;
        const n = chunk.copy(buf, filled, offset);
        filled += n;
        offset += n;
        if (offset >= chunk.length) {
          index++;
          offset = 0;
        }
      }
      return filled;
    };
  }

  dispose(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    this.chunks.length = 0;
  }
}
