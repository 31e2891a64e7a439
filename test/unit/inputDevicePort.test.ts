import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { InputDevicePort } from '../../src/readers/keyboard/inputDevicePort.js';
import type { ReaderFrame } from '../../src/readers/readerFrames.js';
import { SerialReader } from '../../src/readers/serial/serialReader.js';
import { ManualTime } from '../support/manualTime.js';
import { FakeInput } from '../support/fakeInput.js';

function setup(io: FakeInput) {
  const time = new ManualTime();
  const frames: ReaderFrame[] = [];
  const connection: boolean[] = [];
  const logs: Array<{ msg: string; [k: string]: unknown }> = [];
  const reader = new SerialReader({
    path: '/dev/input/by-id/usb-Reader-event-kbd',
    baudRate: 0,
    cardFormat: 'decimal',
    logger: pino({ level: 'info' }, { write: (l: string) => void logs.push(JSON.parse(l)) }),
    clock: time,
    timers: time,
    openPort: (path) => new InputDevicePort(path, io),
    onFrame: (f) => frames.push(f),
    onConnectionChange: (c) => connection.push(c),
  });
  reader.start();
  return { reader, frames, connection, logs, time };
}

describe('a keyboard reader through the serial reader logic', () => {
  it('a typed card and Enter is a card; unplugged it reconnects with backoff and reads again', async () => {
    const io = new FakeInput();
    const t = setup(io);
    expect(t.connection).toEqual([true]);
    io.type('4213578\n');
    expect(t.frames).toEqual([{ kind: 'card', value: '4213578' }]);
    io.unplug();
    expect(t.connection).toEqual([true, false]);
    t.time.advance(5_000); // still unplugged: the retries fail quietly
    io.plugged = true;
    t.time.advance(35_000);
    expect(t.connection).toEqual([true, false, true]);
    io.type('4213579\n');
    expect(t.frames.at(-1)).toEqual({ kind: 'card', value: '4213579' });
    // The poll's own words come after what they mean at a door.
    expect(t.logs.find((l) => l.msg === 'reader disconnected; reopening')?.reason).toBe(
      'the device went away or reported an error (unplugged, powered off or reset: polling fd 7 failed: bad file descriptor (EBADF); the fd reports an error or hang-up)',
    );
    await t.reader.stop();
  });

  it('a device another program holds exclusively is not opened (nothing would reach us); retried until free', async () => {
    const io = new FakeInput();
    io.grabbedElsewhere = true;
    const t = setup(io);
    expect(t.connection).toEqual([]);
    expect(t.logs.find((l) => l.msg === 'cannot open reader; retrying with backoff')).toMatchObject({
      reason: expect.stringContaining('held exclusively by another program'),
    });
    io.grabbedElsewhere = false;
    t.time.advance(35_000);
    expect(t.connection).toEqual([true]);
    await t.reader.stop();
  });

  it('a device that cannot be grabbed is read anyway, with a warning', async () => {
    const io = new FakeInput();
    io.grabbable = false;
    const t = setup(io);
    await Promise.resolve();
    expect(t.connection).toEqual([true]);
    expect(t.logs.find((l) => l.msg === 'reader error')).toMatchObject({
      err: { message: expect.stringContaining('cannot take /dev/input/by-id/usb-Reader-event-kbd exclusively') },
    });
    await t.reader.stop();
  });
});
