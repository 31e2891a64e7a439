import { describe, expect, it } from 'vitest';
import { doorGroupWarnings } from '../../src/config/doorGroups.js';
import { parseConfig } from '../../src/config/load.js';
import { configProblems } from '../support/configProblems.js';

// Doors that work together in the configuration (docs/areas.md): entry and exit readers, areas, interlocks and the
// two-person rule; every mistake named by its key, through the loader and through config check's cross-key pass.
const FRONT = '6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d';
const BACK = '0b7a1e55-3c2d-4e8f-9a10-22334455aabb';
const SIDE = '9d8c7b6a-5f4e-4d3c-8b2a-112233445566';

function config(groups: string, front = '    readers: { entry: { type: wiegand, d0: 5, d1: 6 }, exit: { type: wiegand, d0: 7, d1: 8 } }'): string {
  return `agent: { id: t1, dataDir: /tmp/door-agent-groups, timezone: Europe/Berlin }
access: { groups: [Staff] }
gpio: { driver: chardev }
doors:
  - uuid: ${FRONT}
    resourceId: 12
    name: Front door
    relay: { pin: 17 }
    contact: { pin: 27 }
${front}
  - uuid: ${BACK}
    resourceId: 13
    name: Back door
    relay: { pin: 18 }
    reader: { type: wiegand, d0: 9, d1: 10 }
  - uuid: ${SIDE}
    resourceId: 14
    name: Side door
    relay: { pin: 19 }
    readers: { exit: { type: serial, path: /dev/ttyUSB1 } }
${groups}
`;
}

describe('entry and exit readers', () => {
  it('readers gives an entry and an exit reader; reader stays the entry reader alone', () => {
    const parsed = parseConfig(config(''), 't');
    expect(parsed.doors[0]).toMatchObject({ reader: { type: 'wiegand', d0: 5 }, exitReader: { type: 'wiegand', d0: 7 } });
    expect(parsed.doors[0]).not.toHaveProperty('readers');
    expect(parsed.doors[1]).toMatchObject({ reader: { d0: 9 } });
    expect(parsed.doors[1]).not.toHaveProperty('exitReader');
    expect(parsed.doors[2]).not.toHaveProperty('reader');
    expect(parsed.doors[2]).toMatchObject({ exitReader: { type: 'serial', path: '/dev/ttyUSB1' } });
  });

  it.each([
    [
      'both keys',
      '    reader: { path: /dev/ttyUSB0 }\n    readers: { exit: { path: /dev/ttyUSB2 } }',
      'doors[0].readers: give reader (an entry reader alone) or readers, not both',
    ],
    ['neither reader', '    readers: {}', 'doors[0].readers: give an entry or an exit reader (or both)'],
    [
      "the exit reader's pins",
      '    readers: { entry: { type: wiegand, d0: 5, d1: 6 }, exit: { type: wiegand, d0: 6, d1: 27 } }',
      'doors[0].readers.exit.d0: GPIO 6 is already used by doors[0].readers.entry.d1',
    ],
    [
      'its LED line',
      '    readers: { exit: { type: wiegand, d0: 7, d1: 8, led: { pin: 17 } } }',
      'doors[0].readers.exit.led.pin: GPIO 17 is already used by doors[0].relay.pin',
    ],
    [
      'its device',
      '    readers: { exit: { type: serial, path: /dev/ttyUSB1 } }',
      'doors[2].readers.exit.path: reader /dev/ttyUSB1 is already used by doors[0]',
    ],
    ['an unknown key', '    readers: { entry: { type: wiegand, d0: 5, d1: 6 }, way_out: {} }', 'doors[0].readers.way_out: unknown key'],
  ])('refused: %s', (_what, front, problem) => {
    expect(configProblems(config('', front))).toContain(problem);
  });

  it('two addresses on one OSDP bus, as the entry and the exit reader', () => {
    const front = '    readers: { entry: { type: osdp, path: /dev/ttyRS485, address: 1 }, exit: { type: osdp, path: /dev/ttyRS485, address: 2 } }';
    expect(configProblems(config('', front))).toEqual([]);
    expect(configProblems(config('', front.replace('address: 2', 'address: 1')))).toEqual([
      'doors[0].readers.exit.address: OSDP address 1 on /dev/ttyRS485 is already doors[0]',
    ]);
  });
});

