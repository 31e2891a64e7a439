import { describe, expect, it } from 'vitest';
import { configProblems } from '../support/configProblems.js';

// Issue 53 item 6: one pass names every problem of a file (run and config check load it the same way), in the
// project's own words: the value given and what was wrong with it, never zod's "expected number, received string".
const FRONT = '6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d';
const BACK = '0b7a1e55-3c2d-4e8f-9a10-22334455aabb';
const SIDE = '11111111-2222-4333-8444-555555555555';

function config(doors: string, extra = ''): string {
  return `agent: { id: t1, dataDir: /tmp/door-agent-at-once, timezone: Europe/Berlin }
access: { groups: [Staff] }
gpio: { driver: chardev }
${extra}
doors:
${doors}
`;
}

describe('config problems: every one at once', () => {
  it('a key of the wrong type does not hide its door pin clash (the example of issue 53)', () => {
    const text = config(`  - { uuid: ${FRONT}, resourceId: twelve, relay: { pin: 17 }, contact: { pin: 17 } }`);
    expect(configProblems(text)).toEqual([
      'doors[0].contact.pin: GPIO 17 is already used by doors[0].relay.pin',
      `doors[0].resourceId: "twelve" is not a whole number (the service's resource id of this door, e.g. 12)`,
    ]);
  });

  it('sorted by key path, doors by their number, each problem once', () => {
    const doors = Array.from(
      { length: 11 },
      (_, i) => `  - { uuid: ${FRONT.slice(0, -2)}${String(i).padStart(2, '0')}, resourceId: ${i}, relay: { pin: ${i} } }`,
    );
    doors[10] = `  - { uuid: ${FRONT.slice(0, -2)}10, resourceId: 10, relay: { pin: 70 }, unlockSeconds: 0 }`;
    doors[2] = `  - { uuid: ${FRONT.slice(0, -2)}02, resourceId: 2, relay: { pin: 70 } }`;
    const problems = configProblems(config(doors.join('\n')).replace('id: t1', 'id: "t 1"'));
    expect(problems).toEqual([
      'agent.id: must be 1-64 letters, digits, "-" or "_"',
      'doors[2].relay.pin: 70 is too large: at most 63 (a BCM GPIO number, 0-63)',
      // Not also "GPIO 70 is already used by doors[2].relay.pin": a pin out of range is said once, as such.
      'doors[10].relay.pin: 70 is too large: at most 63 (a BCM GPIO number, 0-63)',
      'doors[10].unlockSeconds: 0 is too small: at least 1 (how long a granted card unlocks the door)',
    ]);
    expect(new Set(problems).size).toBe(problems.length);
  });

  it('a door that is not a section at all: the clash between two other doors is still named', () => {
    const text = config(`  - 5
  - { uuid: ${BACK}, resourceId: 13, relay: { pin: 18 } }
  - { uuid: ${SIDE}, resourceId: 14, relay: { pin: 18 } }`);
    expect(configProblems(text)).toEqual(['doors[0]: 5 is not a section of keys', 'doors[2].relay.pin: GPIO 18 is already used by doors[1].relay.pin']);
  });

  it('what an unreadable key would wrongly cause is left out: a door named by a name that is not text', () => {
    const text = config(
      `  - { uuid: ${FRONT}, resourceId: 12, name: [Front door], relay: { pin: 17 } }
  - { uuid: ${BACK}, resourceId: 13, relay: { pin: 17 } }`,
      'emergency: { pin: 26, doors: [Front door] }',
    );
    expect(configProblems(text)).toEqual([
      'doors[0].name: ["Front door"] is not text (how logs, MQTT and Home Assistant name the door; default: Door <resourceId>)',
      'doors[1].relay.pin: GPIO 17 is already used by doors[0].relay.pin',
    ]);
  });

  it('in the project voice for every kind of mistake: wrong type, range, choice, form, missing, unknown', () => {
    const text = `agent: { id: t1, maxEvents: 5, logLevel: loud, rtc: yes }
access: { groups: [Staff], minCardDigits: 6.5, pinLabels: [] }
gpio: { driver: gpiod }
service: { baseUrl: "http://127.0.0.1:1", syncIntervalSeconds: "often" }
metrics:
doors:
  - { uuid: not-a-uuid, relay: { pin: -1 }, failMode: sometimes, name: 123, colour: red, reader: { type: wiegand, d0: 5 } }
`;
    expect(configProblems(text)).toEqual([
      'access.minCardDigits: 6.5 is not a whole number',
      'access.pinLabels: is an empty list: give at least one',
      'agent.logLevel: "loud" is not one of fatal, error, warn, info, debug, trace',
      'agent.maxEvents: 5 is too small: at least 1000',
      'agent.rtc: "yes" is not true or false: write true or false',
      'doors[0].colour: unknown key',
      'doors[0].failMode: "sometimes" is not one of secure, safe (secure: energize to unlock, a strike; safe: energize to lock, a maglock)',
      'doors[0].name: 123 is not text: put it in quotes, "123" (how logs, MQTT and Home Assistant name the door; default: Door <resourceId>)',
      'doors[0].reader.d1: required: a whole number (a BCM GPIO number, 0-63)',
      'doors[0].relay.pin: -1 is too small: at least 0 (a BCM GPIO number, 0-63)',
      `doors[0].resourceId: required: a whole number (the service's resource id of this door, e.g. 12)`,
      'doors[0].uuid: must be the door resource UUID',
      'gpio.driver: "gpiod" is not one of chardev, onoff, simulated',
      'metrics: is empty: it takes a section of keys',
      'service.syncIntervalSeconds: "often" is not a whole number',
    ]);
  });
});
