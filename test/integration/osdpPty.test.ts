import { join } from 'node:path';
import { SerialPort } from 'serialport';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { encodeCard } from '../../src/core/wiegand.js';
import { OsdpBus } from '../../src/readers/osdp/controlPanel.js';
import type { ReaderFrame } from '../../src/readers/readerFrames.js';
import { systemClock, systemTimers } from '../../src/util/clock.js';
import { tempDir } from '../support/cli.js';
import { waitUntil } from '../support/daemon.js';
import { OsdpEmulator } from '../../src/readers/osdp/readerEmulator.js';
import { PtyPair } from '../support/socat.js';

// The control panel and the emulated readers on a real serial line (a socat pty pair) at 9600 baud, through the
// serialport package on both ends, with the real clock and timers.
const tmp = tempDir('door-agent-osdp-');
afterAll(tmp.cleanup);
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function open(path: string): Promise<SerialPort> {
  const port = new SerialPort({ path, baudRate: 9600, autoOpen: false });
  await new Promise<void>((resolve, reject) => port.open((err) => (err ? reject(err) : resolve())));
  cleanups.push(() => new Promise<void>((r) => port.close(() => r())));
  return port;
}

describe('OSDP over a serial line', () => {
  it('two readers on one bus: each card and PIN is reported with its reader, within a poll cycle or two', async () => {
    const pty = new PtyPair(join(tmp.path, 'cp'), join(tmp.path, 'pd'));
    await pty.plugIn();
    cleanups.push(() => pty.unplug());
    const cpPort = await open(join(tmp.path, 'cp'));
    const pdPort = await open(join(tmp.path, 'pd'));
    const pd = new OsdpEmulator([1, 2], (bytes) => pdPort.write(bytes));
    pdPort.on('data', (chunk: Buffer) => pd.receive(chunk));
    const frames: Array<[number, ReaderFrame]> = [];
    const online = new Set<number>();
    const bus = new OsdpBus({
      transport: { write: (bytes) => void cpPort.write(bytes) },
      clock: systemClock,
      timers: systemTimers,
      readers: [1, 2].map((address) => ({
        address,
        numbering: 'data' as const,
        onFrame: (f: ReaderFrame) => frames.push([address, f]),
        onOnline: (o: boolean) => void (o ? online.add(address) : online.delete(address)),
      })),
    });
    cpPort.on('data', (chunk: Buffer) => bus.receive(chunk));
    bus.start();
    cleanups.push(() => bus.stop());
    await waitUntil(() => online.size === 2, 5000, 'both readers online');
    pd.presentCard(2, encodeCard(4_213_578n));
    pd.typeKeys(1, '1234#');
    await waitUntil(() => frames.length === 2, 5000, 'a card and a PIN');
    expect(frames).toEqual(
      expect.arrayContaining([
        [2, expect.objectContaining({ kind: 'card', value: '4213578' })],
        [1, { kind: 'pin', value: '1234' }],
      ]),
    );
  });

  it('secure channel, two readers on one bus: cards and PINs; a corrupted reply and a reader that stops answering and comes back', async () => {
    const KEY = Buffer.from('00112233445566778899aabbccddeeff', 'hex');
    const pty = new PtyPair(join(tmp.path, 'cp2'), join(tmp.path, 'pd2'));
    await pty.plugIn();
    cleanups.push(() => pty.unplug());
    const cpPort = await open(join(tmp.path, 'cp2'));
    const pdPort = await open(join(tmp.path, 'pd2'));
    const pd = new OsdpEmulator([1, 2], (bytes) => pdPort.write(bytes));
    for (const a of [1, 2]) pd.reader(a).scbk = KEY;
    pdPort.on('data', (chunk: Buffer) => pd.receive(chunk));
    const frames: Array<[number, ReaderFrame]> = [];
    const secure = new Map<number, number>();
    const errors: string[] = [];
    const bus = new OsdpBus({
      transport: { write: (bytes) => void cpPort.write(bytes) },
      clock: systemClock,
      timers: systemTimers,
      readers: [1, 2].map((address) => ({
        address,
        numbering: 'data' as const,
        scbk: KEY,
        onFrame: (f: ReaderFrame) => frames.push([address, f]),
        onSecure: (up: boolean) => void (up && secure.set(address, (secure.get(address) ?? 0) + 1)),
        onSecureError: (m: string) => errors.push(m),
      })),
    });
    cpPort.on('data', (chunk: Buffer) => bus.receive(chunk));
    bus.start();
    cleanups.push(() => bus.stop());
    await waitUntil(() => secure.get(1) === 1 && secure.get(2) === 1, 5000, 'both secure channels');
    // Reader 1's reply carrying the card is garbled on the line: it is asked for again and arrives.
    pd.reader(1).corrupt = true;
    pd.presentCard(1, encodeCard(4_213_578n));
    await new Promise((r) => setTimeout(r, 300));
    pd.reader(1).corrupt = false;
    pd.typeKeys(2, '1234#');
    await waitUntil(() => frames.length === 2, 5000, 'the card and the PIN');
    expect(frames).toEqual(
      expect.arrayContaining([
        [1, expect.objectContaining({ kind: 'card', value: '4213578' })],
        [2, { kind: 'pin', value: '1234' }],
      ]),
    );
    // Reader 2 stops answering (unplugged) and comes back: a new handshake, and it reads again.
    pd.reader(2).silent = true;
    await new Promise((r) => setTimeout(r, 2600));
    pd.reader(2).silent = false;
    await waitUntil(() => secure.get(2) === 2, 8000, 'a new secure channel with reader 2');
    pd.presentCard(2, encodeCard(42n));
    await waitUntil(() => frames.length === 3, 5000, 'a card from reader 2 again');
    expect(frames[2]).toMatchObject([2, expect.objectContaining({ kind: 'card', value: '42' })]);
    expect(errors).toEqual([]);
  });
});
