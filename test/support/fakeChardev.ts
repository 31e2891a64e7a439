import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChardevBinding, ChipInfo, LineInfo, LineRequest, PollWatcher } from '../../src/hardware/chardev/binding.js';
import { encodeLineEvent } from '../../src/hardware/chardev/lineEvents.js';

const errnoError = (code: string, message: string) => Object.assign(new Error(`${code}: ${message}`), { code });

interface Held {
  path: string;
  request: LineRequest;
  values: number;
  queued: Buffer[];
  watcher: { onReadable: () => void; onError: (message: string) => void; closed: boolean } | null;
  seqno: number;
}

/**
 * The character device as the kernel would answer our addon's calls: chips under a temporary /dev, lines held
 * by one request at a time (EBUSY otherwise, with the holder's consumer in lineInfo), output values, and edge
 * records queued per request until read. `log` is every call in order, for assertions on what reached the
 * kernel and when.
 */
export class FakeChardev implements ChardevBinding {
  readonly log: string[] = [];
  readonly held = new Map<number, Held>();
  /** path:offset held by programs other than ours. */
  readonly foreign = new Map<string, string>();
  private nextFd = 100;
  denied = new Set<string>();
  /** Offsets whose value writes fail with EIO (a chip gone away, a driver error). */
  readonly failingWrites = new Set<number>();

  constructor(
    readonly devDir: string,
    private readonly chips: Record<string, ChipInfo>,
  ) {
    for (const name of Object.keys(chips)) writeFileSync(join(devDir, name), '');
  }

  private chip(path: string): ChipInfo {
    if (this.denied.has(path)) throw errnoError('EACCES', `permission denied, open '${path}'`);
    const chip = this.chips[path.slice(this.devDir.length + 1)];
    if (!chip) throw errnoError('ENOENT', `no such file or directory, open '${path}'`);
    return chip;
  }

  chipInfo(path: string): ChipInfo {
    return { ...this.chip(path) };
  }

  lineInfo(path: string, offset: number): LineInfo {
    this.chip(path);
    const foreign = this.foreign.get(`${path}:${offset}`);
    const ours = [...this.held.values()].find((h) => h.path === path && h.request.offsets.includes(offset));
    const consumer = foreign ?? ours?.request.consumer ?? '';
    return { offset, name: `GPIO${offset}`, consumer, used: consumer !== '', output: ours?.request.direction === 'output' };
  }

  requestLines(path: string, request: LineRequest): number {
    this.chip(path);
    for (const offset of request.offsets) {
      if (this.foreign.has(`${path}:${offset}`) || [...this.held.values()].some((h) => h.path === path && h.request.offsets.includes(offset))) {
        throw errnoError('EBUSY', `device or resource busy, request lines on '${path}'`);
      }
    }
    const fd = this.nextFd++;
    const values = (request.values ?? []).reduce<number>((bits, v, i) => bits | (v << i), 0);
    this.held.set(fd, { path, request: structuredClone(request) as LineRequest, values, queued: [], watcher: null, seqno: 0 });
    this.log.push(`request ${request.direction} ${request.offsets.join(',')}${request.values ? ` values ${request.values.join(',')}` : ''} fd ${fd}`);
    return fd;
  }

  private line(fd: number): Held {
    const held = this.held.get(fd);
    if (!held) throw errnoError('EBADF', 'bad file descriptor');
    return held;
  }

  getValues(fd: number, mask: number): number {
    return this.line(fd).values & mask;
  }

  setValues(fd: number, mask: number, bits: number): void {
    const held = this.line(fd);
    if (held.request.offsets.some((o, i) => mask & (1 << i) && this.failingWrites.has(o))) {
      this.log.push(`set fd ${fd} FAILED`);
      throw errnoError('EIO', 'input/output error, set line values');
    }
    held.values = (held.values & ~mask) | (bits & mask);
    this.log.push(`set fd ${fd} ${held.values}`);
  }

  readEvents(fd: number): Buffer | null {
    const held = this.line(fd);
    if (held.queued.length === 0) return null;
    return Buffer.concat(held.queued.splice(0));
  }

  watch(fd: number, onReadable: () => void, onError: (message: string) => void): PollWatcher {
    const held = this.line(fd);
    const watcher = { onReadable, onError, closed: false };
    held.watcher = watcher;
    return {
      close: () => {
        watcher.closed = true;
      },
    };
  }

  close(fd: number): void {
    this.line(fd);
    this.held.delete(fd);
    this.log.push(`close fd ${fd}`);
  }

  /** Polling the request fails (the chip went away): what the addon reports through onError. */
  pollError(fd: number, message: string): void {
    const held = this.line(fd);
    if (held.watcher && !held.watcher.closed) held.watcher.onError(message);
  }

  /** The request holding `offset` on the chip at `path`. */
  fdOf(offset: number): number {
    for (const [fd, held] of this.held) if (held.request.offsets.includes(offset)) return fd;
    throw new Error(`line ${offset} is not held`);
  }

  /**
   * Edges on held input lines, as the kernel queues them (`skip` drops that many sequence numbers first, as an
   * overflowing queue does); `deliver: false` leaves them queued without waking the watcher.
   */
  edges(fd: number, edges: Array<{ offset: number; rising: boolean; atUs: number }>, options: { skip?: number; deliver?: boolean } = {}): void {
    const held = this.line(fd);
    held.seqno += options.skip ?? 0;
    for (const e of edges) {
      held.seqno += 1;
      held.queued.push(encodeLineEvent({ offset: e.offset, rising: e.rising, timestampNs: BigInt(Math.round(e.atUs * 1000)), seqno: held.seqno }));
      const bit = held.request.offsets.indexOf(e.offset);
      held.values = e.rising ? held.values | (1 << bit) : held.values & ~(1 << bit);
    }
    if (options.deliver !== false && held.watcher && !held.watcher.closed) held.watcher.onReadable();
  }
}
