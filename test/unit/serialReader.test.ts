import { EventEmitter } from 'node:events';
import { afterEach, describe, it, expect, vi } from 'vitest';
import { pino } from 'pino';
import { SerialReader, type PortLike } from '../../src/readers/serial/serialReader.js';
import type { ReaderFrame } from '../../src/readers/readerFrames.js';
import { backoffDelay } from '../../src/util/backoff.js';
import { ManualTime } from '../support/manualTime.js';

type OpenOutcome = 'ok' | 'fail' | 'later';

/** A serial port whose open() succeeds or fails as scripted (then `rest` once the script is used up). */
class FakePort extends EventEmitter implements PortLike {
  isOpen = false;
  closeCalls = 0;
  constructor(
    readonly path: string,
    readonly baudRate: number,
    readonly openedAt: number,
    private readonly outcome: OpenOutcome,
  ) {
    super();
  }
  /** For outcome 'later': completes the open that is still under way. */
  finishOpen: (() => void) | null = null;
  open(callback: (err: Error | null) => void): void {
    if (this.outcome === 'fail') return callback(new Error(`Error: No such file or directory, cannot open ${this.path}`));
    const succeed = () => {
      this.isOpen = true;
      callback(null);
    };
    if (this.outcome === 'later') this.finishOpen = succeed;
    else succeed();
  }
  close(callback?: (err: Error | null) => void): void {
    this.closeCalls++;
    this.isOpen = false;
    this.emit('close', null);
    callback?.(null);
  }
  /** The device disappears (USB reader unplugged): serialport emits 'close' with a disconnect error. */
  unplug(): void {
    this.isOpen = false;
    this.emit('close', Object.assign(new Error('Disconnected'), { disconnected: true }));
  }
}

interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

function setup(script: OpenOutcome[] = [], rest: OpenOutcome = 'ok') {
  const time = new ManualTime({ wall: Date.parse('2026-07-01T12:00:00Z') + 5_000, mono: 5_000 });
  const ports: FakePort[] = [];
  const frames: ReaderFrame[] = [];
  const connection: boolean[] = [];
  const logs: LogLine[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void logs.push(JSON.parse(line) as LogLine) });
  const reader = new SerialReader({
    path: '/dev/ttyREADER0',
    baudRate: 9600,
    cardFormat: 'decimal',
    onFrame: (f) => frames.push(f),
    onConnectionChange: (c) => connection.push(c),
    logger,
    clock: time,
    timers: time,
    openPort: (path, baudRate) => {
      const port = new FakePort(path, baudRate, time.monoNow(), script.shift() ?? rest);
      ports.push(port);
      return port;
    },
  });
  const current = () => {
    const port = ports.at(-1);
    if (!port) throw new Error('no port opened');
    return port;
  };
  const warnings = (msg: string) => logs.filter((l) => l.level === 40 && l.msg === msg);
  return { time, ports, frames, connection, logs, reader, current, warnings };
}

/** Gaps between successive open attempts. */
const gaps = (ports: FakePort[]) => ports.slice(1).map((p, i) => p.openedAt - ports[i]!.openedAt);

afterEach(() => {
  vi.restoreAllMocks();
});

