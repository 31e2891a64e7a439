import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { ReaderFrame } from '../../src/readers/readerFrames.js';
import { openSerialPort, type PortLike } from '../../src/readers/serial/port.js';
import { SerialReader } from '../../src/readers/serial/serialReader.js';
import { systemClock, systemTimers } from '../../src/util/clock.js';
import { tempDir } from '../support/cli.js';
import { waitUntil } from '../support/daemon.js';
import { PtyPair } from '../support/socat.js';
import { holdThreadPool } from '../support/threadPool.js';

// The serial port's reads are made on the event loop (src/readers/serial/eventLoopReads.ts), on a real serial line
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
    let released = false;
    const held = holdThreadPool(tmp.path, 8000).then(() => {
      released = true;
    });
    try {
      pair.write('4213578\r\n');
      await waitUntil(() => frames.length > 0, 7000, 'the card read while the pool is held');
      expect(released).toBe(false);
      expect(frames).toEqual([{ kind: 'card', value: '4213578' }]);
    } finally {
      await held;
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
