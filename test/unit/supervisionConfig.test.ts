import { describe, expect, it } from 'vitest';
import { configHash } from '../../src/config/configHash.js';
import { parseConfig } from '../../src/config/load.js';
import { configProblems } from '../support/configProblems.js';

// Issue 30 items 2 and 3: access.maxCacheAgeHours and the power section, every mistake named by its key.
const UUID = '6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d';
const SERVICE = 'service: { baseUrl: "https://access.example.org", apiKeyFile: /etc/door-agent/api-key }';

function config(opts: { access?: string; extra?: string; door?: string; gpio?: string } = {}): string {
  return `agent: { id: t1, dataDir: /tmp/door-agent-sup, timezone: Europe/Berlin }
access: { groups: [Staff]${opts.access ? `, ${opts.access}` : ''} }
${opts.gpio ?? 'gpio: { driver: chardev }'}
${opts.extra ?? ''}
doors:
  - uuid: ${UUID}
    resourceId: 12
    relay: { pin: 17 }
    contact: { pin: 27 }
${opts.door ?? ''}`;
}

describe('access.maxCacheAgeHours', () => {
  it('off when absent; a positive number of hours (fractions too) with a service section', () => {
    expect(parseConfig(config({ extra: SERVICE }), 't').access.maxCacheAgeHours).toBeUndefined();
    expect(parseConfig(config({ access: 'maxCacheAgeHours: 72', extra: SERVICE }), 't').access.maxCacheAgeHours).toBe(72);
    expect(parseConfig(config({ access: 'maxCacheAgeHours: 0.5', extra: SERVICE }), 't').access.maxCacheAgeHours).toBe(0.5);
  });

  it('0 or negative is an error naming the key', () => {
    for (const bad of ['0', '-1', '-0.5']) {
      expect(configProblems(config({ access: `maxCacheAgeHours: ${bad}`, extra: SERVICE }))).toEqual([
        'access.maxCacheAgeHours: must be a positive number of hours (leave it out for no limit)',
      ]);
    }
    expect(configProblems(config({ access: 'maxCacheAgeHours: "24"', extra: SERVICE }))[0]).toMatch(/^access\.maxCacheAgeHours: /);
  });

  it('without a service section there is no sync to measure from: an error naming the key', () => {
    expect(configProblems(config({ access: 'maxCacheAgeHours: 24' }))).toEqual([
      'access.maxCacheAgeHours: needs a service section: the age is measured from the last successful sync (an imported cache is never synced)',
    ]);
  });
});

describe('power', () => {
  it('mains and battery pins with their defaults; either alone', () => {
    const parsed = parseConfig(config({ extra: 'power: { mainsPin: 5, batteryLowPin: 6 }' }), 't');
    expect(parsed.power).toEqual({ mainsPin: 5, mainsPresentLevel: 1, batteryLowPin: 6, batteryLowLevel: 1, debounceMs: 1000, pull: 'none' });
    expect(parseConfig(config({ extra: 'power: { batteryLowPin: 6, batteryLowLevel: 0, pull: up }' }), 't').power).toMatchObject({ batteryLowPin: 6 });
    expect(parseConfig(config(), 't').power).toBeUndefined();
  });

  it('a pin shared with a relay, a door input or the other power pin is an error naming the key', () => {
    expect(configProblems(config({ extra: 'power: { mainsPin: 17 }' }))).toEqual(['power.mainsPin: GPIO 17 is already used by doors[0].relay.pin']);
    expect(configProblems(config({ extra: 'power: { batteryLowPin: 27 }' }))).toEqual(['power.batteryLowPin: GPIO 27 is already used by doors[0].contact.pin']);
    expect(configProblems(config({ extra: 'power: { mainsPin: 5, batteryLowPin: 5 }' }))).toEqual([
      'power.batteryLowPin: GPIO 5 is already used by power.mainsPin',
    ]);
    expect(configProblems(config({ extra: 'power: { mainsPin: 23 }', door: '    tamper: { pin: 23 }\n' }))).toEqual([
      'power.mainsPin: GPIO 23 is already used by doors[0].tamper.pin',
    ]);
  });

  it('a shared pin is reported together with a problem elsewhere in the file', () => {
    const text = `${config({ extra: 'power: { mainsPin: 17 }' }).replace('id: t1', 'id: "not valid!"')}  - { uuid: not-a-uuid, resourceId: 13, relay: { pin: 18 } }\n`;
    expect(configProblems(text)).toEqual([
      'agent.id: must be 1-64 letters, digits, "-" or "_"',
      'doors[1].uuid: must be the door resource UUID',
      'power.mainsPin: GPIO 17 is already used by doors[0].relay.pin',
    ]);
  });

  it('no pin at all, a bad level, a pull sysfs cannot set: errors naming the key', () => {
    expect(configProblems(config({ extra: 'power: { debounceMs: 500 }' }))).toEqual(['power: set mainsPin, batteryLowPin or both']);
    expect(configProblems(config({ extra: 'power: { mainsPin: 5, mainsPresentLevel: 2 }' }))).toEqual(['power.mainsPresentLevel: expected 0 or 1']);
    expect(configProblems(config({ extra: 'power: { mainsPin: 5, pull: up }', gpio: 'gpio: { driver: onoff }' }))).toEqual([
      'power.pull: gpio.driver onoff (sysfs) cannot set a pull-up: use gpio.driver: chardev, or pull: none with a resistor',
    ]);
  });
});

describe('configHash (config_changed)', () => {
  const withSecrets = (password: string, keyFile: string) =>
    config({
      extra: `service: { baseUrl: "https://door:${password}@access.example.org", apiKeyFile: ${keyFile} }
mqtt: { url: "mqtts://door:${password}@broker.lan:8883", passwordFile: /etc/door-agent/mqtt-password, commandSecretFile: /etc/door-agent/command-secret }`,
    });

  it('hashes the normalized configuration: the same file, the same hash; another setting, another hash', () => {
    const a = configHash(parseConfig(config({ extra: SERVICE }), 't'));
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(configHash(parseConfig(config({ extra: SERVICE }), 't'))).toBe(a);
    // Defaults applied: spelling a default out is the same configuration.
    expect(configHash(parseConfig(config({ extra: SERVICE, door: '    unlockSeconds: 5\n' }), 't'))).toBe(a);
    expect(configHash(parseConfig(config({ extra: SERVICE, door: '    unlockSeconds: 6\n' }), 't'))).not.toBe(a);
  });

  it('never covers a secret: a password in a URL is left out; secret files by path only', () => {
    const one = configHash(parseConfig(withSecrets('s3cret-one', '/etc/door-agent/api-key'), 't'));
    expect(configHash(parseConfig(withSecrets('other-pass', '/etc/door-agent/api-key'), 't'))).toBe(one);
    expect(configHash(parseConfig(withSecrets('s3cret-one', '/etc/door-agent/api-key-2'), 't'))).not.toBe(one);
  });
});
