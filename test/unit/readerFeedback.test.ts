import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { BUZZER_PATTERNS, LED_PATTERNS, doorSchema } from '../../src/config/doorSchema.js';
import type { Level } from '../../src/core/relay.js';
import type { DoorOptions, FeedbackKind, ReaderOptions, SignalLineOptions } from '../../src/door/options.js';
import { ReaderSignals, readerFeedback } from '../../src/readers/readerFeedback.js';
import type { GpioDriver, GpioInput, GpioOutput } from '../../src/hardware/gpio.js';
import { CMD } from '../../src/readers/osdp/controlPanel.js';
import { feedbackCommands } from '../../src/readers/osdp/osdpBuses.js';
import { SimulatedGpio } from '../../src/hardware/simulatedGpio.js';
import { tempDir } from '../support/cli.js';
import { ManualTime } from '../support/manualTime.js';

const UUID = '6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d';
const LED = 12;
const BUZZER = 13;

/** Outputs only: every open and write stamped with the manual time; pins in `failing` throw on write. */
class TimedGpio implements GpioDriver {
  readonly name = 'timed';
  readonly log: string[] = [];
  readonly levels = new Map<number, Level>();
  readonly failing = new Set<number>();
  constructor(private readonly time: ManualTime) {}
  openOutput(pin: number, initial: Level): GpioOutput {
    this.log.push(`open ${pin}=${initial}`);
    this.levels.set(pin, initial);
    return {
      pin,
      write: (level) => {
        if (this.failing.has(pin)) throw Object.assign(new Error(`EIO: i/o error, write (gpio ${pin})`), { code: 'EIO' });
        this.log.push(`${this.time.now} ${pin}=${level}`);
        this.levels.set(pin, level);
      },
      read: () => this.levels.get(pin) ?? 0,
    };
  }
  openInput(): GpioInput {
    throw new Error('not used');
  }
  close(): void {}
  /** The writes since the last call (opens included). */
  take(): string[] {
    return this.log.splice(0);
  }
}

interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

function line(pin: number, activeLevel: Level, patterns: Partial<Record<FeedbackKind, number[]>> = {}): SignalLineOptions {
  return {
    pin,
    activeLevel,
    patterns: { grant: [1000], deny: [200, 100, 200], lockedOut: [100, 100, 100, 100], lockdown: [500, 500], awaiting: [100, 100], ...patterns },
  };
}

function setup() {
  const time = new ManualTime({ mono: 0 });
  const gpio = new TimedGpio(time);
  const logs: LogLine[] = [];
  const logger = pino({ level: 'debug' }, { write: (l: string) => void logs.push(JSON.parse(l) as LogLine) });
  return { time, gpio, logs, logger, deps: { gpio, timers: time, logger } };
}

/** A door whose reader is parsed by the config schema, so its defaults are the ones the agent would use. */
function door(reader: Record<string, unknown>): DoorOptions {
  const parsed = doorSchema.parse({ uuid: UUID, resourceId: 1, relay: { pin: 17 }, reader });
  return { ...parsed, name: 'Front door', reader: parsed.reader as ReaderOptions };
}

