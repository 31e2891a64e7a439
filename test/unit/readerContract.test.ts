import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import { pino } from 'pino';
import { SerialPort } from 'serialport';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { edgesOf, encodeCard } from '../../src/core/wiegand.js';
import type { EdgeInputs, GpioDriver, PinEdge } from '../../src/hardware/gpio.js';
import { inputDevicePorts } from '../../src/readers/keyboard/inputDevicePort.js';
import type { ReaderOptions, ReaderType } from '../../src/readers/options.js';
import { OsdpBuses } from '../../src/readers/osdp/osdpBuses.js';
import { OsdpEmulator } from '../../src/readers/osdp/readerEmulator.js';
import { Pn532Emulator } from '../../src/readers/pn532/pn532Emulator.js';
import type { Credential, Reader, ReaderContext } from '../../src/readers/reader.js';
import { READERS, createReader } from '../../src/readers/registry.js';
import type { PortFactory, PortLike } from '../../src/readers/serial/port.js';
import { systemClock, systemTimers } from '../../src/util/clock.js';
import { tempDir } from '../support/cli.js';
import { FakeInput } from '../support/fakeInput.js';
import { PtyPair } from '../support/socat.js';
import { sleep, waitUntil } from '../support/wait.js';

// One suite, every reader type (as node-serialport tests every binding against one abstract suite): each type is
// made by the registry and driven through its emulated device, and the same assertions hold for all of them.
// Adding a reader type adds one entry to DEVICES below.

const tmp = tempDir('door-agent-reader-contract-');
afterAll(tmp.cleanup);
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The card every device presents, and what every reader must hand on: its decimal integer, once. */
const CARD = 4_213_578n;
const EXPECTED: Credential = { kind: 'card', value: '4213578' };

/** A reader type's emulated device: what the reader is given, and the test's hands on the other end. */
interface Device {
  options: ReaderOptions;
  context: Partial<ReaderContext>;
  /** Holds the card to the reader (as the device sends it, in its own format). */
  present(): void;
  /** Whether the reader has let the device go (port closed, lines released, off the bus). */
  released(): boolean;
  /** For types with feedback: whether a grant shown by the reader reached the device. */
  feedbackSeen?: () => boolean;
}

/** serial (lines) and serial (rdm6300): a real serial line, a socat pty pair; the test is the reader's end. */
async function serialDevice(name: string, format: 'lines' | 'rdm6300'): Promise<Device> {
  const pty = new PtyPair(join(tmp.path, `${name}-agent`), join(tmp.path, `${name}-reader`));
  await pty.plugIn();
  cleanups.push(() => pty.unplug());
  const far = new SerialPort({ path: pty.terminalPath, baudRate: 9600, autoOpen: false });
  await new Promise<void>((resolve, reject) => far.open((err) => (err ? reject(err) : resolve())));
  cleanups.push(() => new Promise<void>((r) => (far.isOpen ? far.close(() => r()) : r())));
  const received: Buffer[] = [];
  far.on('data', (chunk: Buffer) => received.push(chunk));
  // The ports the reader opened, to see them closed again.
  const opened: PortLike[] = [];
  const openPort: PortFactory = (path, baudRate) => {
    const port = new SerialPort({ path, baudRate, autoOpen: false, lock: true }) as unknown as PortLike;
    opened.push(port);
    return port;
  };
  let frame: Buffer;
  if (format === 'lines')
    frame = Buffer.from(`000${CARD}\r\n`, 'latin1'); // leading zeros: normalized away
  else {
    // STX, 10 hex digits (a version byte, then the 32-bit card), 2 hex digits of XOR, ETX; sent over and over.
    const id = (0x1an << 32n) | CARD;
    const bytes = Buffer.from(id.toString(16).padStart(10, '0'), 'hex');
    const xor = bytes.reduce((a, b) => a ^ b, 0);
    const ascii = (id.toString(16).padStart(10, '0') + xor.toString(16).padStart(2, '0')).toUpperCase();
    const one = Buffer.concat([Buffer.from([0x02]), Buffer.from(ascii, 'latin1'), Buffer.from([0x03])]);
    frame = Buffer.concat([one, one, one]);
  }
  return {
    options: {
      type: 'serial',
      path: pty.devicePath,
      baudRate: 9600,
      cardFormat: 'decimal',
      format,
      numbering: 'last32',
      replies: { grant: 'OK\r\n' },
    },
    context: { openPort },
    present: () => far.write(frame),
    released: () => opened.length > 0 && opened.every((p) => !p.isOpen),
    feedbackSeen: () => Buffer.concat(received).toString('latin1') === 'OK\r\n',
  };
}

