import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DOOR_UUID, runCli, tempDir, writeConfig } from '../support/cli.js';

const tmp = tempDir();
afterAll(tmp.cleanup);

function configFile(name: string, text: string): string {
  const path = join(tmp.path, name);
  writeFileSync(path, text);
  return path;
}

const BASE = `agent: { id: t1, dataDir: ${tmp.path}/data }
access: { groups: [Staff] }
gpio: { driver: simulated, simulatedDir: ${tmp.path}/gpio }
`;

describe('door-agent config check', () => {
  it('passes on the documented example configuration', () => {
    const r = runCli(['config', 'check', '--config', 'config/door-agent.example.yaml']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('Front door (GPIO 17, reader /dev/ttyUSB0)');
    expect(r.stdout).toContain('time zone Europe/Berlin');
  });

  it('reads the path from DOOR_AGENT_CONFIG when --config is absent', () => {
    const r = runCli(['config', 'check'], { env: { DOOR_AGENT_CONFIG: writeConfig(tmp.path) } });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('config.yaml: ok');
  });

  it('names a missing file, how to fix it, and exits 78', () => {
    const missing = join(tmp.path, 'nope.yaml');
    const r = runCli(['config', 'check', '--config', missing]);
    expect(r.status).toBe(78);
    expect(r.stderr).toContain(`cannot read configuration ${missing}: no such file`);
    expect(r.stderr).toContain('door-agent.example.yaml');
  });

  it('reports an unreadable path (a directory) with exit 78', () => {
    const dir = join(tmp.path, 'a-dir.yaml');
    mkdirSync(dir);
    const r = runCli(['config', 'check', '--config', dir]);
    expect(r.status).toBe(78);
    expect(r.stderr).toContain('is a directory');
  });

  it('lists every problem with its key path: unknown keys, missing relay pin, wrong types', () => {
    const path = configFile(
      'bad.yaml',
      `${BASE}colour: blue
doors:
  - uuid: ${DOOR_UUID}
    resourceId: 12
    relay: { activeLow: true }
    unlockSecs: 5
  - uuid: not-a-uuid
    resourceId: "13"
    relay: { pin: 4.5 }
    failMode: sideways
`,
    );
    const r = runCli(['config', 'check', '--config', path]);
    expect(r.status).toBe(78);
    const lines = r.stderr.split('\n');
    const has = (text: string) =>
      expect(
        lines.some((l) => l.includes(text)),
        `${text}\n${r.stderr}`,
      ).toBe(true);
    has('colour: unknown key');
    has('doors[0].relay.pin: required: a whole number (a BCM GPIO number, 0-63)');
    has('doors[0].unlockSecs: unknown key');
    has('doors[1].uuid: must be the door resource UUID');
    has(`doors[1].resourceId: "13" is not a whole number (the service's resource id of this door, e.g. 12)`);
    has('doors[1].relay.pin: 4.5 is not a whole number (a BCM GPIO number, 0-63)');
    has('doors[1].failMode: "sideways" is not one of secure, safe');
  });

  it('refuses a non-standard baud rate and an input level other than 0 or 1', () => {
    const path = configFile(
      'levels.yaml',
      `${BASE}doors:
  - uuid: ${DOOR_UUID}
    resourceId: 12
    relay: { pin: 17 }
    contact: { pin: 27, openLevel: 2 }
    reader: { path: /dev/ttyUSB0, baudRate: 3 }
`,
    );
    const r = runCli(['config', 'check', '--config', path]);
    expect(r.status).toBe(78);
    expect(r.stderr).toContain('doors[0].contact.openLevel: expected 0 or 1');
    expect(r.stderr).toContain('doors[0].reader.baudRate: expected one of 1200, 2400, 4800, 9600');
  });

  it('an empty DOOR_AGENT_CONFIG falls back to the default path rather than ""', () => {
    const r = runCli(['config', 'check'], { env: { DOOR_AGENT_CONFIG: '' } });
    expect(r.status).toBe(78);
    expect(r.stderr).toContain('cannot read configuration /etc/door-agent/config.yaml');
  });

  it('defaults the time zone to the system zone and says which', () => {
    const path = configFile('notz.yaml', `${BASE}doors: [ { uuid: ${DOOR_UUID}, resourceId: 12, relay: { pin: 17 } } ]\n`);
    const r = runCli(['config', 'check', '--config', path], { env: { TZ: 'America/New_York' } });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('time zone America/New_York');
  });

  it('refuses two doors on one GPIO pin, naming both', () => {
    const path = configFile(
      'dup.yaml',
      `${BASE}doors:
  - { uuid: ${DOOR_UUID}, resourceId: 12, relay: { pin: 17 } }
  - { uuid: 0b7a1e55-3c2d-4e8f-9a10-22334455aabb, resourceId: 13, relay: { pin: 18 }, contact: { pin: 17 } }
`,
    );
    const r = runCli(['config', 'check', '--config', path]);
    expect(r.status).toBe(78);
    expect(r.stderr).toContain('doors[1].contact.pin: GPIO 17 is already used by doors[0].relay.pin');
  });

  it('Wiegand readers and pulls: each mistake named by its key', () => {
    const onoff = configFile(
      'wiegand-onoff.yaml',
      `agent: { id: t1, dataDir: ${tmp.path}/data }
access: { groups: [Staff] }
gpio: { driver: onoff }
doors:
  - uuid: ${DOOR_UUID}
    resourceId: 12
    relay: { pin: 17 }
    contact: { pin: 27, pull: up }
    reader: { type: wiegand, d0: 5, d1: 6 }
`,
    );
    const a = runCli(['config', 'check', '--config', onoff]);
    expect(a.status).toBe(78);
    expect(a.stderr).toContain('doors[0].reader.type: a Wiegand reader needs gpio.driver: chardev');
    expect(a.stderr).toContain('doors[0].contact.pull: gpio.driver onoff (sysfs) cannot set a pull-up');
    const clash = configFile(
      'wiegand-clash.yaml',
      `${BASE}doors:
  - uuid: ${DOOR_UUID}
    resourceId: 12
    relay: { pin: 17 }
    reader: { type: wiegand, d0: 17, d1: 17, format: 32, numbering: hex, pull: sideways }
`,
    );
    const b = runCli(['config', 'check', '--config', clash]);
    expect(b.status).toBe(78);
    expect(b.stderr).toContain('doors[0].reader.format: expected auto, a format name (H10301, C1k35, ...) or a list of names');
    expect(b.stderr).toContain('doors[0].reader.numbering');
    expect(b.stderr).toContain('doors[0].reader.pull');
    const pins = configFile(
      'wiegand-pins.yaml',
      `${BASE}doors:
  - uuid: ${DOOR_UUID}
    resourceId: 12
    relay: { pin: 17 }
    reader: { type: wiegand, d0: 17, d1: 17 }
`,
    );
    const c = runCli(['config', 'check', '--config', pins]);
    expect(c.stderr).toContain('doors[0].reader.d0: GPIO 17 is already used by doors[0].relay.pin');
    expect(c.stderr).toContain('doors[0].reader.d1: GPIO 17 is already used by doors[0].relay.pin');
    const ambiguous = configFile(
      'wiegand-37.yaml',
      `${BASE}doors:\n  - { uuid: ${DOOR_UUID}, resourceId: 12, relay: { pin: 17 }, reader: { type: wiegand, d0: 5, d1: 6, numbering: facility_card } }\n`,
    );
    // With format auto a 37-bit card (19-bit card field) would map two cards to one number.
    expect(runCli(['config', 'check', '--config', ambiguous]).stderr).toContain(
      'doors[0].reader.numbering: facility_card (facility * 65536 + card) is exact only for a card field of 16 bits or fewer, and the reader takes C1k35',
    );
    const rdm = configFile(
      'rdm-hex.yaml',
      `${BASE}doors:\n  - { uuid: ${DOOR_UUID}, resourceId: 12, relay: { pin: 17 }, reader: { path: /dev/serial0, format: rdm6300, cardFormat: hex, numbering: half } }\n`,
    );
    const rdmCheck = runCli(['config', 'check', '--config', rdm]).stderr;
    expect(rdmCheck).toContain('doors[0].reader.numbering: "half" is not one of last32, whole');
    const rdmHex = configFile(
      'rdm-hex2.yaml',
      `${BASE}doors:\n  - { uuid: ${DOOR_UUID}, resourceId: 12, relay: { pin: 17 }, reader: { path: /dev/serial0, format: rdm6300, cardFormat: hex } }\n`,
    );
    expect(runCli(['config', 'check', '--config', rdmHex]).stderr).toContain('doors[0].reader.cardFormat: an rdm6300 reader sends binary frames');
    const unknown = configFile('reader-type.yaml', `${BASE}doors:\n  - { uuid: ${DOOR_UUID}, resourceId: 12, relay: { pin: 17 }, reader: { type: osdp2 } }\n`);
    expect(runCli(['config', 'check', '--config', unknown]).stderr).toContain('doors[0].reader.type: expected type serial, wiegand, keyboard, osdp or pn532');
  });

  it("accepts a keyboard reader and refuses it on a path another door's reader uses", () => {
    const ok = configFile(
      'kbd.yaml',
      `${BASE}doors:\n  - { uuid: ${DOOR_UUID}, resourceId: 12, relay: { pin: 17 }, reader: { type: keyboard, path: /dev/input/by-id/usb-R-event-kbd } }\n`,
    );
    const r = runCli(['config', 'check', '--config', ok]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('reader keyboard /dev/input/by-id/usb-R-event-kbd');
    const twice = configFile(
      'kbd2.yaml',
      `${BASE}doors:\n  - { uuid: ${DOOR_UUID}, resourceId: 12, relay: { pin: 17 }, reader: { type: keyboard, path: /dev/input/event3 } }\n  - { uuid: 0b7a1e55-3c2d-4e8f-9a10-22334455aabb, resourceId: 13, relay: { pin: 18 }, reader: { path: /dev/input/event3 } }\n`,
    );
    expect(runCli(['config', 'check', '--config', twice]).stderr).toContain('doors[1].reader.path: reader /dev/input/event3 is already used by doors[0]');
  });

  it('OSDP readers: doors share a bus at one baud rate and distinct addresses; a serial reader cannot use the bus', () => {
    const second = '0b7a1e55-3c2d-4e8f-9a10-22334455aabb';
    const ok = configFile(
      'osdp-ok.yaml',
      `${BASE}doors:\n  - { uuid: ${DOOR_UUID}, resourceId: 12, relay: { pin: 17 }, reader: { type: osdp, path: /dev/ttyUSB0, address: 0 } }\n  - { uuid: ${second}, resourceId: 13, relay: { pin: 18 }, reader: { type: osdp, path: /dev/ttyUSB0, address: 1 } }\n`,
    );
    const good = runCli(['config', 'check', '--config', ok]);
    expect(good.status, good.stderr).toBe(0);
    expect(good.stdout).toContain('reader OSDP /dev/ttyUSB0 address 1 (plain) (numbering data)');
    const bad = configFile(
      'osdp-bad.yaml',
      `${BASE}doors:\n  - { uuid: ${DOOR_UUID}, resourceId: 12, relay: { pin: 17 }, reader: { type: osdp, path: /dev/ttyUSB0, address: 0 } }\n  - { uuid: ${second}, resourceId: 13, relay: { pin: 18 }, reader: { type: osdp, path: /dev/ttyUSB0, address: 0, baudRate: 115200 } }\n  - { uuid: 1b7a1e55-3c2d-4e8f-9a10-22334455aabb, resourceId: 14, relay: { pin: 19 }, reader: { path: /dev/ttyUSB0 } }\n`,
    );
    const r = runCli(['config', 'check', '--config', bad]);
    expect(r.status).toBe(78);
    expect(r.stderr).toContain('doors[1].reader.baudRate: the OSDP bus /dev/ttyUSB0 runs at 9600 for doors[0]');
    expect(r.stderr).toContain('doors[1].reader.address: OSDP address 0 on /dev/ttyUSB0 is already doors[0]');
    expect(r.stderr).toContain('doors[2].reader.path: /dev/ttyUSB0 is an OSDP bus of another door');
  });

  it('plain OSDP says so: a warning per plain reader; requireSecureChannel makes a missing key an error', () => {
    const second = '0b7a1e55-3c2d-4e8f-9a10-22334455aabb';
    const plain = configFile(
      'osdp-plain.yaml',
      `${BASE}doors:\n  - { uuid: ${DOOR_UUID}, resourceId: 12, name: Front, relay: { pin: 17 }, reader: { type: osdp, path: /dev/ttyUSB0, address: 0 } }\n  - { uuid: ${second}, resourceId: 13, name: Back, relay: { pin: 18 }, reader: { type: osdp, path: /dev/ttyUSB0, address: 1 } }\n`,
    );
    const warned = runCli(['config', 'check', '--config', plain]);
    expect(warned.status, warned.stderr).toBe(0);
    // (the device path's own warning, /dev/ttyUSB0 absent on this machine, is another line)
    const warnings = warned.stdout.split('\n').filter((l) => l.includes('WARNING: doors[') && !l.includes('.reader.path: '));
    expect(warnings).toEqual([
      '  WARNING: doors[0].reader (Front, OSDP /dev/ttyUSB0 address 0) is plain: without scbkFile a device on the bus can read and inject cards and PINs; set scbkFile (door-agent reader keyset gives the reader its key), and requireSecureChannel: true to make this an error',
      '  WARNING: doors[1].reader (Back, OSDP /dev/ttyUSB0 address 1) is plain: without scbkFile a device on the bus can read and inject cards and PINs; set scbkFile (door-agent reader keyset gives the reader its key), and requireSecureChannel: true to make this an error',
    ]);
    const required = configFile(
      'osdp-required.yaml',
      `${BASE}doors:\n  - { uuid: ${DOOR_UUID}, resourceId: 12, relay: { pin: 17 }, reader: { type: osdp, path: /dev/ttyUSB0, address: 0, requireSecureChannel: true } }\n`,
    );
    const refused = runCli(['config', 'check', '--config', required]);
    expect(refused.status).toBe(78);
    expect(refused.stderr).toContain('doors[0].reader.scbkFile: requireSecureChannel is set but there is no scbkFile: the reader would run plain');
    const key = join(tmp.path, 'osdp-scbk');
    writeFileSync(key, '00112233445566778899aabbccddeeff\n');
    chmodSync(key, 0o600);
    const install = configFile(
      'osdp-required-install.yaml',
      `${BASE}doors:\n  - { uuid: ${DOOR_UUID}, resourceId: 12, relay: { pin: 17 }, reader: { type: osdp, path: /dev/ttyUSB0, address: 0, scbkFile: ${key}, installMode: true, requireSecureChannel: true } }\n`,
    );
    expect(runCli(['config', 'check', '--config', install]).stderr).toContain(
      'doors[0].reader.installMode: requireSecureChannel is set but installMode uses the public default key SCBK-D',
    );
    const secure = configFile(
      'osdp-secure.yaml',
      `${BASE}doors:\n  - { uuid: ${DOOR_UUID}, resourceId: 12, relay: { pin: 17 }, reader: { type: osdp, path: /dev/ttyUSB0, address: 0, scbkFile: ${key}, requireSecureChannel: true } }\n`,
    );
    const ok = runCli(['config', 'check', '--config', secure]);
    expect(ok.status, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('reader OSDP /dev/ttyUSB0 address 0 (secure channel) (numbering data)');
    expect(ok.stdout).not.toContain('is plain');
  });

  it('accepts a Wiegand door on the character device, and says which GPIO drivers this machine has', () => {
    const path = configFile(
      'chardev.yaml',
      `agent: { id: t1, dataDir: ${tmp.path}/data }
access: { groups: [Staff] }
gpio: { driver: chardev, chip: pinctrl-rp1 }
doors:
  - uuid: ${DOOR_UUID}
    resourceId: 12
    relay: { pin: 17 }
    exitButton: { pin: 22, pull: up }
    reader: { type: wiegand, d0: 5, d1: 6, format: 26, numbering: facility_card }
`,
    );
    const r = runCli(['config', 'check', '--config', path]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('Door 12 (GPIO 17, reader Wiegand D0 GPIO 5 / D1 GPIO 6 (format H10301; numbering facility_card))');
    // This machine has no GPIO chip: the check says so and points at the simulated driver.
    expect(r.stdout).toContain('gpio drivers on this machine (suggested: simulated)');
    expect(r.stdout).toMatch(/chardev: no - no \/dev\/gpiochip\*/);
    expect(r.stdout).toContain('WARNING: gpio.driver chardev does not work on this machine');
  });

  it('wiegand.formats: each bad format, name and reader choice is named by its key; auto made ambiguous is a warning', () => {
    const reader = (format: string) =>
      `doors:\n  - { uuid: ${DOOR_UUID}, resourceId: 12, relay: { pin: 17 }, reader: { type: wiegand, d0: 5, d1: 6, format: ${format} } }\n`;
    const bad = configFile(
      'formats-bad.yaml',
      `${BASE}wiegand:
  formats:
    - { name: Good30, bits: 30, parity: [{ bit: 0, kind: even, covers: [[1, 14]] }], fields: { facility: [1, 12], card: [13, 28] } }
    - { name: Past, bits: 30, parity: [{ bit: 29, kind: odd, covers: [[15, 31]] }], fields: { card: [1, 30] } }
    - { name: Overlap, bits: 30, fields: { facility: [0, 12], card: [10, 29] } }
    - { name: OnParity, bits: 30, parity: [{ bit: 0, kind: even, covers: [[0, 14]] }], fields: { card: [0, 28] } }
    - { name: Good30, bits: 30, fields: { card: [0, 29] } }
    - { name: H10301, bits: 26, fields: { card: [0, 25] } }
${reader('[Good30, Nope]')}`,
    );
    const r = runCli(['config', 'check', '--config', bad]);
    expect(r.status).toBe(78);
    for (const problem of [
      "wiegand.formats[1].parity[0].covers[0]: [15, 31] runs past the format's 30 bits (0-29)",
      "wiegand.formats[1].fields.card: [1, 30] runs past the format's 30 bits (0-29)",
      'wiegand.formats[2].fields.card: overlaps fields.facility',
      'wiegand.formats[3].parity[0].covers[0]: covers its own parity bit 0',
      'wiegand.formats[3].fields.card: overlaps parity bit 0',
      'wiegand.formats[4].name: same name as wiegand.formats[0]',
      'wiegand.formats[5].name: H10301 is a built-in format: choose another name',
      'doors[0].reader.format: no format named Nope',
    ])
      expect(r.stderr).toContain(problem);
    const keypad = configFile(
      'formats-keypad.yaml',
      `${BASE}wiegand: { formats: [{ name: Raw8, bits: 8, fields: { card: [0, 7] }, raw: {} }] }\n${reader('[Raw8]')}`,
    );
    expect(runCli(['config', 'check', '--config', keypad]).stderr).toContain(
      'doors[0].reader.format: takes Raw8, a 8-bit format: a Wiegand keypad sends 8-bit frames on the same lines',
    );
    const auto = configFile(
      'formats-auto.yaml',
      `${BASE}wiegand: { formats: [{ name: Acme26, bits: 26, parity: [{ bit: 25, kind: odd, covers: [[0, 24]] }], fields: { card: [0, 24] } }] }\n${reader('auto')}`,
    );
    const w = runCli(['config', 'check', '--config', auto]);
    expect(w.status).toBe(0);
    expect(w.stdout).toContain('WARNING: Door 12: its reader takes every format (format: auto), and wiegand.formats makes 26 bits (H10301, Acme26) ambiguous');
    const chosen = configFile('formats-chosen.yaml', readFileSync(auto, 'utf8').replace('format: auto', 'format: Acme26'));
    expect(runCli(['config', 'check', '--config', chosen]).stdout).not.toContain('WARNING: Door 12');
  });

  it('refuses a bad time zone, an empty access list and a missing door list', () => {
    const path = configFile(
      'tz.yaml',
      `agent: { id: t1, timezone: Mars/Olympus }
access: { groups: [] }
`,
    );
    const r = runCli(['config', 'check', '--config', path]);
    expect(r.status).toBe(78);
    expect(r.stderr).toContain('agent.timezone: not an IANA time zone');
    expect(r.stderr).toContain('access: list at least one group or policy');
    expect(r.stderr).toContain('doors: required');
  });

  it('reports YAML syntax errors with line and column', () => {
    const path = configFile('syntax.yaml', 'agent: { id: t1\ndoors: [\n');
    const r = runCli(['config', 'check', '--config', path]);
    expect(r.status).toBe(78);
    expect(r.stderr).toMatch(/is not valid YAML:\n {2}line \d+, column \d+: /);
  });

  it('a YAML alias bomb is a configuration error (exit 78), not a crash', () => {
    const levels = ['a: &a [x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 9; i++)
      levels.push(
        `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(9)
          .fill(`*${String.fromCharCode(96 + i)}`)
          .join(', ')}]`,
      );
    const r = runCli(['config', 'check', '--config', configFile('bomb.yaml', `${levels.join('\n')}\n`)]);
    expect(r.status).toBe(78);
    expect(r.stderr).toMatch(/is not valid YAML:\n {2}YAML: Excessive alias count/);
  });

  it('a configuration over 1 MiB is refused before it is parsed', () => {
    const r = runCli(['config', 'check', '--config', configFile('huge.yaml', `${BASE}# ${'x'.repeat(2 * 1024 * 1024)}\n`)]);
    expect(r.status).toBe(78);
    expect(r.stderr).toMatch(/is not a door-agent configuration:\n {2}\(file\): \d+ bytes; a configuration is at most 1048576 bytes/);
  });

  it('reports the schema problems and the unreadable files in one run', () => {
    const path = configFile(
      'stages.yaml',
      `${BASE}service: { baseUrl: "https://access.example.org", apiKeyFile: ${tmp.path}/no-such-key }
doors: [ { uuid: ${DOOR_UUID}, resourceId: 12, relay: { pin: 99 } } ]
`,
    );
    const r = runCli(['config', 'check', '--config', path]);
    expect(r.status).toBe(78);
    expect(r.stderr).toContain('doors[0].relay.pin');
    expect(r.stderr).toContain(`service.apiKeyFile: cannot read ${tmp.path}/no-such-key: no such file`);
  });

  it('reports an empty file', () => {
    const r = runCli(['config', 'check', '--config', configFile('empty.yaml', '')]);
    expect(r.status).toBe(78);
    expect(r.stderr).toContain('the file is empty');
  });

  it('checks secret files exist, accepts an environment override, and never prints the secret', () => {
    const keyFile = join(tmp.path, 'api-key');
    const path = writeConfig(tmp.path, {
      extra: `service: { baseUrl: "https://access.example.org", apiKeyFile: ${keyFile} }
mqtt: { url: "mqtts://door:s3cret-pass@broker.lan:8883", commandSecretFile: ${tmp.path}/missing-secret }`,
    });
    let r = runCli(['config', 'check', '--config', path]);
    expect(r.status).toBe(78);
    expect(r.stderr).toContain(`service.apiKeyFile: cannot read ${keyFile}: no such file`);
    expect(r.stderr).toContain('mqtt.commandSecretFile: cannot read');

    writeFileSync(keyFile, 'k-123456\n');
    chmodSync(keyFile, 0o600);
    writeFileSync(join(tmp.path, 'missing-secret'), 'shh\n');
    r = runCli(['config', 'check', '--config', path]);
    // A command secret shorter than 32 bytes is a configuration error naming the file and the length needed.
    expect(r.status).toBe(78);
    expect(r.stderr).toContain(`mqtt.commandSecretFile: ${tmp.path}/missing-secret holds a secret of 3 bytes; it must be at least 32 bytes`);
    expect(r.stderr).not.toContain('shh');
    writeFileSync(join(tmp.path, 'missing-secret'), `${'s'.repeat(32)}\n`);
    r = runCli(['config', 'check', '--config', path]);
    expect(r.status).toBe(0);
    expect(r.stdout).not.toContain('s3cret-pass');
    expect(r.stdout).toContain('mqtts://***@broker.lan:8883');

    const noKeyPath = writeConfig(join(tmp.path), { extra: 'service: { baseUrl: "https://access.example.org" }' });
    r = runCli(['config', 'check', '--config', noKeyPath]);
    expect(r.status).toBe(78);
    expect(r.stderr).toContain('service.apiKeyFile: required (or set DOOR_AGENT_API_KEY)');
    r = runCli(['config', 'check', '--config', noKeyPath], { env: { DOOR_AGENT_API_KEY: 'from-env' } });
    expect(r.status).toBe(0);
    expect(r.stdout + r.stderr).not.toContain('from-env');
  });
});

describe('door-agent relock with a configuration that does not validate', () => {
  it('locks every relay it can read, names the ones it cannot, and exits 78 with the problems', () => {
    const gpio = join(tmp.path, 'relock-gpio');
    mkdirSync(join(gpio, 'gpio17'), { recursive: true });
    mkdirSync(join(gpio, 'gpio18'), { recursive: true });
    writeFileSync(join(gpio, 'gpio17/value'), '1\n'); // left energized by a crashed daemon
    writeFileSync(join(gpio, 'gpio18/value'), '0\n'); // a maglock (failMode safe): locked is energized, 1
    const path = configFile(
      'relock-invalid.yaml',
      `agent: { id: t1, dataDir: ${tmp.path}/data, timezon: typo }
access: { groups: [Staff] }
gpio: { driver: simulated, simulatedDir: ${gpio} }
doors:
  - { uuid: not-a-uuid, resourceId: 12, name: Front door, relay: { pin: 17 } }
  - { uuid: ${DOOR_UUID}, resourceId: 13, name: Back door, relay: { pin: 18 }, failMode: safe }
  - { uuid: ${DOOR_UUID}, resourceId: 14, name: Side door, relay: { pin: 19 }, failMode: sometimes }
`,
    );
    const r = runCli(['relock', '--config', path]);
    expect(r.status).toBe(78);
    expect(r.stdout).toContain('Front door (doors[0]): relay GPIO 17 set to 0 (locked)');
    expect(r.stdout).toContain('Back door (doors[1]): relay GPIO 18 set to 1 (locked)');
    expect(r.stderr).toContain('agent.timezon: unknown key');
    expect(r.stderr).toContain('2 locked');
    expect(r.stderr).toContain('Side door (doors[2]): failMode is neither secure nor safe');
    expect(readFileSync(join(gpio, 'gpio17/value'), 'utf8')).toBe('0\n');
    expect(readFileSync(join(gpio, 'gpio18/value'), 'utf8')).toBe('1\n');
  });
});

describe('config check of a reference service file', () => {
  it('checks the server section and names each problem', () => {
    const ok = configFile(
      'service.yaml',
      'server: { listen: 127.0.0.1:8080, dataDir: /tmp/svc, resources: [ { resourceId: 12, uuid: 6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d, type: DOOR, name: Front } ] }\n',
    );
    let r = runCli(['config', 'check', '--config', ok]);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('ok (reference service)');
    expect(r.stdout).toContain('database SQLite /tmp/svc/service.db');
    // A site on PostgreSQL: the database named (its password is never in the URL), not only the data directory.
    const onPostgres = configFile(
      'service-pg.yaml',
      'server: { listen: 127.0.0.1:8080, dataDir: /tmp/svc, database: { url: "postgres://door@db.example.org:5432/door" } }\n',
    );
    r = runCli(['config', 'check', '--config', onPostgres]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('database PostgreSQL postgres://***@db.example.org:5432/door (the history mark in the data directory)');
    // The service's file with an agent section but no door (the service runs it): checked as the service's.
    const withAgent = configFile('service-agent.yaml', 'agent: { id: service, dataDir: /tmp/svc }\nserver: { listen: 127.0.0.1:8080, dataDir: /tmp/svc }\n');
    r = runCli(['config', 'check', '--config', withAgent]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('ok (reference service)');
    const bad = configFile('service-bad.yaml', 'server: { listen: nope, resources: [ { resourceId: 12, uuid: x, type: GATE, name: Front } ] }\n');
    r = runCli(['config', 'check', '--config', bad]);
    expect(r.status).toBe(78);
    expect(r.stderr).toContain('server.listen: expected HOST:PORT');
    expect(r.stderr).toContain('server.resources[0].type: "GATE" is not one of DOOR, COMPUTER');
    const dup = configFile(
      'service-dup.yaml',
      'server: { resources: [ { resourceId: 12, uuid: 0b7a1e55-3c2d-4e8f-9a10-22334455aabb, type: DOOR, name: A }, { resourceId: 12, uuid: 6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d, type: DOOR, name: B } ] }\n',
    );
    r = runCli(['config', 'check', '--config', dup]);
    expect(r.status).toBe(78);
    expect(r.stderr).toContain('server.resources[1].resourceId: same resourceId as resources[0]');
  });
});

describe('command line', () => {
  it('exits 2 with a clear message for an unknown command or option', () => {
    let r = runCli(['frobnicate']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('unknown command "frobnicate"');
    r = runCli(['check', '123', '--colour', 'red']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("Unknown option '--colour'");
    r = runCli(['import']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('expected FILE');
  });

  it('prints help listing the commands', () => {
    const r = runCli(['--help']);
    expect(r.status).toBe(0);
    for (const command of ['check CREDENTIAL', 'import FILE', 'relock', 'config check']) expect(r.stdout).toContain(command);
  });
});