describe('ReaderSignals', () => {
  it.each([
    [0, 1],
    [1, 0],
  ] as const)('activeLevel %i: the line is opened at its idle level %i and nothing is written before a play', (activeLevel, idle) => {
    const t = setup();
    const signals = new ReaderSignals({ led: line(LED, activeLevel) }, t.deps);
    expect(t.gpio.take()).toEqual([`open ${LED}=${idle}`]);
    t.time.advance(10_000);
    expect(t.gpio.take()).toEqual([]);
    expect(t.time.pendingCount).toBe(0);
    signals.close();
  });

  it.each([0, 1] as const)('activeLevel %i: a pattern plays on, off, on... with its durations and ends inactive', (activeLevel) => {
    const t = setup();
    const on = activeLevel;
    const off = activeLevel === 1 ? 0 : 1;
    const signals = new ReaderSignals({ led: line(LED, activeLevel, { deny: [200, 100, 300] }) }, t.deps);
    t.gpio.take();
    t.time.advance(1000);
    signals.play('deny');
    expect(t.gpio.take()).toEqual([`1000 ${LED}=${on}`]);
    t.time.advance(199);
    expect(t.gpio.take()).toEqual([]);
    t.time.advance(1);
    expect(t.gpio.take()).toEqual([`1200 ${LED}=${off}`]);
    t.time.advance(99);
    expect(t.gpio.take()).toEqual([]);
    t.time.advance(1);
    expect(t.gpio.take()).toEqual([`1300 ${LED}=${on}`]);
    t.time.advance(299);
    expect(t.gpio.levels.get(LED)).toBe(on);
    t.time.advance(1);
    expect(t.gpio.take()).toEqual([`1600 ${LED}=${off}`]);
    expect(t.time.pendingCount).toBe(0);
    t.time.advance(10_000);
    expect(t.gpio.take()).toEqual([]);
  });

  it('a pattern ending on an off step leaves the line inactive (no extra write)', () => {
    const t = setup();
    const signals = new ReaderSignals({ led: line(LED, 0) }, t.deps);
    t.gpio.take();
    signals.play('lockdown'); // [500, 500]
    t.time.advance(2000);
    expect(t.gpio.take()).toEqual([`0 ${LED}=0`, `500 ${LED}=1`]);
    expect(t.gpio.levels.get(LED)).toBe(1);
    expect(t.time.pendingCount).toBe(0);
  });

  it('plays the LED and the buzzer together, each with its own pattern and active level', () => {
    const t = setup();
    const signals = new ReaderSignals({ led: line(LED, 0, { grant: [1000] }), buzzer: line(BUZZER, 1, { grant: [150] }) }, t.deps);
    expect(t.gpio.take()).toEqual([`open ${LED}=1`, `open ${BUZZER}=0`]);
    signals.play('grant');
    t.time.advance(5000);
    expect(t.gpio.take()).toEqual([`0 ${LED}=0`, `0 ${BUZZER}=1`, `150 ${BUZZER}=0`, `1000 ${LED}=1`]);
  });

  it('a new play cancels the pattern in progress: the line takes the new first step at once, the old steps never come', () => {
    const t = setup();
    const signals = new ReaderSignals({ buzzer: line(BUZZER, 1, { deny: [400, 100, 400, 100, 400], grant: [150] }) }, t.deps);
    t.gpio.take();
    signals.play('deny');
    t.time.advance(450); // in the pause between the two beeps
    expect(t.gpio.take()).toEqual([`0 ${BUZZER}=1`, `400 ${BUZZER}=0`]);
    signals.play('grant');
    expect(t.gpio.take()).toEqual([`450 ${BUZZER}=1`]);
    t.time.advance(10_000);
    expect(t.gpio.take()).toEqual([`600 ${BUZZER}=0`]);
    expect(t.time.pendingCount).toBe(0);
  });

  it('a new play while the line is on keeps it on and times the new pattern from the play', () => {
    const t = setup();
    const signals = new ReaderSignals({ led: line(LED, 0, { grant: [2000], deny: [200, 200, 200] }) }, t.deps);
    t.gpio.take();
    signals.play('grant');
    t.time.advance(500);
    signals.play('deny');
    t.time.advance(10_000);
    expect(t.gpio.take()).toEqual([`0 ${LED}=0`, `700 ${LED}=1`, `900 ${LED}=0`, `1100 ${LED}=1`]);
    expect(t.time.pendingCount).toBe(0);
  });

  it('the same outcome twice restarts its pattern', () => {
    const t = setup();
    const signals = new ReaderSignals({ led: line(LED, 1, { grant: [1000] }) }, t.deps);
    t.gpio.take();
    signals.play('grant');
    t.time.advance(800);
    signals.play('grant');
    t.time.advance(5000);
    expect(t.gpio.take()).toEqual([`0 ${LED}=1`, `1800 ${LED}=0`]);
  });

  it.each([0, 1] as const)(
    'activeLevel %i: close() in the middle of a pattern stops it and leaves the line inactive; play() then does nothing',
    (activeLevel) => {
      const t = setup();
      const off = activeLevel === 1 ? 0 : 1;
      const signals = new ReaderSignals({ led: line(LED, activeLevel), buzzer: line(BUZZER, activeLevel) }, t.deps);
      t.gpio.take();
      signals.play('deny');
      t.time.advance(50);
      signals.close();
      expect(t.gpio.levels.get(LED)).toBe(off);
      expect(t.gpio.levels.get(BUZZER)).toBe(off);
      expect(t.time.pendingCount).toBe(0);
      t.gpio.take();
      signals.play('grant');
      signals.close();
      t.time.advance(10_000);
      expect(t.gpio.take()).toEqual([]);
    },
  );

  it('close() with nothing playing writes nothing (the lines are idle already)', () => {
    const t = setup();
    const signals = new ReaderSignals({ led: line(LED, 0) }, t.deps);
    t.gpio.take();
    signals.close();
    expect(t.gpio.take()).toEqual([]);
  });

  it('a write that throws never reaches the caller: logged once per run of failures, the pattern goes on, recovery logged', () => {
    const t = setup();
    const signals = new ReaderSignals({ led: line(LED, 0, { deny: [200, 100, 200] }), buzzer: line(BUZZER, 0, { deny: [100] }) }, t.deps);
    t.gpio.take();
    t.gpio.failing.add(LED);
    expect(() => signals.play('deny')).not.toThrow();
    expect(() => t.time.advance(150)).not.toThrow();
    expect(() => signals.play('deny')).not.toThrow();
    expect(() => t.time.advance(10_000)).not.toThrow();
    // The buzzer is not held back by the LED's failures.
    expect(t.gpio.take()).toEqual([`0 ${BUZZER}=0`, `100 ${BUZZER}=1`, `150 ${BUZZER}=0`, `250 ${BUZZER}=1`]);
    const warnings = () => t.logs.filter((l) => l.level === 40);
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatchObject({ pin: LED, line: 'led', err: { message: expect.stringContaining('EIO') } });
    expect(t.time.pendingCount).toBe(0);

    t.gpio.failing.delete(LED);
    signals.play('grant');
    // The level was unknown after the failures: written again even though the last level asked for was the same.
    t.time.advance(10_000);
    expect(t.gpio.take()).toEqual([`10150 ${LED}=0`, `10150 ${BUZZER}=0`, `11150 ${LED}=1`, `11150 ${BUZZER}=1`]);
    expect(t.logs.filter((l) => l.level === 30 && l.pin === LED)).toHaveLength(1);

    t.gpio.failing.add(LED);
    signals.play('deny');
    expect(warnings()).toHaveLength(2);
    expect(() => signals.close()).not.toThrow();
    expect(t.time.pendingCount).toBe(0);
  });

  it('drives the simulated GPIO tree: the value file idles at the inactive level, shows the pattern and returns to idle', () => {
    const tmp = tempDir('door-agent-feedback-');
    const gpio = new SimulatedGpio(join(tmp.path, 'gpio'));
    try {
      const time = new ManualTime({ mono: 0 });
      const value = () => readFileSync(join(tmp.path, 'gpio', `gpio${LED}`, 'value'), 'utf8');
      const signals = new ReaderSignals({ led: line(LED, 0, { deny: [200, 100, 200] }) }, { gpio, timers: time, logger: pino({ level: 'silent' }) });
      expect(value()).toBe('1\n');
      signals.play('deny');
      expect(value()).toBe('0\n');
      time.advance(200);
      expect(value()).toBe('1\n');
      time.advance(100);
      expect(value()).toBe('0\n');
      time.advance(200);
      expect(value()).toBe('1\n');
      signals.play('grant');
      expect(value()).toBe('0\n');
      signals.close();
      expect(value()).toBe('1\n');
    } finally {
      gpio.close();
      tmp.cleanup();
    }
  });
});