/** keyboard: the fake input device of the input-device tests (typed key records, Enter ends the card). */
function keyboardDevice(): Device {
  const io = new FakeInput();
  return {
    options: { type: 'keyboard', path: '/dev/input/by-id/usb-Reader-event-kbd', cardFormat: 'decimal' },
    context: { openInputDevice: inputDevicePorts(() => io) },
    present: () => io.type(`00${CARD}\n`),
    released: () => io.closes === io.opens && io.opens > 0,
  };
}

/** wiegand: edges on the two data lines, as the GPIO driver delivers them (timestamped, already past). */
function wiegandDevice(): Device {
  const D0 = 5;
  const D1 = 6;
  const nowUs = () => Math.round(performance.now() * 1000);
  let deliver: ((edges: readonly PinEdge[]) => void) | null = null;
  let closed = false;
  const gpio: GpioDriver = {
    name: 'fake',
    openOutput: () => {
      throw new Error('unused');
    },
    openInput: () => {
      throw new Error('unused');
    },
    openEdgeInputs(_pins, _pull, onEdges): EdgeInputs {
      deliver = onEdges;
      closed = false;
      return { nowUs, levels: () => [1, 1], close: () => void ((closed = true), (deliver = null)) };
    },
    close: () => {},
  };
  return {
    options: { type: 'wiegand', d0: D0, d1: D1, pull: 'up', format: ['H10301'], numbering: 'data' },
    context: { gpio },
    present: () => {
      const edges = edgesOf(encodeCard(CARD), 0);
      const last = Math.max(...edges.map((e) => e.atUs));
      const base = nowUs() - last - 1000; // the frame has just ended
      deliver?.(edges.map((e) => ({ pin: e.line === 'd0' ? D0 : D1, rising: e.rising, atUs: base + e.atUs, afterLoss: false })));
    },
    released: () => closed,
  };
}

/** An in-memory serial port with an emulated device on its far end: what is written reaches `device`, what it sends comes back as 'data'. */
function memoryPort(device: { receive(bytes: Buffer): void }) {
  const port = Object.assign(new EventEmitter(), {
    isOpen: false,
    open(callback: (err: Error | null) => void) {
      port.isOpen = true;
      setImmediate(() => callback(null));
    },
    close(callback?: (err: Error | null) => void) {
      port.isOpen = false;
      port.emit('close', null);
      callback?.(null);
    },
    write(data: Buffer) {
      if (port.isOpen) setImmediate(() => device.receive(data));
      return true;
    },
  });
  return port;
}

/** osdp: the reader emulator at address 1 behind an in-memory serial port (the bus's transport). */
function osdpDevice(): Device {
  const emulator = new OsdpEmulator([1], (bytes) => setImmediate(() => port.emit('data', bytes)));
  const port = memoryPort(emulator);
  const logger = pino({ level: 'silent' });
  const osdp = new OsdpBuses({ clock: systemClock, timers: systemTimers, logger, openPort: () => port as unknown as PortLike });
  const LED = 0x69;
  const BUZ = 0x6a;
  return {
    options: { type: 'osdp', path: '/dev/ttyOSDP', baudRate: 9600, address: 1, installMode: false, numbering: 'data', check: 'crc' },
    context: { osdp },
    present: () => emulator.presentCard(1, encodeCard(CARD)),
    released: () => !port.isOpen,
    feedbackSeen: () => emulator.reader(1).received.includes(LED) && emulator.reader(1).received.includes(BUZ),
  };
}

