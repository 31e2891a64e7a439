import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { ReaderFrame } from '../../src/readers/readerFrames.js';
import { encodeCard } from '../../src/core/wiegand.js';
import { OsdpBus } from '../../src/readers/osdp/controlPanel.js';
import { OsdpEmulator } from '../../src/readers/osdp/readerEmulator.js';
import { openSerialPort, type PortLike } from '../../src/readers/serial/port.js';
import { SerialReader } from '../../src/readers/serial/serialReader.js';
import { systemClock, systemTimers } from '../../src/util/clock.js';
import { tempDir } from '../support/cli.js';
import { waitUntil } from '../support/daemon.js';
import { PtyPair } from '../support/socat.js';
import { watchedThreadPoolHold } from '../support/threadPool.js';
import { sleep } from '../support/wait.js';

// The serial port's reads and writes are made on the event loop (src/readers/serial/eventLoopIo.ts), on a real serial line
// (a socat pty pair) through the port every serial, PN532 and OSDP reader opens. Real clock; generous waits.
const tmp = tempDir('door-agent-loop-reads-');
afterAll(tmp.cleanup);
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function pty(name: string): Promise<PtyPair> {
  const pair = new PtyPair(join(tmp.path, `${name}-agent`), join(tmp.path, `${name}-reader`));
  await pair.plugIn();
  cleanups.push(() => pair.unplug());
  return pair;
}

async function openPort(path: string): Promise<PortLike> {
  const port = openSerialPort(path, 9600);
  await new Promise<void>((resolve, reject) => port.open((err) => (err ? reject(err) : resolve())));
  cleanups.push(() => new Promise<void>((r) => (port.isOpen ? port.close(() => r()) : r())));
  return port;
}

describe("a serial reader's bytes", () => {
  it("reach the door while the disk's syncs hold every thread of the pool", async () => {
    // The write-ahead log's and the lock state file's syncs run on libuv's thread pool. A card read there waited
    // for them; read on the event loop it does not.
    const pair = await pty('held');
    const frames: ReaderFrame[] = [];
    const reader = new SerialReader({
      path: pair.devicePath,
      baudRate: 9600,
      cardFormat: 'decimal',
      onFrame: (f) => frames.push(f),
      logger: pino({ level: 'silent' }),
      clock: systemClock,
      timers: systemTimers,
    });
    cleanups.push(() => reader.stop());
    reader.start();
    await waitUntil(() => reader.connected, 10_000, 'reader connected');
    const pool = watchedThreadPoolHold(tmp.path, 8000);
    try {
      pair.write('4213578\r\n');
      await waitUntil(() => frames.length > 0, 7000, 'the card read while the pool is held');
      expect(pool.released).toBe(false);
      expect(frames).toEqual([{ kind: 'card', value: '4213578' }]);
    } finally {
      await pool.done;
    }
  }, 30_000);

  it('arrive whole and in order, also a burst of many reads', async () => {
    const pair = await pty('burst');
    const port = await openPort(pair.devicePath);
    const received: Buffer[] = [];
    port.on('data', (chunk) => received.push(chunk));
    const sent = randomBytes(256 * 1024);
    // Written from the thread pool, so this process keeps reading while the pty's buffers fill.
    const out = createWriteStream(pair.terminalPath);
    await new Promise<void>((resolve, reject) => out.end(sent, () => resolve()).on('error', reject));
    await waitUntil(() => received.reduce((n, c) => n + c.length, 0) >= sent.length, 15_000, 'the whole burst');
    expect(Buffer.concat(received).equals(sent)).toBe(true);
    expect(received.length).toBeGreaterThan(1);
  }, 30_000);

  it('end quietly when the port is closed while it waits, and the port opens again', async () => {
    const pair = await pty('close');
    const port = await openPort(pair.devicePath);
    const errors: Error[] = [];
    port.on('error', (err) => errors.push(err));
    const closed = new Promise<Error | null | undefined>((resolve) => port.on('close', (err) => resolve(err)));
    await new Promise<void>((resolve, reject) => port.close((err) => (err ? reject(err) : resolve())));
    expect(await closed).toBeFalsy(); // a close we asked for: not a disconnect
    const again = await openPort(pair.devicePath);
    const received: Buffer[] = [];
    again.on('data', (chunk) => received.push(chunk));
    pair.write('after\r\n');
    await waitUntil(() => Buffer.concat(received).toString('latin1') === 'after\r\n', 10_000, 'bytes after reopening');
    expect(errors).toEqual([]);
  }, 30_000);
});

