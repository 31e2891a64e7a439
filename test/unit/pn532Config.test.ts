import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { configProblems } from '../support/configProblems.js';

// A PN532 reader's keys: the defaults an installer gets, and every mistake named by its key.
const FRONT = '6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d';
const BACK = '0b7a1e55-3c2d-4e8f-9a10-22334455aabb';

function config(reader: string, second = ''): string {
  return `agent: { id: t1, dataDir: /tmp/door-agent-pn532-config, timezone: Europe/Berlin }
access: { groups: [Staff] }
gpio: { driver: chardev }
doors:
  - uuid: ${FRONT}
    resourceId: 12
    relay: { pin: 17 }
    reader: ${reader}
${second}`;
}

describe('pn532 reader configuration', () => {
  it('defaults: 115200 baud, a poll every 150 ms, 500 ms off the reader before the same card is a new tap, msb_first', () => {
    const parsed = parseConfig(config('{ type: pn532, path: /dev/serial0 }'), 'test.yaml');
    expect(parsed.doors[0]!.reader).toEqual({ type: 'pn532', path: '/dev/serial0', baudRate: 115200, pollMs: 150, releaseMs: 500, uidByteOrder: 'msb_first' });
  });

  it('GPIO LED and buzzer lines as for a serial reader', () => {
    const parsed = parseConfig(config('{ type: pn532, path: /dev/serial0, led: { pin: 24 }, buzzer: { pin: 25 } }'), 'test.yaml');
    expect(parsed.doors[0]!.reader).toMatchObject({ led: { pin: 24 }, buzzer: { pin: 25 } });
  });

  it('each mistake names its key', () => {
    expect(configProblems(config('{ type: pn532 }'))).toEqual(['doors[0].reader.path: required: text']);
    expect(configProblems(config('{ type: pn532, path: /dev/serial0, baudRate: 115201 }'))).toEqual([
      'doors[0].reader.baudRate: expected one of 1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400 (a PN532 starts at 115200)',
    ]);
    expect(configProblems(config('{ type: pn532, path: /dev/serial0, uidByteOrder: reversed }'))).toEqual([
      'doors[0].reader.uidByteOrder: "reversed" is not one of msb_first, lsb_first',
    ]);
    expect(configProblems(config('{ type: pn532, path: /dev/serial0, pollMs: 10 }'))[0]).toMatch(/^doors\[0\]\.reader\.pollMs: /);
    expect(configProblems(config('{ type: pn532, path: /dev/serial0, cardFormat: hex }'))).toEqual(['doors[0].reader.cardFormat: unknown key']);
  });

  it('a port another door reads is refused', () => {
    const second = `  - uuid: ${BACK}
    resourceId: 13
    relay: { pin: 18 }
    reader: { type: pn532, path: /dev/serial0 }
`;
    expect(configProblems(config('{ type: pn532, path: /dev/serial0 }', second))).toEqual([
      'doors[1].reader.path: reader /dev/serial0 is already used by doors[0]',
    ]);
  });
});