describe('SerialReader frames', () => {
  it('opens the configured path and delivers framed cards and PINs', () => {
    const t = setup();
    t.reader.start();
    expect(t.ports).toHaveLength(1);
    expect(t.current().path).toBe('/dev/ttyREADER0');
    expect(t.current().baudRate).toBe(9600);
    t.current().emit('data', Buffer.from('4213578\r\n'));
    t.current().emit('data', Buffer.from('12'));
    t.time.advance(50);
    t.current().emit('data', Buffer.from('34#'));
    expect(t.frames).toEqual([
      { kind: 'card', value: '4213578' },
      { kind: 'pin', value: '1234' },
    ]);
  });

  it('noise is logged as one warning per burst and never delivered; the next card still is', () => {
    const t = setup();
    t.reader.start();
    const burst = Buffer.from([0x00, 0xff, 0x13, 0x0d, 0x80, 0x0a, 0xfe, 0x01, 0x00, 0x0d, 0x0a]);
    for (const b of burst) t.current().emit('data', Buffer.from([b]));
    t.time.advance(1_500);
    expect(t.frames).toEqual([]);
    const noise = t.warnings('reader noise dropped');
    expect(noise).toHaveLength(1);
    expect(noise[0]).toMatchObject({ bytes: 7, reasons: ['binary'], path: '/dev/ttyREADER0' });

    t.current().emit('data', Buffer.from('4213578\r\n'));
    t.time.advance(1_000);
    expect(t.frames).toEqual([{ kind: 'card', value: '4213578' }]);
    expect(t.warnings('reader noise dropped')).toHaveLength(1);
  });

  it('a 10,000-byte line is dropped with one warning, without waiting for more data', () => {
    const t = setup();
    t.reader.start();
    t.current().emit('data', Buffer.alloc(10_000, 0x41));
    expect(t.warnings('reader noise dropped')).toHaveLength(0);
    t.time.advance(1_500);
    expect(t.warnings('reader noise dropped')).toEqual([expect.objectContaining({ bytes: 10_000, reasons: ['too_long'] })]);
    t.current().emit('data', Buffer.from('4213578\r\n'));
    expect(t.frames).toEqual([{ kind: 'card', value: '4213578' }]);
  });

  it('noise trickling in slowly is still reported at most once a second, with the total', () => {
    const t = setup();
    t.reader.start();
    for (let i = 0; i < 20; i++) {
      t.current().emit('data', Buffer.from([0x00, 0x0a])); // one binary byte every 300 ms: a new burst each time
      t.time.advance(300);
    }
    t.time.advance(2_000);
    const warnings = t.warnings('reader noise dropped');
    expect(warnings.length).toBeGreaterThanOrEqual(5);
    expect(warnings.length).toBeLessThanOrEqual(8);
    expect(warnings.reduce((sum, w) => sum + (w.bytes as number), 0)).toBe(20);
  });
});

describe('SerialReader stop', () => {
  it('stopped while the port is still opening: the port is closed when the open completes, never left locked', async () => {
    const t = setup(['later']);
    t.reader.start();
    await t.reader.stop();
    t.current().finishOpen!();
    expect(t.current().closeCalls).toBe(1);
    expect(t.current().isOpen).toBe(false);
    expect(t.connection).toEqual([]);
    t.time.advance(60_000);
    expect(t.ports).toHaveLength(1); // and no reopen attempts after stop
  });
});

