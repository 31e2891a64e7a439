import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseConfig } from '../../src/config/load.js';
import { configProblems } from '../support/configProblems.js';

const FRONT = '6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d';
const SERVER = '7a2d3b1f-9e1c-4b68-8e54-2a3f4b5c6d7e';

function config(access: Record<string, unknown>, schedules?: Record<string, unknown>, timezone = 'Europe/Berlin'): string {
  return stringify({
    agent: { id: 'levels', dataDir: '/tmp/levels-test', timezone },
    access,
    ...(schedules ? { schedules } : {}),
    gpio: { driver: 'simulated', simulatedDir: '/tmp/levels-gpio' },
    doors: [
      { uuid: FRONT.toUpperCase(), resourceId: 12, name: 'Front door', relay: { pin: 17 } },
      { uuid: SERVER, resourceId: 22, name: 'Server room', relay: { pin: 18 } },
    ],
  });
}

const problems = configProblems;

const office = { mon: ['07:30-18:00'], fri: ['07:30-13:00', '14:00-18:00'] };

describe('access levels in the configuration', () => {
  it('resolves doors by name, uuid (any case) and resourceId, and keeps schedules and dates', () => {
    const options = parseConfig(
      config(
        {
          levels: [
            { name: 'Staff', groups: ['Staff'], doors: ['Front door'], schedule: 'office', from: '2026-01-01', until: '2026-12-31' },
            { name: 'IT', policies: ['IT'], doors: [SERVER.toUpperCase(), 12] },
            { name: 'Basement', groups: ['Facilities'], resourceGroup: 'Basement doors' },
          ],
        },
        { office },
      ),
      'test.yaml',
    );
    const [staff, it, basement] = options.access.levels;
    expect(staff).toMatchObject({ name: 'Staff', source: 'config', doors: [FRONT], scheduleName: 'office', fromDate: '2026-01-01', untilDate: '2026-12-31' });
    expect(staff!.schedule?.spec).toEqual({ holidays: 'closed', ...office });
    expect(it).toMatchObject({ doors: [SERVER, FRONT], schedule: null, policies: ['IT'] });
    expect(basement).toMatchObject({ doors: [], resourceGroup: 'Basement doors' });
  });

  it('keeps access.groups/policies alone valid (every door, always) and needs a group, a policy or a level', () => {
    expect(problems(config({ groups: ['Staff'] }))).toEqual([]);
    expect(problems(config({ levels: [{ name: 'IT', groups: ['IT'], doors: [22] }] }))).toEqual([]);
    expect(problems(config({}))).toEqual([
      'access: list at least one group or policy whose members may open every door (access.groups, access.policies), or access levels (access.levels)',
    ]);
  });

  it('names the key path of every bad level and schedule, all at once', () => {
    const text = config(
      {
        groups: ['Staff'],
        levels: [
          { name: 'A', groups: ['Staff'], doors: ['Back door', 99], schedule: 'nope' },
          { name: 'B', doors: [], from: '2026-05-01', until: '2026-04-01' },
          { name: 'A', groups: ['X'], doors: [12] },
          { name: 'every_door', groups: ['X'], doors: [12] },
          { name: 'C', groups: ['X'], doors: [12], from: '2026-02-30' },
        ],
      },
      { bad: { mon: [], tue: ['08:00-12:00', '11:00-13:00'], wed: ['18:00-25:00'] } },
    );
    expect(problems(text)).toEqual(
      expect.arrayContaining([
        'access.levels[1].groups: who: list at least one group or policy whose members hold this level',
        'access.levels[1].doors: where: list at least one door (name, uuid or resourceId) or a resourceGroup',
        'access.levels[1].until: ends (2026-04-01) before it starts (from 2026-05-01)',
        'access.levels[4].from: expected a date YYYY-MM-DD',
        'access.levels[3].name: "every_door" is the name of access.groups/policies (every door, always): choose another',
        'schedules.bad.mon: an empty list: leave the day out for no access that day',
      ]),
    );
    // The checks across keys once the schema holds.
    const crossKeys = config(
      {
        levels: [
          { name: 'A', groups: ['Staff'], doors: ['Back door', 99], schedule: 'nope' },
          { name: 'A', groups: ['X'], doors: [12] },
          { name: 'every_door', groups: ['X'], doors: [12] },
        ],
      },
      { bad: { mon: [], tue: ['08:00-12:00', '11:00-13:00'], wed: ['18:00-25:00'] } },
    );
    expect(problems(crossKeys).sort()).toEqual(
      [
        'schedules.bad.mon: an empty list: leave the day out for no access that day',
        'schedules.bad.tue[1]: "11:00-13:00" overlaps "08:00-12:00" (tue[0]): merge them into one range',
        'schedules.bad.wed[0]: "18:00-25:00" is past 24:00',
        'access.levels[0].doors[0]: "Back door" is not a door of this agent (doors: Front door / 12, Server room / 22)',
        'access.levels[0].doors[1]: 99 is not a door of this agent (doors: Front door / 12, Server room / 22)',
        'access.levels[0].schedule: unknown schedule "nope" (schedules: bad)',
        'access.levels[1].name: same name as access.levels[0]',
        'access.levels[2].name: "every_door" is the name of access.groups/policies (every door, always): choose another',
      ].sort(),
    );
  });

  it('refuses a schedule boundary in a daylight-saving gap of the agent time zone, and takes it in a zone without one', () => {
    const gap = problems(config({ groups: ['Staff'] }, { sunday: { sun: ['02:30-18:00'] } }));
    expect(gap).toHaveLength(1);
    expect(gap[0]).toMatch(
      /^schedules\.sunday\.sun\[0\]: 02:30 does not exist on \d{4}-03-\d{2} in Europe\/Berlin \(clocks go from 02:00 to 03:00\): use 02:00 or 03:00$/,
    );
    expect(problems(config({ groups: ['Staff'] }, { sunday: { sun: ['02:30-18:00'] } }, 'Asia/Tokyo'))).toEqual([]);
    // New York springs forward on a Sunday at 02:00 too; an overnight range ending at 02:30 on Sunday is refused.
    expect(problems(config({ groups: ['Staff'] }, { night: { sat: ['22:00-02:30'] } }, 'America/New_York'))[0]).toMatch(
      /^schedules\.night\.sat\[0\]: 02:30 does not exist/,
    );
  });

  it('says what the limit is: at most 1,000 levels and 500 schedules', () => {
    const levels = Array.from({ length: 1001 }, (_, i) => ({ name: `L${i}`, groups: ['Staff'], doors: [12] }));
    expect(problems(config({ levels }))).toEqual(['access.levels: at most 1,000 levels per agent']);
    const schedules = Object.fromEntries(Array.from({ length: 501 }, (_, i) => [`S${i}`, { mon: ['08:00-09:00'] }]));
    expect(problems(config({ groups: ['Staff'] }, schedules))).toEqual(['schedules: at most 500 schedules']);
  });

  it('takes responders.everyDoor', () => {
    const options = parseConfig(config({ groups: ['Staff'], responders: { groups: ['Security'], everyDoor: true } }), 'test.yaml');
    expect(options.access.responders).toEqual({ groups: ['Security'], policies: [], everyDoor: true });
  });
});