/** pn532: the emulated module behind an in-memory serial port; the card's UID is the number's 4 bytes, first byte most significant. */
function pn532Device(): Device {
  const emulator = new Pn532Emulator((bytes) => setImmediate(() => port.emit('data', bytes)));
  cleanups.push(() => emulator.close());
  const port = memoryPort(emulator);
  const uid = Buffer.alloc(4);
  uid.writeUInt32BE(Number(CARD));
  return {
    options: { type: 'pn532', path: '/dev/serial0', baudRate: 115200, pollMs: 50, releaseMs: 500, uidByteOrder: 'msb_first' },
    context: { openPort: () => port as unknown as PortLike },
    present: () => emulator.present([...uid]),
    released: () => !port.isOpen,
  };
}

const DEVICES: Array<{ name: string; type: ReaderType; device: (name: string) => Device | Promise<Device> }> = [
  { name: 'serial (lines)', type: 'serial', device: (n) => serialDevice(n, 'lines') },
  { name: 'serial (rdm6300)', type: 'serial', device: (n) => serialDevice(n, 'rdm6300') },
  { name: 'keyboard', type: 'keyboard', device: keyboardDevice },
  { name: 'wiegand', type: 'wiegand', device: wiegandDevice },
  { name: 'osdp', type: 'osdp', device: osdpDevice },
  { name: 'pn532', type: 'pn532', device: pn532Device },
];

it('every type in the registry has an entry in this suite', () => {
  expect(new Set(DEVICES.map((d) => d.type))).toEqual(new Set(Object.keys(READERS)));
});

describe.each(DEVICES)('reader contract: $name', ({ name, device: makeDevice }) => {
  async function setup() {
    const device = await makeDevice(name.replace(/\W+/g, '-'));
    const credentials: Credential[] = [];
    const connection: boolean[] = [];
    const context: ReaderContext = {
      logger: pino({ level: 'silent' }),
      clock: systemClock,
      timers: systemTimers,
      gpio: { name: 'none' } as GpioDriver,
      ...device.context,
      events: { credential: (c) => credentials.push(c), connection: (c) => connection.push(c) },
    };
    const reader: Reader = createReader(device.options, context);
    cleanups.push(() => reader.stop());
    return { device, reader, credentials, connection };
  }

  it('connected reflects the device: false before start, true once the device is there', async () => {
    const t = await setup();
    expect(t.reader.connected).toBe(false);
    t.reader.start();
    await waitUntil(() => t.reader.connected, 10_000, 'reader connected');
    expect(t.connection.at(-1)).toBe(true);
  });

  it('a card presented is emitted once, normalized', async () => {
    const t = await setup();
    t.reader.start();
    await waitUntil(() => t.reader.connected, 10_000, 'reader connected');
    t.device.present();
    await waitUntil(() => t.credentials.length > 0, 10_000, 'the card');
    await sleep(300); // a repeated frame (RDM6300 sends it while the card is held) would come in this time
    // Wiegand and OSDP cards carry their printed form (facility:card) beside the number.
    expect(t.credentials).toMatchObject([EXPECTED]);
  });

  it('stop releases the device and reports it disconnected', async () => {
    const t = await setup();
    t.reader.start();
    await waitUntil(() => t.reader.connected, 10_000, 'reader connected');
    await t.reader.stop();
    expect(t.reader.connected).toBe(false);
    expect(t.connection.at(-1)).toBe(false);
    expect(t.device.released()).toBe(true);
  });

  it('feedback, where the type has it, reaches the device', async () => {
    const t = await setup();
    if (!t.device.feedbackSeen) {
      expect(t.reader.feedback).toBeUndefined(); // its LED and buzzer are GPIO lines the door drives (readerFeedback.ts)
      return;
    }
    t.reader.start();
    await waitUntil(() => t.reader.connected, 10_000, 'reader connected');
    t.reader.feedback!('grant');
    await waitUntil(t.device.feedbackSeen, 10_000, 'the grant at the device');
  });
});
