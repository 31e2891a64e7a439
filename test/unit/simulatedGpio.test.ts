import { closeSync, mkdirSync, openSync, readFileSync, readSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SimulatedGpio } from '../../src/hardware/simulatedGpio.js';
import { DoorAgentError } from '../../src/util/errors.js';
import { tempDir } from '../support/cli.js';

describe('SimulatedGpio', () => {
  let tmp: ReturnType<typeof tempDir>;
  let gpio: SimulatedGpio;
  const file = (pin: number, name: string) => join(tmp.path, 'gpio', `gpio${pin}`, name);

  beforeEach(() => {
    tmp = tempDir('door-agent-simgpio-');
    gpio = new SimulatedGpio(join(tmp.path, 'gpio'));
  });
  afterEach(() => {
    gpio.close();
    tmp.cleanup();
  });

  it('is named simulated', () => {
    expect(gpio.name).toBe('simulated');
  });

  it.each([0, 1] as const)('creates gpio<N>/value holding the initial level %i and direction "out"', (initial) => {
    const out = gpio.openOutput(17, initial);
    expect(out.pin).toBe(17);
    expect(readFileSync(file(17, 'value'), 'utf8')).toBe(`${initial}\n`);
    expect(readFileSync(file(17, 'direction'), 'utf8')).toBe('out\n');
    expect(readFileSync(file(17, 'active_low'), 'utf8')).toBe('0\n');
    expect(out.read()).toBe(initial);
  });

  it('creates the directory tree when it does not exist yet', () => {
    const nested = new SimulatedGpio(join(tmp.path, 'run', 'door-agent', 'gpio'));
    try {
      nested.openOutput(4, 1);
      expect(readFileSync(join(tmp.path, 'run', 'door-agent', 'gpio', 'gpio4', 'value'), 'utf8')).toBe('1\n');
    } finally {
      nested.close();
    }
  });

  it('rewrites value on every write and read() returns the level written', () => {
    const out = gpio.openOutput(17, 0);
    for (const level of [1, 0, 0, 1, 1, 0] as const) {
      out.write(level);
      expect(readFileSync(file(17, 'value'), 'utf8')).toBe(`${level}\n`);
      expect(out.read()).toBe(level);
    }
  });

  it('writes in place: the file keeps its inode and stays 2 bytes, and an open reader sees each change', () => {
    const out = gpio.openOutput(17, 1);
    const { ino } = statSync(file(17, 'value'));
    const readerFd = openSync(file(17, 'value'), 'r');
    try {
      const buf = Buffer.alloc(8);
      for (const level of [0, 1, 0] as const) {
        out.write(level);
        const st = statSync(file(17, 'value'));
        expect(st.size).toBe(2);
        expect(st.ino).toBe(ino);
        const n = readSync(readerFd, buf, 0, buf.length, 0);
        expect(buf.subarray(0, n).toString()).toBe(`${level}\n`);
      }
    } finally {
      closeSync(readerFd);
    }
  });

  it('read() reports the level in the file, as another program would see it', () => {
    const out = gpio.openOutput(17, 0);
    writeFileSync(file(17, 'value'), '1\n');
    expect(out.read()).toBe(1);
    writeFileSync(file(17, 'value'), '0\n');
    expect(out.read()).toBe(0);
  });

  it('keeps separate files per pin', () => {
    const a = gpio.openOutput(17, 0);
    const b = gpio.openOutput(18, 1);
    a.write(1);
    b.write(0);
    expect(readFileSync(file(17, 'value'), 'utf8')).toBe('1\n');
    expect(readFileSync(file(18, 'value'), 'utf8')).toBe('0\n');
    expect(a.read()).toBe(1);
    expect(b.read()).toBe(0);
  });

  it('leaves the last level in the file after close()', () => {
    const out = gpio.openOutput(22, 0);
    out.write(1);
    gpio.close();
    expect(readFileSync(file(22, 'value'), 'utf8')).toBe('1\n');
  });

  it('refuses writes through an output after close(), instead of writing to a reused file descriptor', () => {
    const out = gpio.openOutput(23, 0);
    gpio.close();
    const other = openSync(join(tmp.path, 'innocent'), 'w+');
    try {
      expect(() => out.write(1)).toThrow(/GPIO 23: used after the driver was closed/);
      expect(readFileSync(join(tmp.path, 'innocent'), 'utf8')).toBe('');
    } finally {
      closeSync(other);
    }
  });

  it('fails with an error naming the pin when the directory cannot be used', () => {
    // A regular file where the directory should be: unusable even for root (ENOTDIR), unlike chmod.
    const blocker = join(tmp.path, 'not-a-dir');
    writeFileSync(blocker, 'x');
    const broken = new SimulatedGpio(blocker);
    try {
      let caught: unknown;
      try {
        broken.openOutput(23, 0);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(DoorAgentError);
      const message = (caught as Error).message;
      expect(message).toMatch(/GPIO 23\b/);
      expect(message).toContain(join(blocker, 'gpio23'));
    } finally {
      broken.close();
    }
  });

  it('fails naming the pin when gpio<N> exists as a file', () => {
    const dir = join(tmp.path, 'gpio');
    mkdirSync(dir);
    writeFileSync(join(dir, 'gpio24'), 'x');
    expect(() => gpio.openOutput(24, 1)).toThrow(/GPIO 24\b/);
  });
});
