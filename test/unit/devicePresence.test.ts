import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { closeWhenDeviceVanishes, PRESENCE_CHECK_MS, type PresenceDeps } from '../../src/readers/serial/devicePresence.js';

class Port extends EventEmitter {
  isOpen = false;
  closes = 0;
  /** The error each 'close' carried. */
  closeErrors: Array<(Error & { disconnected?: boolean }) | null> = [];
  open(): void {
    this.isOpen = true;
    this.emit('open');
  }
  // serialport's close(callback, disconnectError): the error goes with the 'close' event.
  close(callback?: (err: Error | null) => void, disconnectError: Error | null = null): void {
    this.closes++;
    this.isOpen = false;
    this.closeErrors.push(disconnectError);
    this.emit('close', disconnectError);
    callback?.(null);
  }
}

function watch() {
  let present = true;
  const ticks: Array<{ ms: number; tick: () => void; stopped: boolean }> = [];
  const deps: PresenceDeps = {
    exists: () => present,
    every: (ms, tick) => {
      const t = { ms, tick, stopped: false };
      ticks.push(t);
      return () => void (t.stopped = true);
    },
  };
  const port = closeWhenDeviceVanishes(new Port(), '/dev/ttyUSB0', deps);
  const tick = () => {
    for (const t of ticks.filter((t) => !t.stopped)) t.tick();
  };
  return { port, ticks, tick, setPresent: (p: boolean) => (present = p) };
}

describe('closeWhenDeviceVanishes', () => {
  it('closes an open port whose device node is gone (serialport did not notice), once', () => {
    const w = watch();
    w.port.open();
    expect(w.ticks).toHaveLength(1);
    expect(w.ticks[0]!.ms).toBe(PRESENCE_CHECK_MS);
    w.tick();
    expect(w.port.isOpen).toBe(true);
    w.setPresent(false);
    w.tick();
    expect(w.port.isOpen).toBe(false);
    expect(w.port.closes).toBe(1);
    // The 'close' says why, as a disconnection (the reader's log: "the device went away ... /dev/ttyUSB0 disappeared").
    expect(w.port.closeErrors[0]?.message).toBe('/dev/ttyUSB0 disappeared');
    expect(w.port.closeErrors[0]?.disconnected).toBe(true);
    w.tick();
    expect(w.port.closes).toBe(1);
    expect(w.ticks.every((t) => t.stopped)).toBe(true);
  });

  it('watches nothing before the port opens or after it closed', () => {
    const w = watch();
    expect(w.ticks).toHaveLength(0);
    w.port.open();
    w.port.close();
    expect(w.ticks.every((t) => t.stopped)).toBe(true);
    w.setPresent(false);
    w.tick();
    expect(w.port.closes).toBe(1);
  });
});
