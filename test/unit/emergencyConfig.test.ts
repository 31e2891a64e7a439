import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { configProblems } from '../support/configProblems.js';

// The emergency (fire alarm) input's configuration: defaults for the documented wiring, every mistake named by its key.
const FRONT = '6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d';
const VAULT = '0b7a1e55-3c2d-4e8f-9a10-22334455aabb';

function config(emergency: string, gpio = 'gpio: { driver: chardev }'): string {
  return `agent: { id: t1, dataDir: /tmp/door-agent-emergency, timezone: Europe/Berlin }
access: { groups: [Staff] }
${gpio}
doors:
  - uuid: ${FRONT}
    resourceId: 12
    name: Front door
    relay: { pin: 17 }
    contact: { pin: 27 }
    exitButton: { pin: 22 }
  - uuid: ${VAULT.toUpperCase()}
    resourceId: 13
    name: Vault
    relay: { pin: 18 }
    reader: { type: wiegand, d0: 5, d1: 6, led: { pin: 24 } }
${emergency}
`;
}

describe('emergency configuration', () => {
  it('defaults fit a normally-closed loop to GND on the pin with its pull-up: open = 1 = alarm, every door released', () => {
    const parsed = parseConfig(config('emergency: { pin: 26 }'), 'test.yaml');
    expect(parsed.emergency).toEqual({ pin: 26, confirmPin: null, activeLevel: 1, pull: 'up', debounceMs: 50 });
    expect(parsed.doors.map((d) => d.emergencyRelease)).toEqual([true, true]);
  });

  it('doors by name, uuid (any case) or resourceId; a door left out is not released', () => {
    expect(parseConfig(config('emergency: { pin: 26, confirmPin: 19, doors: [Front door] }'), 't').doors.map((d) => d.emergencyRelease)).toEqual([true, false]);
    expect(parseConfig(config(`emergency: { pin: 26, doors: ["${VAULT}"] }`), 't').doors.map((d) => d.emergencyRelease)).toEqual([false, true]);
    expect(parseConfig(config('emergency: { pin: 26, doors: [12, "13"] }'), 't').doors.map((d) => d.emergencyRelease)).toEqual([true, true]);
    expect(parseConfig(config('emergency: { pin: 26, confirmPin: 19 }'), 't').emergency?.confirmPin).toBe(19);
  });

  it('without an emergency section the doors carry no flag', () => {
    const parsed = parseConfig(config(''), 'test.yaml');
    expect(parsed.emergency).toBeUndefined();
    expect(parsed.doors[0]!.emergencyRelease).toBeUndefined();
  });

  it('an unknown door is an error naming its index', () => {
    expect(configProblems(config('emergency: { pin: 26, doors: [Front door, Cash room] }'))).toEqual([
      'emergency.doors[1]: "Cash room" is not a door of this agent (doors: Front door / 12, Vault / 13)',
    ]);
    expect(configProblems(config('emergency: { pin: 26, doors: [] }'))).toEqual(['emergency.doors: list at least one door, or leave doors out for every door']);
  });

  it('a pin shared with a relay, a contact, an exit button or a reader line of any door is an error', () => {
    expect(configProblems(config('emergency: { pin: 17 }'))).toEqual(['emergency.pin: GPIO 17 is already used by doors[0].relay.pin']);
    expect(configProblems(config('emergency: { pin: 27 }'))).toEqual(['emergency.pin: GPIO 27 is already used by doors[0].contact.pin']);
    expect(configProblems(config('emergency: { pin: 22 }'))).toEqual(['emergency.pin: GPIO 22 is already used by doors[0].exitButton.pin']);
    expect(configProblems(config('emergency: { pin: 26, confirmPin: 18 }'))).toEqual(['emergency.confirmPin: GPIO 18 is already used by doors[1].relay.pin']);
    expect(configProblems(config('emergency: { pin: 6, confirmPin: 24 }'))).toEqual([
      'emergency.confirmPin: GPIO 24 is already used by doors[1].reader.led.pin',
      'emergency.pin: GPIO 6 is already used by doors[1].reader.d1',
    ]);
  });

  it('confirmPin on the same GPIO as pin is an error', () => {
    expect(configProblems(config('emergency: { pin: 26, confirmPin: 26 }'))).toEqual([
      "emergency.confirmPin: is emergency.pin: the confirm input is the relay's other (normally-open) contact, on a GPIO of its own",
    ]);
  });

  it('sysfs (onoff) cannot pull the loop up: pull none with a resistor, or chardev', () => {
    const onoff = 'gpio: { driver: onoff }';
    const text = config('emergency: { pin: 26 }', onoff).replace(/ {4}reader: .*\n/, '');
    expect(configProblems(text)).toEqual([
      'emergency.pull: gpio.driver onoff (sysfs) cannot set a pull-up: use gpio.driver: chardev, or pull: none with a resistor (a loop must not float when its wire is cut)',
    ]);
    expect(configProblems(config('emergency: { pin: 26, pull: none }', onoff).replace(/ {4}reader: .*\n/, ''))).toEqual([]);
  });

  it('bad values and unknown keys are named', () => {
    expect(configProblems(config('emergency: { pin: 64, activeLevel: 2, debounce: 10 }'))).toEqual([
      'emergency.activeLevel: expected 0 or 1',
      'emergency.debounce: unknown key',
      'emergency.pin: 64 is too large: at most 63 (a BCM GPIO number, 0-63)',
    ]);
  });

  it('the emergency pin clash is reported even when another part of the file is invalid', () => {
    const text = config('emergency: { pin: 17, doors: [Front door, Nowhere] }').replace('timezone: Europe/Berlin', 'timezone: Mars/Olympus');
    expect(configProblems(text)).toEqual([
      'agent.timezone: not an IANA time zone (e.g. Europe/Berlin)',
      'emergency.doors[1]: "Nowhere" is not a door of this agent (doors: Front door / 12, Vault / 13)',
      'emergency.pin: GPIO 17 is already used by doors[0].relay.pin',
    ]);
  });
});