describe('areas, interlocks, two-person doors', () => {
  it('are normalized: doors by name, uuid or resourceId to lower-case uuids, every default applied', () => {
    const parsed = parseConfig(
      config(`areas: [ { id: lab, doors: [Front door, 13], antiPassback: { mode: hard }, maxOccupancy: 20, resetAt: "03:00" } ]
interlocks: [ { doors: ["${FRONT.toUpperCase()}", Back door] } ]`),
      't',
    );
    expect(parsed.areas).toEqual([
      {
        id: 'lab',
        name: 'lab',
        doors: [FRONT, BACK],
        antiPassback: { mode: 'hard', rule: 'inout', seconds: null },
        maxOccupancy: 20,
        resetAt: '03:00',
      },
    ]);
    expect(parsed.interlocks).toEqual([{ doors: [FRONT, BACK] }]);
    expect(parseConfig(config('', '    twoPerson: {}'), 't').doors[0]!.twoPerson).toEqual({ windowSeconds: 15 });
    expect(parseConfig(config(''), 't')).not.toHaveProperty('areas');
  });

  it.each([
    [
      'an area with no entry reader',
      'areas: [ { id: out, doors: [Side door] } ]',
      'areas[0].doors: no door of this area has an entry reader: nobody could be counted in',
    ],
    ['an area with no door', 'areas: [ { id: lab, doors: [] } ]', 'areas[0].doors: an area needs at least one door (the doors that lead into it)'],
    [
      'an unknown door',
      'areas: [ { id: lab, doors: [Garage] } ]',
      'areas[0].doors[0]: "Garage" is not a door of this agent (doors: Front door / 12, Back door / 13, Side door / 14)',
    ],
    [
      'a door in two areas',
      'areas: [ { id: a, doors: [12] }, { id: b, doors: [Front door] } ]',
      'areas[1].doors[0]: door 6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d is already in areas[0].doors: a door leads into one area',
    ],
    ['an area id twice', 'areas: [ { id: a, doors: [12] }, { id: a, doors: [13] } ]', 'areas[1].id: same id as areas[0]'],
    [
      'an area id not topic-safe',
      'areas: [ { id: "lab/1", doors: [12] } ]',
      'areas[0].id: must be 1-64 letters, digits, "-" or "_" (it is part of MQTT topics)',
    ],
    [
      'timed without seconds',
      'areas: [ { id: a, doors: [12], antiPassback: { mode: soft, rule: timed } } ]',
      'areas[0].antiPassback.seconds: the timed rule needs seconds (at least 1): the same holder not again within them',
    ],
    [
      'inout with no exit reader',
      'areas: [ { id: a, doors: [13], antiPassback: { mode: hard } } ]',
      expect.stringMatching(/^areas\[0\]\.antiPassback\.rule: inout needs an exit reader/),
    ],
    [
      'a maximum with no exit reader',
      'areas: [ { id: a, doors: [13], maxOccupancy: 5 } ]',
      expect.stringMatching(/^areas\[0\]\.maxOccupancy: a maximum needs an exit reader/),
    ],
    ['a maximum of 0', 'areas: [ { id: a, doors: [12], maxOccupancy: 0 } ]', 'areas[0].maxOccupancy: at least 1'],
    [
      'a reset time that is no time',
      'areas: [ { id: a, doors: [12], resetAt: "25:00" } ]',
      'areas[0].resetAt: "25:00": expected a local time "HH:MM" (00:00 to 23:59)',
    ],
    [
      'a door in two interlocks',
      'interlocks: [ { doors: [12, 13] }, { doors: [14, 12] } ]',
      expect.stringMatching(/^interlocks\[1\]\.doors\[1\]: door .* is already in interlocks\[0\]\.doors: a door is in one interlock at most$/),
    ],
    [
      'a door twice in one interlock',
      'interlocks: [ { doors: [12, Front door] } ]',
      expect.stringMatching(/^interlocks\[0\]\.doors\[1\]: door .* is listed twice$/),
    ],
    ['an interlock of one door', 'interlocks: [ { doors: [12] } ]', 'interlocks[0].doors: an interlock needs at least two doors'],
  ])('refused: %s', (_what, groups, problem) => {
    expect(configProblems(config(groups))).toContainEqual(problem);
  });

  it('named also when another part of the file is invalid (the checks across keys)', () => {
    const text = config('areas: [ { id: out, doors: [Side door] } ]\ninterlocks: [ { doors: [12] } ]').replace('access: { groups: [Staff] }', 'access: {}');
    expect(configProblems(text)).toEqual([
      expect.stringMatching(/^access: list at least one group or policy/),
      'areas[0].doors: no door of this area has an entry reader: nobody could be counted in',
      'interlocks[0].doors: an interlock needs at least two doors',
    ]);
  });

  it('allowed, as docs/areas.md says: a two-person door in an interlock; a reset time some day skips (DST); warnings for the rest', () => {
    const parsed = parseConfig(
      config(
        `areas: [ { id: lab, doors: [Front door, Side door], resetAt: "02:30" } ]
interlocks: [ { doors: [Front door, Back door] } ]`,
        '    twoPerson: { windowSeconds: 20 }\n    unlockSchedule: [[], [[8, 9]], [], [], [], [], []]\n    reader: { type: wiegand, d0: 5, d1: 6 }',
      ),
      't',
    );
    expect(parsed.doors[0]!.twoPerson).toEqual({ windowSeconds: 20 });
    expect(doorGroupWarnings(parsed)).toEqual([
      'doors[2].readers.exit: an exit reader on a door without a contact: areas[0] counts each grant here as a passage (nothing tells whether the door was opened)',
      'doors[0].unlockSchedule: held unlocked by its schedule, this door keeps the other doors of interlocks[0] locked during its hours; when its hours start (or resume) while another of them is unlocked or open, this door stays locked until that one has locked and closed',
    ]);
  });
});