describe('SerialReader reconnect', () => {
  it('reports the connection and reopens within 1 s after the reader is unplugged', () => {
    const t = setup();
    t.reader.start();
    expect(t.connection).toEqual([true]);
    expect(t.reader.connected).toBe(true);

    const unpluggedAt = t.time.monoNow();
    t.current().unplug();
    expect(t.connection).toEqual([true, false]);
    expect(t.reader.connected).toBe(false);
    expect(t.warnings('reader disconnected; reopening')).toHaveLength(1);

    t.time.advance(1_000);
    expect(t.ports).toHaveLength(2);
    expect(t.current().openedAt - unpluggedAt).toBeLessThanOrEqual(1_000);
    expect(t.connection).toEqual([true, false, true]);
    expect(t.reader.connected).toBe(true);

    t.current().emit('data', Buffer.from('4213578\r\n'));
    expect(t.frames).toEqual([{ kind: 'card', value: '4213578' }]);
  });

  it('keeps retrying with growing delays, first within 1 s, never more than 30 s apart', () => {
    let seed = 7;
    vi.spyOn(Math, 'random').mockImplementation(() => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    const t = setup(['ok', ...Array<OpenOutcome>(40).fill('fail')], 'ok');
    t.reader.start();
    t.current().unplug();
    const unpluggedAt = t.time.monoNow();
    for (let i = 0; i < 41; i++) t.time.advance(30_000);
    expect(t.ports).toHaveLength(42);
    expect(t.connection).toEqual([true, false, true]);

    const [first, ...rest] = gaps(t.ports.slice(1));
    expect(t.ports[1]!.openedAt - unpluggedAt).toBeLessThanOrEqual(1_000);
    expect(first).toBeLessThanOrEqual(2_000);
    const all = [t.ports[1]!.openedAt - unpluggedAt, first!, ...rest];
    // Growing: each of the first delays is clearly longer than the one before (exponential backoff).
    for (let i = 1; i < 6; i++) expect(all[i]!).toBeGreaterThan(all[i - 1]! * 1.4);
    // Capped: never more than 30 s, and it backs off to a long delay instead of hammering the device.
    for (const gap of all) expect(gap).toBeLessThanOrEqual(30_000);
    for (const gap of all.slice(8)) expect(gap).toBeGreaterThanOrEqual(15_000);
    // Jittered: the capped delays are not all the same.
    expect(new Set(all.slice(8)).size).toBeGreaterThan(1);
  });

  it('a failing first open at start is retried within 1 s too', () => {
    const t = setup(['fail', 'fail'], 'ok');
    t.reader.start();
    expect(t.connection).toEqual([]);
    t.time.advance(1_000);
    expect(t.ports).toHaveLength(2);
    t.time.advance(2_000);
    expect(t.ports).toHaveLength(3);
    expect(t.connection).toEqual([true]);
    expect(t.warnings('cannot open reader; retrying with backoff')).toHaveLength(1);
  });

  it('after a successful reopen, the next failure is retried within 1 s again', () => {
    const t = setup(['ok', ...Array<OpenOutcome>(8).fill('fail'), 'ok'], 'ok');
    t.reader.start();
    t.current().unplug();
    for (let i = 0; i < 9; i++) t.time.advance(30_000);
    expect(t.ports).toHaveLength(10);
    expect(t.reader.connected).toBe(true);
    expect(Math.max(...gaps(t.ports.slice(1)))).toBeGreaterThan(10_000); // it had backed off

    const unpluggedAt = t.time.monoNow();
    t.current().unplug();
    t.time.advance(1_000);
    expect(t.ports).toHaveLength(11);
    expect(t.current().openedAt - unpluggedAt).toBeLessThanOrEqual(1_000);
    expect(t.reader.connected).toBe(true);
  });

  it('stop() while waiting to reopen: no further open attempts', async () => {
    const t = setup(['ok'], 'fail');
    t.reader.start();
    t.current().unplug();
    t.time.advance(5_000); // a few failed attempts
    const attempts = t.ports.length;
    expect(attempts).toBeGreaterThan(2);
    await t.reader.stop();
    t.time.advance(600_000);
    expect(t.ports).toHaveLength(attempts);
    expect(t.time.pendingCount).toBe(0);
    expect(t.connection).toEqual([true, false]);
  });

  it('stop() while connected closes the port, reports disconnected and does not reopen', async () => {
    const t = setup();
    t.reader.start();
    const port = t.current();
    await t.reader.stop();
    expect(port.closeCalls).toBe(1);
    expect(port.isOpen).toBe(false);
    expect(t.reader.connected).toBe(false);
    expect(t.connection).toEqual([true, false]);
    t.time.advance(600_000);
    expect(t.ports).toHaveLength(1);
    expect(t.warnings('reader disconnected; reopening')).toHaveLength(0);
  });
});

describe('backoffDelay', () => {
  const opts = { initialMs: 500, maxMs: 30_000, jitter: 0.2 };

  it('attempt 0 is at most initialMs', () => {
    expect(backoffDelay(0, opts)).toBeLessThanOrEqual(500);
    expect(backoffDelay(0, opts, () => 0)).toBe(500);
  });

  it('doubles per attempt without jitter', () => {
    expect([0, 1, 2, 3, 4, 5].map((a) => backoffDelay(a, opts, () => 0))).toEqual([500, 1000, 2000, 4000, 8000, 16000]);
  });

  it('is capped at maxMs, even for huge attempt numbers', () => {
    expect(backoffDelay(6, opts, () => 0)).toBe(30_000);
    expect(backoffDelay(1_000, opts, () => 0)).toBe(30_000);
    expect(backoffDelay(Number.MAX_SAFE_INTEGER, opts, () => 0)).toBe(30_000);
    for (let a = 0; a < 100; a++) expect(backoffDelay(a, opts)).toBeLessThanOrEqual(30_000);
  });

  it('jitter takes at most its share off the top', () => {
    expect(backoffDelay(3, opts, () => 0)).toBe(4_000);
    expect(backoffDelay(3, opts, () => 0.999)).toBe(Math.round(4_000 * (1 - 0.2 * 0.999)));
    expect(backoffDelay(3, opts, () => 0.999)).toBeGreaterThanOrEqual(4_000 * 0.8);
    expect(backoffDelay(100, opts, () => 0.999)).toBeGreaterThanOrEqual(30_000 * 0.8);
    expect(backoffDelay(100, opts, () => 0.999)).toBeLessThan(30_000);
  });
});
