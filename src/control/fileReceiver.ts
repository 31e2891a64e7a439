import { createHash } from 'node:crypto';

/**
 * The bytes of a file that follow a request's line (a reader firmware, docs/local-control.md): exactly the size the
 * request gave, and only with the SHA-256 it gave; else the request is refused with why.
 */
export class FileReceiver {
  private chunks: Buffer[] = [];
  private received = 0;
  private over = false;

  constructor(
    private readonly size: number,
    private readonly sha256: string,
    private readonly onFile: (file: Buffer) => void,
    private readonly onRefused: (error: string) => void,
  ) {}

  /** Bytes after the request's line, as they come. */
  push(chunk: Buffer): void {
    if (this.over || chunk.length === 0) return;
    this.chunks.push(chunk);
    this.received += chunk.length;
    if (this.received < this.size) return;
    this.over = true;
    const chunks = this.chunks;
    this.chunks = [];
    if (this.received > this.size) return this.onRefused(`more bytes came than the request's size (${this.size})`);
    const file = Buffer.concat(chunks, this.size);
    const digest = createHash('sha256').update(file).digest('hex');
    if (digest !== this.sha256)
      return this.onRefused(`the file's SHA-256 is ${digest}, not the request's ${this.sha256}: it was changed or cut short on the way`);
    this.onFile(file);
  }

  /** All the bytes came (or too many). */
  get complete(): boolean {
    return this.over;
  }

  /** Bytes so far, for a refusal when they stop coming. */
  get count(): number {
    return this.received;
  }
}
