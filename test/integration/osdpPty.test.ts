import { join } from 'node:path';
import { SerialPort } from 'serialport';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { encodeCard } from '../../src/core/wiegand.js';
import { OsdpBus } from '../../src/hardware/osdp/controlPanel.js';
import type { ReaderFrame } from '../../src/hardware/readerFrames.js';
import { systemClock, systemTimers } from '../../src/util/clock.js';
import { tempDir } from '../support/cli.js';
import { waitUntil } from '../support/daemon.js';
import { OsdpEmulator } from '../../src/hardware/osdp/readerEmulator.js';
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
    pd.presentCard(2, encodeCard(4_213_578n, 26));
    pd.typeKeys(1, '1234#');
    await waitUntil(() => frames.length === 2, 5000, 'a card and a PIN');
    expect(frames).toEqual(expect.arrayContaining([
      [2, { kind: 'card', value: '4213578' }],
      [1, { kind: 'pin', value: '1234' }],
    ]));
  });
});