describe('bytes written to a serial line', () => {
  it("go out while the disk's syncs hold every thread of the pool (an OSDP poll, a reply line)", async () => {
    const pair = await pty('write-held');
    const port = await openPort(pair.devicePath);
    // The other end read on the event loop too: a plain serialport would wait for the pool itself.
    const far = await openPort(pair.terminalPath);
    const received: Buffer[] = [];
    far.on('data', (chunk) => received.push(chunk));
    const pool = watchedThreadPoolHold(tmp.path, 8000);
    try {
      port.write!(Buffer.from('OK\r\n', 'latin1'));
      await waitUntil(() => Buffer.concat(received).toString('latin1') === 'OK\r\n', 7000, 'the reply at the far end while the pool is held');
      expect(pool.released).toBe(false);
    } finally {
      await pool.done;
    }
  }, 30_000);

  it('go out whole and in order when they are more than the line holds at once', async () => {
    const pair = await pty('write-burst');
    const port = await openPort(pair.devicePath);
    const far = await openPort(pair.terminalPath);
    const received: Buffer[] = [];
    far.on('data', (chunk) => received.push(chunk));
    const errors: Error[] = [];
    port.on('error', (err) => errors.push(err));
    const sent = randomBytes(512 * 1024); // far more than a pty's buffers: the writes wait for room
    port.write!(sent.subarray(0, 256 * 1024));
    port.write!(sent.subarray(256 * 1024));
    await waitUntil(() => received.reduce((n, c) => n + c.length, 0) >= sent.length, 20_000, 'the whole burst at the far end');
    expect(Buffer.concat(received).equals(sent)).toBe(true);
    expect(errors).toEqual([]);
  }, 40_000);

  it('an OSDP reader stays online, and its card is reported, while the pool is held for 5 s', async () => {
    // Each poll is a write and its reply a read: on the pool, every one waited, the replies timed out (200 ms) and the
    // reader went offline after 2 s.
    const pair = await pty('osdp-held');
    const cpPort = await openPort(pair.devicePath);
    const pdPort = await openPort(pair.terminalPath); // the reader's own end, a device of its own in the field
    const pd = new OsdpEmulator([1], (bytes) => pdPort.write!(bytes));
    pdPort.on('data', (chunk) => pd.receive(chunk));
    const frames: ReaderFrame[] = [];
    const onlineChanges: boolean[] = [];
    const bus = new OsdpBus({
      transport: { write: (bytes) => void cpPort.write!(bytes) },
      clock: systemClock,
      timers: systemTimers,
      readers: [{ address: 1, numbering: 'data' as const, onFrame: (f: ReaderFrame) => frames.push(f), onOnline: (o: boolean) => onlineChanges.push(o) }],
    });
    cpPort.on('data', (chunk) => bus.receive(chunk));
    bus.start();
    cleanups.push(() => bus.stop());
    await waitUntil(() => onlineChanges.at(-1) === true, 10_000, 'the reader online');
    const pool = watchedThreadPoolHold(tmp.path, 5000);
    try {
      await sleep(2500); // past the bus's offline limit (2 s without a reply)
      pd.presentCard(1, encodeCard(4_213_578n));
      await waitUntil(() => frames.length > 0, 2000, 'the card while the pool is held');
      expect(pool.released).toBe(false);
      expect(frames[0]).toEqual(expect.objectContaining({ kind: 'card', value: '4213578' }));
      expect(onlineChanges).toEqual([true]);
    } finally {
      await pool.done;
    }
  }, 30_000);
});