describe('readerFeedback', () => {
  it('is null when the reader has neither lines nor replies (or is OSDP, which shows feedback over its bus)', () => {
    const t = setup();
    const serial = { send: () => true };
    expect(readerFeedback({ ...door({ type: 'wiegand', d0: 5, d1: 6 }), reader: undefined }, t.deps)).toBeNull();
    expect(readerFeedback(door({ type: 'wiegand', d0: 5, d1: 6 }), t.deps)).toBeNull();
    expect(readerFeedback(door({ type: 'serial', path: '/dev/ttyUSB0' }), { ...t.deps, serial })).toBeNull();
    expect(readerFeedback(door({ type: 'keyboard', path: '/dev/input/event0' }), t.deps)).toBeNull();
    expect(readerFeedback(door({ type: 'osdp', path: '/dev/ttyUSB0', address: 1 }), { ...t.deps, serial })).toBeNull();
    // Replies without the reader to send them through.
    expect(readerFeedback(door({ type: 'serial', path: '/dev/ttyUSB0', replies: { grant: 'OK\r\n' } }), t.deps)).toBeNull();
    expect(t.gpio.take()).toEqual([]);
  });

  it("plays the default patterns of a Wiegand reader's LED and buzzer (active low); a lockout plays the deny pattern", () => {
    const t = setup();
    const feedback = readerFeedback(door({ type: 'wiegand', d0: 5, d1: 6, led: { pin: LED }, buzzer: { pin: BUZZER } }), t.deps);
    expect(feedback).not.toBeNull();
    expect(t.gpio.take()).toEqual([`open ${LED}=1`, `open ${BUZZER}=1`]);

    /** On/off durations of `pin` as played from a signal at time 0, ended by the idle level. */
    const durations = (pin: number, log: string[]) => {
      const times = log.filter((l) => l.endsWith(` ${pin}=0`) || l.endsWith(` ${pin}=1`)).map((l) => Number(l.split(' ')[0]));
      return times.slice(1).map((at, i) => at - times[i]!);
    };
    const play = (kind: FeedbackKind) => {
      const start = t.time.now;
      feedback!.signal(kind);
      t.time.advance(30_000);
      const log = t.gpio.take().map((l) => `${Number(l.split(' ')[0]) - start} ${l.split(' ')[1]}`);
      expect(t.gpio.levels.get(LED)).toBe(1);
      expect(t.gpio.levels.get(BUZZER)).toBe(1);
      return log;
    };
    // An even-length pattern's last off step is not a change, so it does not show in the writes.
    const shown = (pattern: number[]) => (pattern.length % 2 === 0 ? pattern.slice(0, -1) : pattern);
    for (const kind of ['grant', 'deny', 'lockdown'] as const) {
      const log = play(kind);
      expect(durations(LED, log)).toEqual(shown(LED_PATTERNS[kind]));
      expect(durations(BUZZER, log)).toEqual(shown(BUZZER_PATTERNS[kind]));
    }
    const log = play('lockedOut');
    expect(durations(LED, log)).toEqual(shown(LED_PATTERNS.deny));
    expect(durations(BUZZER, log)).toEqual(shown(BUZZER_PATTERNS.deny));
    feedback!.close();
    expect(t.time.pendingCount).toBe(0);
  });

  it('a serial reader gets its reply line; a lockout or a lockdown without a reply of its own gets the deny reply', () => {
    const t = setup();
    const sent: string[] = [];
    const serial = { send: (text: string) => (sent.push(text), true) };
    const feedback = readerFeedback(door({ type: 'serial', path: '/dev/ttyUSB0', replies: { grant: 'OK\r\n', deny: 'NO\r\n', lockdown: 'LOCK\r\n' } }), {
      ...t.deps,
      serial,
    })!;
    expect(t.gpio.take()).toEqual([]);
    feedback.signal('grant');
    feedback.signal('deny');
    feedback.signal('lockedOut');
    feedback.signal('lockdown');
    expect(sent).toEqual(['OK\r\n', 'NO\r\n', 'NO\r\n', 'LOCK\r\n']);
    feedback.close();
  });

  it('an outcome without a reply sends nothing; lines and replies go together; a send that throws does not reach the caller', () => {
    const t = setup();
    const sent: string[] = [];
    let throwing = false;
    const serial = {
      send: (text: string) => {
        if (throwing) throw new Error('port gone');
        sent.push(text);
        return true;
      },
    };
    const feedback = readerFeedback(door({ type: 'serial', path: '/dev/ttyUSB0', led: { pin: LED, activeLevel: 1 }, replies: { grant: 'OK\r\n' } }), {
      ...t.deps,
      serial,
    })!;
    expect(t.gpio.take()).toEqual([`open ${LED}=0`]);
    feedback.signal('deny');
    expect(sent).toEqual([]);
    expect(t.gpio.take()).toEqual([`0 ${LED}=1`]);
    feedback.signal('grant');
    expect(sent).toEqual(['OK\r\n']);
    throwing = true;
    expect(() => feedback.signal('grant')).not.toThrow();
    feedback.close();
    expect(t.gpio.levels.get(LED)).toBe(0);
  });
});

describe('OSDP feedback commands', () => {
  it('every outcome has its own LED and buzzer commands; lockdown flashes red slowly for 3 s with three spaced beeps', () => {
    const kinds: FeedbackKind[] = ['grant', 'deny', 'lockedOut', 'lockdown'];
    const commands = kinds.map((kind) => feedbackCommands(kind));
    for (const c of commands) expect(c.map((x) => x.code)).toEqual([CMD.LED, CMD.BUZ]);
    const distinct = new Set(commands.map((c) => c.map((x) => x.data.toString('hex')).join('/')));
    expect(distinct.size).toBe(4);
    const [led, buz] = feedbackCommands('lockdown');
    // Temporary: on 0.5 s, off 0.5 s, red on, black off, timer 30 x 100 ms; permanent untouched.
    expect([...led!.data]).toEqual([0, 0, 0x02, 5, 5, 1, 0, 30, 0, 0x00, 0, 0, 0, 0]);
    // Default tone, 0.1 s on, 0.4 s off, three times.
    expect([...buz!.data]).toEqual([0, 0x02, 1, 4, 3]);
  });
});
