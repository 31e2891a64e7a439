import { describe, expect, it } from 'vitest';
import { type AreaOptions, type GroupDoorFacts, doorGroupProblems } from '../../src/core/doorGroupChecks.js';

const door = (uuid: string, over: Partial<GroupDoorFacts> = {}): GroupDoorFacts => ({
  uuid,
  entryReader: true,
  exitReader: true,
  contact: true,
  unlockSchedule: false,
  ...over,
});
const DOORS = [door('d1'), door('d2'), door('d3', { exitReader: false }), door('d4', { contact: false }), door('d5', { unlockSchedule: true })];
const area = (over: Partial<AreaOptions> = {}): AreaOptions => ({
  id: 'lab',
  doors: ['d1'],
  antiPassback: { mode: 'hard', rule: 'inout', seconds: null },
  maxOccupancy: null,
  resetAt: '03:00',
  ...over,
});
const check = (areas: AreaOptions[], interlocks: Array<{ doors: string[] }> = [], doors = DOORS) => doorGroupProblems({ doors, areas, interlocks });

describe('doorGroupProblems', () => {
  it('a sound configuration has no problem', () => {
    expect(
      check(
        [area({ doors: ['d1', 'D2'] }), area({ id: 'vault', doors: ['d3'], antiPassback: { mode: 'soft', rule: 'timed', seconds: 60 } })],
        [{ doors: ['d1', 'd2'] }],
      ),
    ).toEqual({
      errors: [],
      warnings: [],
    });
  });

  it.each([
    ['an area with no door', [area({ doors: [] })], 'areas[0].doors', /at least one door/],
    ['an unknown door', [area({ doors: ['d1', 'nope'] })], 'areas[0].doors[1]', /nope is not a configured door/],
    ['a door in two areas', [area(), area({ id: 'vault', doors: ['d2', 'd1'] })], 'areas[1].doors[1]', /already in areas\[0\]\.doors/],
    ['the same id twice', [area(), area({ doors: ['d2'] })], 'areas[1].id', /same id as areas\[0\]/],
    [
      'a timed rule without seconds',
      [area({ antiPassback: { mode: 'hard', rule: 'timed', seconds: null } })],
      'areas[0].antiPassback.seconds',
      /timed rule needs seconds/,
    ],
    ['a timed rule with 0 seconds', [area({ antiPassback: { mode: 'soft', rule: 'timed', seconds: 0 } })], 'areas[0].antiPassback.seconds', /at least 1/],
    ['inout with no exit reader', [area({ doors: ['d3'] })], 'areas[0].antiPassback.rule', /inout needs an exit reader/],
    [
      'a maximum with no exit reader',
      [area({ doors: ['d3'], antiPassback: { mode: 'off', rule: 'inout', seconds: null }, maxOccupancy: 10 })],
      'areas[0].maxOccupancy',
      /needs an exit reader/,
    ],
    ['a maximum of 0', [area({ maxOccupancy: 0 })], 'areas[0].maxOccupancy', /at least 1/],
    ['a reset time that is not HH:MM', [area({ resetAt: '3:00' })], 'areas[0].resetAt', /expected a local time "HH:MM"/],
    ['a reset time past midnight', [area({ resetAt: '24:00' })], 'areas[0].resetAt', /00:00 to 23:59/],
  ])('error: %s', (_what, areas, path, message) => {
    const { errors } = check(areas);
    expect(errors).toEqual([{ path, message: expect.stringMatching(message) }]);
  });

  it('error: an area whose doors have no entry reader', () => {
    const doors = [door('x1', { entryReader: false })];
    expect(check([area({ doors: ['x1'], antiPassback: { mode: 'off', rule: 'inout', seconds: null } })], [], doors).errors).toEqual([
      { path: 'areas[0].doors', message: expect.stringMatching(/no door of this area has an entry reader/) },
    ]);
  });

  it('a timed rule needs no seconds while anti-passback is off; inout needs no exit reader then either', () => {
    expect(check([area({ doors: ['d3'], antiPassback: { mode: 'off', rule: 'timed', seconds: null } })]).errors).toEqual([]);
  });

  it.each([
    ['an interlock of one door', [{ doors: ['d1'] }], 'interlocks[0].doors', /at least two doors/],
    ['an unknown door', [{ doors: ['d1', 'nope'] }], 'interlocks[0].doors[1]', /not a configured door/],
    ['a door twice in one interlock', [{ doors: ['d1', 'D1', 'd2'] }], 'interlocks[0].doors[1]', /listed twice/],
    ['a door in two interlocks', [{ doors: ['d1', 'd2'] }, { doors: ['d3', 'd1'] }], 'interlocks[1].doors[1]', /already in interlocks\[0\]\.doors/],
  ])('error: %s', (_what, interlocks, path, message) => {
    expect(check([], interlocks).errors).toEqual([{ path, message: expect.stringMatching(message) }]);
  });

  it('warning, not error: an exit reader on a door of an area without a contact (its grants count as passages)', () => {
    expect(check([area({ doors: ['d1', 'd4'] })])).toEqual({
      errors: [],
      warnings: [{ path: 'doors[3].readers.exit', message: expect.stringMatching(/counts each grant here as a passage/) }],
    });
    // Outside any area it does not matter.
    expect(check([]).warnings).toEqual([]);
  });

  it('warning: an unlock schedule on an interlocked door', () => {
    expect(check([], [{ doors: ['d1', 'd5'] }]).warnings).toEqual([
      { path: 'doors[4].unlockSchedule', message: expect.stringMatching(/keeps the other doors of interlocks\[0\]/) },
    ]);
  });

  it('a door may be in an area and an interlock (a mantrap into a lab)', () => {
    expect(check([area({ doors: ['d1', 'd2'] })], [{ doors: ['d1', 'd2'] }]).errors).toEqual([]);
  });
});
