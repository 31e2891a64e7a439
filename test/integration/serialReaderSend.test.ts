import { unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { SerialPort } from 'serialport';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { ReaderFrame } from '../../src/readers/readerFrames.js';
import { SerialReader } from '../../src/readers/serial/serialReader.js';
import { systemClock, systemTimers } from '../../src/util/clock.js';
import { tempDir } from '../support/cli.js';
import { waitUntil } from '../support/daemon.js';
import { PtyPair } from '../support/socat.js';

// SerialReader.send on a real serial line (a socat pty pair): the agent's end is the reader's device, the test
// listens on the other end as the reader would. Real clock and timers; waits are generous for a loaded machine.
const tmp = tempDir('door-agent-send-');
afterAll(tmp.cleanup);
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

async function setup(name: string) {
  const pty = new PtyPair(join(tmp.path, `${name}-agent`), join(tmp.path, `${name}-reader`));
  await pty.plugIn();
  cleanups.push(() => pty.unplug());
  // The reader's end: what it receives.
  const readerPort = new SerialPort({ path: pty.terminalPath, baudRate: 9600, autoOpen: false });
  await new Promise<void>((resolve, reject) => readerPort.open((err) => (err ? reject(err) : resolve())));
  cleanups.push(() => new Promise<void>((r) => (readerPort.isOpen ? readerPort.close(() => r()) : r())));
  const received: Buffer[] = [];
  readerPort.on('data', (chunk: Buffer) => received.push(chunk));
  const logs: LogLine[] = [];
  const frames: ReaderFrame[] = [];
  const reader = new SerialReader({
    path: pty.devicePath,
    baudRate: 9600,
    cardFormat: 'decimal',
    onFrame: (f) => frames.push(f),
    logger: pino({ level: 'debug' }, { write: (l: string) => void logs.push(JSON.parse(l) as LogLine) }),
    clock: systemClock,
    timers: systemTimers,
  });
  cleanups.push(() => reader.stop());
  const text = () => Buffer.concat(received).toString('latin1');
  return { pty, reader, readerPort, received, text, logs, frames };
}

describe('SerialReader.send', () => {
  it('writes the reply line to the reader, and the reader still sends cards the other way', async () => {
    const s = await setup('reply');
    s.reader.start();
    await waitUntil(() => s.reader.connected, 10_000, 'reader connected');
    expect(s.reader.send('OK\r\n')).toBe(true);
    await waitUntil(() => s.text() === 'OK\r\n', 10_000, 'the reply at the reader');
    expect(s.reader.send('NO\r\n')).toBe(true);
    await waitUntil(() => s.text() === 'OK\r\nNO\r\n', 10_000, 'the second reply at the reader');
    s.pty.write('4213578\r\n');
    await waitUntil(() => s.frames.length === 1, 10_000, 'a card from the reader');
    expect(s.frames).toEqual([{ kind: 'card', value: '4213578' }]);
  });

  it('sends the text as latin1 bytes, one byte per character', async () => {
    const s = await setup('latin1');
    s.reader.start();
    await waitUntil(() => s.reader.connected, 10_000, 'reader connected');
    expect(s.reader.send('\x02A\xe9\x7e\r')).toBe(true);
    await waitUntil(() => Buffer.concat(s.received).length >= 5, 10_000, 'five bytes at the reader');
    expect(Buffer.concat(s.received)).toEqual(Buffer.from([0x02, 0x41, 0xe9, 0x7e, 0x0d]));
  });

  it('returns false, logs at debug and writes nothing when the port is not open: before start, unplugged, after stop', async () => {
    const s = await setup('closed');
    const notSent = () => s.logs.filter((l) => l.level === 20 && l.msg.startsWith('reader reply not sent'));
    expect(s.reader.send('OK\r\n')).toBe(false);
    expect(notSent()).toHaveLength(1);

    s.reader.start();
    await waitUntil(() => s.reader.connected, 10_000, 'reader connected');
    await s.pty.unplug();
    await waitUntil(() => !s.reader.connected, 10_000, 'reader disconnected');
    expect(() => s.reader.send('GONE\r\n')).not.toThrow();
    expect(s.reader.send('GONE\r\n')).toBe(false);

    await s.reader.stop();
    expect(s.reader.send('OK\r\n')).toBe(false);
    expect(notSent().length).toBeGreaterThanOrEqual(3);
    expect(s.text()).toBe('');
  });

  it('a reader unplugged (the line fails under it) is logged with a reason an installer can act on', async () => {
    const s = await setup('unplugged');
    s.reader.start();
    await waitUntil(() => s.reader.connected, 10_000, 'reader connected');
    await s.pty.unplug();
    await waitUntil(() => !s.reader.connected, 10_000, 'reader disconnected');
    // libuv's own words for the failed line ("bad file descriptor") come last, after what they mean at a door.
    const disconnected = s.logs.find((l) => l.msg === 'reader disconnected; reopening');
    expect(disconnected?.reason).toMatch(/^the device went away or reported an error \(unplugged, powered off or reset: .+\)$/);
  });

  it('a reader whose device node vanishes while the line stays up (serialport sees no hang-up) is reported disconnected', async () => {
    const s = await setup('vanish');
    s.reader.start();
    await waitUntil(() => s.reader.connected, 10_000, 'reader connected');
    unlinkSync(s.pty.devicePath); // the node goes, socat keeps the pty open: only the presence watch can tell
    await waitUntil(() => !s.reader.connected, 15_000, 'reader disconnected');
    const disconnected = s.logs.find((l) => l.msg === 'reader disconnected; reopening');
    expect(disconnected?.reason).toBe(`the device went away or reported an error (unplugged, powered off or reset: ${s.pty.devicePath} disappeared)`);
  });
});
