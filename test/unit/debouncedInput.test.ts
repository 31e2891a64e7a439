import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Level } from '../../src/core/relay.js';
import { DebouncedInput } from '../../src/door/debouncedInput.js';
import type { GpioDriver, GpioInput, GpioOutput } from '../../src/hardware/gpio.js';
import { SimulatedGpio } from '../../src/hardware/simulatedGpio.js';
import type { Timers } from '../../src/util/clock.js';
import { ManualTime } from '../support/manualTime.js';
import { tempDir } from '../support/cli.js';

/** A raw input pin the test sets by hand; set() reports the change as a driver would (not debounced). */
class FakeDriver implements GpioDriver {
  readonly name = 'fake';
  level: Level;
  onChange: ((level: Level) => void) | null = null;
  closed = false;
  idleLevel: Level | null = null;
  constructor(initial: Level) {
    this.level = initial;
  }
  openOutput(): GpioOutput {
    throw new Error('not used');
  }
  openInput(pin: number, onChange: (level: Level) => void, idleLevel: Level): GpioInput {
    this.onChange = onChange;
    this.idleLevel = idleLevel;
    return { pin, read: () => this.level, close: () => void (this.closed = true) };
  }
  set(level: Level): void {
    if (level === this.level) return;
    this.level = level;
    if (!this.closed) this.onChange?.(level);
  }
  close(): void {}
}

function fakeSetup(debounceMs: number, initial: Level = 0) {
  const timers = new ManualTime({ mono: 0 });
  const driver = new FakeDriver(initial);
  const reported: Level[] = [];
  const input = new DebouncedInput(driver, { pin: 27, idleLevel: 0, debounceMs, timers, onLevel: (l) => reported.push(l) });
  return { timers, driver, reported, input };
}

describe('DebouncedInput (manual timers)', () => {
  it('has the initial level in .level without a callback', () => {
    for (const initial of [0, 1] as const) {
      const { reported, input, timers, driver } = fakeSetup(50, initial);
      expect(input.level).toBe(initial);
      timers.advance(1000);
      expect(reported).toEqual([]);
      expect(driver.idleLevel).toBe(0);
    }
  });

  it('reports a change held longer than debounceMs once, after debounceMs', () => {
    const { timers, driver, reported, input } = fakeSetup(50);
    driver.set(1);
    timers.advance(49);
    expect(reported).toEqual([]);
    expect(input.level).toBe(0);
    timers.advance(1);
    expect(reported).toEqual([1]);
    expect(input.level).toBe(1);
    timers.advance(10_000);
    expect(reported).toEqual([1]);
    driver.set(0);
    timers.advance(50);
    expect(reported).toEqual([1, 0]);
  });

  it('does not report chatter that returns to the settled level within debounceMs', () => {
    const { timers, driver, reported, input } = fakeSetup(50);
    for (let i = 0; i < 5; i++) {
      driver.set(1);
      timers.advance(10);
      driver.set(0);
      timers.advance(10);
    }
    timers.advance(1000);
    expect(reported).toEqual([]);
    expect(input.level).toBe(0);
  });

  it('reports a bouncing change once, debounceMs after the last bounce', () => {
    const { timers, driver, reported } = fakeSetup(50);
    driver.set(1);
    timers.advance(30);
    driver.set(0);
    timers.advance(30);
    driver.set(1); // settles here
    timers.advance(49);
    expect(reported).toEqual([]);
    timers.advance(1);
    expect(reported).toEqual([1]);
    timers.advance(1000);
    expect(reported).toEqual([1]);
  });

  it('with debounceMs 0 reports each change at once', () => {
    const { driver, reported, input, timers } = fakeSetup(0);
    driver.set(1);
    expect(reported).toEqual([1]);
    expect(input.level).toBe(1);
    driver.set(0);
    expect(reported).toEqual([1, 0]);
    expect(timers.pendingCount).toBe(0);
  });

  it('close() drops a change still settling, stops reporting and closes the pin', () => {
    const { timers, driver, reported, input } = fakeSetup(50);
    driver.set(1);
    input.close();
    expect(driver.closed).toBe(true);
    expect(timers.pendingCount).toBe(0);
    timers.advance(1000);
    expect(reported).toEqual([]);
  });
});

describe('DebouncedInput on SimulatedGpio (real timers)', () => {
  let tmp: ReturnType<typeof tempDir>;
  let gpio: SimulatedGpio;
  const opened: DebouncedInput[] = [];
  afterEach(() => {
    for (const input of opened.splice(0)) input.close();
    gpio.close();
    tmp.cleanup();
  });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const realTimers: Timers = { setTimeout: (cb, ms) => setTimeout(cb, ms), clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout) };

  function start(debounceMs: number, idleLevel: Level = 1) {
    tmp = tempDir('door-agent-debounce-');
    gpio = new SimulatedGpio(join(tmp.path, 'gpio'));
    const reported: Level[] = [];
    const input = new DebouncedInput(gpio, { pin: 22, idleLevel, debounceMs, timers: realTimers, onLevel: (l) => reported.push(l) });
    opened.push(input);
    const set = (level: Level) => writeFileSync(join(tmp.path, 'gpio', 'gpio22', 'value'), `${level}\n`);
    return { input, reported, set };
  }

  it('starts at the idle level of a new pin and reports a held change in the value file once', async () => {
    const { input, reported, set } = start(200);
    expect(input.level).toBe(1);
    set(0);
    await sleep(40);
    expect(reported).toEqual([]); // seen by the poll, still settling
    await sleep(400);
    expect(reported).toEqual([0]);
    expect(input.level).toBe(0);
  });

  it('does not report a level that came back before debounceMs', async () => {
    const { input, reported, set } = start(300);
    set(0);
    await sleep(60); // several polls see it
    set(1);
    await sleep(500);
    expect(reported).toEqual([]);
    expect(input.level).toBe(1);
  });

  it('reports nothing after close()', async () => {
    const { input, reported, set } = start(20);
    input.close();
    opened.length = 0;
    set(0);
    await sleep(120);
    expect(reported).toEqual([]);
  });
});
