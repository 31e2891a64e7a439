import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { configProblems } from '../support/configProblems.js';

// The configuration of the door operations (issue 14): every mistake named by its key path.
const UUID = '6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d';

function config(access: string, door: string, gpio = 'gpio: { driver: simulated, simulatedDir: /tmp/x }'): string {
  return `agent: { id: t1, dataDir: /tmp/door-agent-ops, timezone: Europe/Berlin }
access: ${access}
${gpio}
doors:
  - uuid: ${UUID}
    resourceId: 12
    relay: { pin: 17 }
${door}`;
}

const problems = configProblems;

const WEEKDAYS = '[[], [[8, 18]], [[8, 18]], [[8, 18]], [[8, 18]], [[8, 17]], []]';

describe('door operations configuration', () => {
  it('accepts every key of issue 14 with its defaults', () => {
    const parsed = parseConfig(
      config(
        '{ groups: [Staff], responders: { groups: [Security] }, holidays: [2026-12-25, "2026-12-26"], duressPin: lastDigitPlusOne }',
        `    unlockSchedule: ${WEEKDAYS}
    firstPersonIn: { groups: [Managers] }
    tamper: { pin: 23 }
    reader: { path: /dev/ttyUSB0, replies: { grant: "OK\\r\\n", deny: "DENY\\r\\n" }, led: { pin: 24 }, buzzer: { pin: 25, activeLevel: 1, patterns: { grant: [] } } }
`,
      ),
      'test.yaml',
    );
    expect(parsed.access).toMatchObject({
      responders: { groups: ['Security'], policies: [] },
      holidays: ['2026-12-25', '2026-12-26'],
      duressPin: 'lastDigitPlusOne',
    });
    const door = parsed.doors[0]!;
    expect(door.unlockSchedule?.[1]).toEqual([[8, 18]]);
    expect(door.firstPersonIn).toEqual({ groups: ['Managers'], policies: [] });
    expect(door.tamper).toEqual({ pin: 23, activeLevel: 1, debounceMs: 50, pull: 'none' });
    const reader = door.reader as unknown as {
      replies: unknown;
      led: { activeLevel: number; patterns: Record<string, number[]> };
      buzzer: { patterns: Record<string, number[]> };
    };
    expect(reader.replies).toEqual({ grant: 'OK\r\n', deny: 'DENY\r\n' });
    expect(reader.led.activeLevel).toBe(0);
    // A lockout is a refusal: the deny pattern unless one is given; an empty pattern keeps the line off.
    expect(reader.led.patterns.lockedOut).toEqual(reader.led.patterns.deny);
    expect(reader.buzzer.patterns.grant).toEqual([]);
  });

  it('defaults: no duress PIN, no holidays, no responders', () => {
    const parsed = parseConfig(config('{ groups: [Staff] }', ''), 'test.yaml');
    expect(parsed.access).toMatchObject({ holidays: [], duressPin: 'off' });
    expect(parsed.access.responders).toBeUndefined();
  });

  it('access.minCardDigits: 6 by default, a whole number from 1 (off) to 20, named when wrong', () => {
    expect(parseConfig(config('{ groups: [Staff] }', ''), 'test.yaml').access.minCardDigits).toBe(6);
    expect(parseConfig(config('{ groups: [Staff], minCardDigits: 1 }', ''), 'test.yaml').access.minCardDigits).toBe(1);
    expect(problems(config('{ groups: [Staff], minCardDigits: 0 }', ''))[0]).toMatch(/^access\.minCardDigits: /);
    expect(problems(config('{ groups: [Staff], minCardDigits: 4.5 }', ''))[0]).toMatch(/^access\.minCardDigits: /);
  });

  it('names a bad holiday, duress rule or responder list', () => {
    expect(problems(config('{ groups: [Staff], holidays: [2026-02-30, 2026-13-01, "Christmas"] }', ''))).toEqual([
      'access.holidays[0]: expected a date YYYY-MM-DD',
      'access.holidays[1]: expected a date YYYY-MM-DD',
      'access.holidays[2]: expected a date YYYY-MM-DD',
    ]);
    expect(problems(config('{ groups: [Staff], duressPin: reverse }', ''))[0]).toMatch(
      /^access\.duressPin: "reverse" is not one of off, lastDigitPlusOne, lastDigitMinusOne/,
    );
    expect(problems(config('{ groups: [Staff], responders: {} }', ''))).toEqual(['access.responders: list at least one group or policy']);
  });

  it('names a malformed schedule, first-person-in without one, and a maxUnlockSeconds that would cut it', () => {
    expect(problems(config('{ groups: [Staff] }', '    unlockSchedule: [[[8, 18]]]\n'))).toEqual([
      'doors[0].unlockSchedule: expected exactly 7 elements, one per weekday starting on Sunday',
    ]);
    expect(problems(config('{ groups: [Staff] }', '    unlockSchedule: [[], [[18, 8]], [], [], [], [], []]\n'))).toEqual([
      'doors[0].unlockSchedule[1][0]: a range [start, end] needs start < end',
    ]);
    expect(problems(config('{ groups: [Staff] }', '    firstPersonIn: { groups: [Managers] }\n'))).toEqual([
      'doors[0].firstPersonIn: needs an unlockSchedule: first-person-in delays the start of its hours',
    ]);
    expect(problems(config('{ groups: [Staff] }', `    unlockSchedule: ${WEEKDAYS}\n    maxUnlockSeconds: 3600\n`))).toEqual([
      'doors[0].maxUnlockSeconds: would cut the unlockSchedule, which holds the door unlocked for up to 10 h in a row: raise it to 36000 or more, or set 0',
    ]);
    expect(problems(config('{ groups: [Staff] }', `    unlockSchedule: ${WEEKDAYS}\n    maxUnlockSeconds: 36000\n`))).toEqual([]);
  });

  it('names tamper, LED and buzzer pins that another input or output already uses', () => {
    const text = config(
      '{ groups: [Staff] }',
      `    contact: { pin: 27 }
    tamper: { pin: 27 }
    reader: { type: wiegand, d0: 5, d1: 6, led: { pin: 17 }, buzzer: { pin: 6 } }
`,
      'gpio: { driver: chardev }',
    );
    expect(problems(text)).toEqual([
      'doors[0].reader.buzzer.pin: GPIO 6 is already used by doors[0].reader.d1',
      'doors[0].reader.led.pin: GPIO 17 is already used by doors[0].relay.pin',
      'doors[0].tamper.pin: GPIO 27 is already used by doors[0].contact.pin',
    ]);
  });

  it('refuses replies on a reader that cannot take them, and LED lines on an OSDP reader (its own bus drives them)', () => {
    expect(
      problems(config('{ groups: [Staff] }', '    reader: { type: wiegand, d0: 5, d1: 6, replies: { grant: "OK" } }\n', 'gpio: { driver: chardev }')),
    ).toEqual(['doors[0].reader.replies: unknown key']);
    expect(problems(config('{ groups: [Staff] }', '    reader: { type: osdp, path: /dev/ttyUSB0, address: 1, led: { pin: 24 } }\n'))).toEqual([
      'doors[0].reader.led: unknown key',
    ]);
    expect(problems(config('{ groups: [Staff] }', '    reader: { path: /dev/ttyUSB0, replies: { grant: "\\u0007" } }\n'))[0]).toMatch(
      /^doors\[0\]\.reader\.replies\.grant: /,
    );
    expect(problems(config('{ groups: [Staff] }', '    reader: { path: /dev/ttyUSB0, led: { pin: 24, patterns: { deny: [5] } } }\n'))).toEqual([
      'doors[0].reader.led.patterns.deny[0]: at least 10 ms',
    ]);
  });

  it('on sysfs (onoff) a tamper input cannot have a pull', () => {
    expect(problems(config('{ groups: [Staff] }', '    tamper: { pin: 23, pull: up }\n', 'gpio: { driver: onoff }'))).toEqual([
      'doors[0].tamper.pull: gpio.driver onoff (sysfs) cannot set a pull-up: use gpio.driver: chardev, or pull: none with a resistor',
    ]);
  });
});
