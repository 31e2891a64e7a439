import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { edgesOf, encodeCard } from '../../src/core/wiegand.js';
import type { GpioDriver } from '../../src/hardware/gpio.js';
import type { ReaderFrame } from '../../src/readers/readerFrames.js';
import { writeSimulatedEdges } from '../../src/hardware/simulatedEdges.js';
import { SimulatedGpio } from '../../src/hardware/simulatedGpio.js';
import { WiegandReader } from '../../src/readers/wiegand/wiegandReader.js';
import { systemClock, systemTimers } from '../../src/util/clock.js';
import { tempDir } from '../support/cli.js';
import { waitUntil } from '../support/daemon.js';
import { sleep } from '../support/wait.js';

// The simulated chip's FIFO and the Wiegand reader on the real event loop and timers.
const PINS = { d0: 5, d1: 6 };
const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function listen(driver: (gpio: SimulatedGpio) => GpioDriver = (g) => g) {
  const dir = tempDir('door-agent-wsim-');
  const gpio = new SimulatedGpio(dir.path);
  const frames: ReaderFrame[] = [];
  const logs: Array<Record<string, unknown>> = [];
  const reader = new WiegandReader({
    ...PINS,
    pull: 'up',
    format: 'auto',
    numbering: 'data',
    gpio: driver(gpio),
    onFrame: (f) => frames.push(f),
    logger: pino({ level: 'info' }, { write: (l: string) => void logs.push(JSON.parse(l) as Record<string, unknown>) }),
    clock: systemClock,
    timers: systemTimers,
  });
  reader.start();
  cleanups.push(
    dir.cleanup,
    () => gpio.close(),
    () => reader.stop(),
  );
  return { dir: dir.path, frames, logs };
}

describe('Wiegand on the simulated chip, real event loop', () => {
  it('cards arrive through the FIFO with their kernel-style timestamps, and the pull asked for is shown', async () => {
    const t = listen();
    writeSimulatedEdges(t.dir, PINS, edgesOf(encodeCard(4_213_578n), 0));
    await waitUntil(() => t.frames.length === 1, 5000, 'card decoded');
    expect(t.frames).toMatchObject([{ kind: 'card', value: '4213578' }]);
  });

  it('a loop stalled mid-frame (the flush timer due while the rest of the frame waits unread) still decodes the card', async () => {
    const edges = edgesOf(encodeCard(777n), 0);
    const startUs = Number(process.hrtime.bigint() / 1000n) - 60_000;
    let stalled = false;
    const t = listen((gpio) => ({
      name: gpio.name,
      openOutput: (...a) => gpio.openOutput(...a),
      openInput: (...a) => gpio.openInput(...a),
      close: () => gpio.close(),
      openEdgeInputs: (pins, pull, onEdges) =>
        gpio.openEdgeInputs(pins, pull, (batch) => {
          onEdges(batch);
          if (stalled) return;
          stalled = true;
          // After this turn's I/O: the loop blocks 200 ms (a sync apply, a GC) while the reader sends the
          // rest of its frame; when the loop resumes, the flush timer is overdue and runs before the read.
          setImmediate(() => {
            const until = Date.now() + 200;
            while (Date.now() < until);
            writeSimulatedEdges(t.dir, PINS, edges.slice(10), startUs);
          });
        }),
    }));
    writeSimulatedEdges(t.dir, PINS, edges.slice(0, 10), startUs);
    await waitUntil(() => t.frames.length > 0 || t.logs.some((l) => String(l.msg).startsWith('Wiegand frames dropped')), 5000, 'a decision or a drop');
    await sleep(100);
    expect(stalled).toBe(true);
    expect(t.frames).toMatchObject([{ kind: 'card', value: '777' }]);
  });

  it('edges for pins nobody opened are ignored; a pin opened twice is refused', async () => {
    const t = listen();
    writeSimulatedEdges(t.dir, { d0: 20, d1: 21 }, edgesOf(encodeCard(1n), 0));
    await sleep(100);
    writeSimulatedEdges(t.dir, PINS, edgesOf(encodeCard(2n), 0));
    await waitUntil(() => t.frames.length > 0, 5000, 'the card on our pins');
    await sleep(100);
    expect(t.frames).toMatchObject([{ kind: 'card', value: '2' }]); // only ours, and the FIFO kept its place
    const again = new SimulatedGpio(t.dir);
    cleanups.push(() => again.close());
    // Another driver on the same directory has its own reading end; within one driver a pin is claimed once.
    again.openEdgeInputs([7], 'none', () => {});
    expect(() => again.openEdgeInputs([7], 'none', () => {})).toThrow(/GPIO 7: already open for edges/);
  });
});
