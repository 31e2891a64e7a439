import { describe, expect, it } from 'vitest';
import { compileLevels, explainLevels, levelsAtDoor, type AccessLevel } from '../../src/core/accessLevels.js';
import { decide, type DecisionContext, type DecisionRequest, type UserHolder } from '../../src/core/decision.js';
import { localTimeIn } from '../../src/core/schedule.js';
import { compileWeeklySchedule, type WeeklySchedule } from '../../src/core/weeklySchedule.js';

const FRONT = 'front-uuid';
const SERVER = 'server-uuid';
const DOORS = [FRONT, SERVER];

function schedule(spec: unknown): WeeklySchedule {
  const result = compileWeeklySchedule(spec);
  if ('problems' in result) throw new Error(JSON.stringify(result.problems));
  return result.schedule;
}

const officeHours = schedule({ mon: ['07:30-18:00'], tue: ['07:30-18:00'], wed: ['07:30-18:00'], thu: ['07:30-18:00'], fri: ['07:30-18:00'] });
const nightShift = schedule({ mon: ['22:00-06:00'], tue: ['22:00-06:00'], holidays: 'open' });

const levels: AccessLevel[] = [
  { name: 'Staff front door', source: 'config', groups: ['Staff'], policies: [], doors: [FRONT], schedule: officeHours, scheduleName: 'office' },
  { name: 'IT server room', source: 'config', groups: ['IT'], policies: [], doors: [SERVER], schedule: null },
  { name: 'Night cleaning', source: 'service', groups: [], policies: ['Cleaning'], doors: [FRONT, SERVER], schedule: nightShift },
  {
    name: 'Contractor 2026',
    source: 'config',
    groups: ['Contractors'],
    policies: [],
    doors: [FRONT],
    schedule: null,
    fromDate: '2026-03-01',
    untilDate: '2026-06-30',
  },
  {
    name: 'Auditor',
    source: 'service',
    groups: [],
    policies: ['Audit'],
    doors: [SERVER],
    schedule: null,
    startAt: Date.parse('2026-07-01T08:00:00Z'),
    endAt: Date.parse('2026-07-01T12:00:00Z'),
  },
];

const holidays = new Set<string>();
const ctx = (extra: Partial<DecisionContext> = {}): DecisionContext => ({
  levels: compileLevels(levels, DOORS),
  responders: null,
  holidays,
  localTime: localTimeIn('Europe/Berlin'),
  ...extra,
});

function user(groups: string[], policies: string[] = [], over: Partial<UserHolder> = {}): UserHolder {
  return { kind: 'user', emailId: 1, tag: 'USER', adStatus: 'ACTIVE', groups, policies, ...over };
}

function at(door: string, iso: string, over: Partial<DecisionRequest> = {}): DecisionRequest {
  return { kind: 'card', doorResourceId: door === FRONT ? 1 : 2, doorUuid: door, now: Date.parse(iso), ...over };
}

// Wednesday 2026-07-01, 10:00 in Berlin (CEST, +02:00).
const WED_10 = '2026-07-01T08:00:00Z';

describe('per-door access levels', () => {
  it('two doors on one agent: the server room refuses a front-door user (wrong_door), the front door admits them', () => {
    expect(decide(at(FRONT, WED_10), [user(['Staff'])], ctx())).toMatchObject({ granted: true, level: 'Staff front door' });
    expect(decide(at(SERVER, WED_10), [user(['Staff'])], ctx())).toMatchObject({ granted: false, reason: 'wrong_door' });
    expect(decide(at(SERVER, WED_10), [user(['IT'])], ctx())).toMatchObject({ granted: true, level: 'IT server room' });
    expect(decide(at(FRONT, WED_10), [user(['IT'])], ctx())).toMatchObject({ granted: false, reason: 'wrong_door' });
  });

  it('a user who holds no level anywhere is not_authorized', () => {
    expect(decide(at(FRONT, WED_10), [user(['Visitors'])], ctx())).toMatchObject({ granted: false, reason: 'not_authorized' });
  });

  it('a weekly schedule at minute resolution: 07:29 refused, 07:30 admitted, 18:00 refused, Saturday refused', () => {
    const staff = [user(['Staff'])];
    expect(decide(at(FRONT, '2026-07-01T05:29:00Z'), staff, ctx()).reason).toBe('outside_schedule');
    expect(decide(at(FRONT, '2026-07-01T05:30:00Z'), staff, ctx()).granted).toBe(true);
    expect(decide(at(FRONT, '2026-07-01T16:00:00Z'), staff, ctx()).reason).toBe('outside_schedule');
    expect(decide(at(FRONT, '2026-07-04T08:00:00Z'), staff, ctx()).reason).toBe('outside_schedule');
  });

  it('a holiday-closed schedule refuses on a holiday (holiday); a holiday-open one and an always level do not', () => {
    const onHoliday = ctx({ holidays: new Set(['2026-07-01']) });
    expect(decide(at(FRONT, WED_10), [user(['Staff'])], onHoliday)).toMatchObject({ granted: false, reason: 'holiday' });
    expect(decide(at(SERVER, WED_10), [user(['IT'])], onHoliday).granted).toBe(true);
    // Monday 2026-06-29 23:00 local, a holiday: the night shift's schedule is open on holidays.
    const mondayNight = ctx({ holidays: new Set(['2026-06-29']) });
    expect(decide(at(SERVER, '2026-06-29T21:00:00Z'), [user([], ['Cleaning'])], mondayNight)).toMatchObject({ granted: true, level: 'Night cleaning' });
  });

  it('an overnight level runs across midnight: Monday 23:00 and Tuesday 05:59 admitted, Tuesday 06:00 refused', () => {
    const cleaner = [user([], ['Cleaning'])];
    expect(decide(at(FRONT, '2026-06-29T21:00:00Z'), cleaner, ctx()).granted).toBe(true);
    expect(decide(at(FRONT, '2026-06-30T03:59:00Z'), cleaner, ctx()).granted).toBe(true);
    expect(decide(at(FRONT, '2026-06-30T04:00:00Z'), cleaner, ctx()).reason).toBe('outside_schedule');
  });

  it('a date range in local dates (both inclusive) and an instant range from the service', () => {
    const contractor = [user(['Contractors'])];
    expect(decide(at(FRONT, '2026-02-28T22:59:00Z'), contractor, ctx()).reason).toBe('level_not_yet_valid'); // 23:59 on 28 Feb, CET
    expect(decide(at(FRONT, '2026-02-28T23:00:00Z'), contractor, ctx()).granted).toBe(true); // 00:00 on 1 March
    expect(decide(at(FRONT, '2026-06-30T21:59:00Z'), contractor, ctx()).granted).toBe(true); // 23:59 on 30 June, CEST
    expect(decide(at(FRONT, '2026-06-30T22:00:00Z'), contractor, ctx()).reason).toBe('level_expired');
    const auditor = [user([], ['Audit'])];
    expect(decide(at(SERVER, '2026-07-01T07:59:59Z'), auditor, ctx()).reason).toBe('level_not_yet_valid');
    expect(decide(at(SERVER, '2026-07-01T08:00:00Z'), auditor, ctx()).granted).toBe(true);
    expect(decide(at(SERVER, '2026-07-01T12:00:00Z'), auditor, ctx()).reason).toBe('level_expired');
  });

  it('a time-bound level refuses on an untrusted clock; an always level does not', () => {
    expect(decide(at(FRONT, '2001-01-03T08:00:00Z'), [user(['Staff'])], ctx()).reason).toBe('clock_untrusted');
    expect(decide(at(SERVER, '2001-01-03T08:00:00Z'), [user(['IT'])], ctx()).granted).toBe(true);
  });

  it('one level in force is enough: the most telling refusal is reported only when none is', () => {
    const both = [user(['Staff'], ['Cleaning'])];
    // Wednesday 23:00: office hours are over, the night shift does not run on Wednesday.
    expect(decide(at(FRONT, '2026-07-01T21:00:00Z'), both, ctx()).reason).toBe('outside_schedule');
    // Monday 23:00: the night shift admits.
    expect(decide(at(FRONT, '2026-06-29T21:00:00Z'), both, ctx())).toMatchObject({ granted: true, level: 'Night cleaning' });
  });
});

describe('responders in a lockdown', () => {
  const responders = { groups: new Set(['Security']), policies: new Set<string>() };
  it('pass only at doors their levels cover, in force, by default', () => {
    const guard = [user(['Staff', 'Security'])];
    const c = ctx({ responders });
    expect(decide(at(FRONT, WED_10, { lockdown: true }), guard, c).granted).toBe(true);
    expect(decide(at(SERVER, WED_10, { lockdown: true }), guard, c).reason).toBe('wrong_door');
    expect(decide(at(FRONT, '2026-07-04T08:00:00Z', { lockdown: true }), guard, c).reason).toBe('outside_schedule');
  });

  it('pass at every door, at any time, with responders.everyDoor (still active USERs)', () => {
    const c = ctx({ responders: { ...responders, everyDoor: true } });
    expect(decide(at(SERVER, '2026-07-04T03:00:00Z', { lockdown: true }), [user(['Security'])], c)).toMatchObject({
      granted: true,
      level: 'responders (every door)',
    });
    expect(decide(at(SERVER, WED_10, { lockdown: true }), [user(['Security'], [], { adStatus: 'SUSPENDED' })], c).reason).toBe('user_suspended');
    // Outside a lockdown, everyDoor gives nothing.
    expect(decide(at(SERVER, WED_10), [user(['Security'])], c).reason).toBe('not_authorized');
  });
});

describe('explanations', () => {
  const t = (iso: string, holiday = false) => {
    const local = localTimeIn('Europe/Berlin')(Date.parse(iso));
    return { now: Date.parse(iso), minuteOfWeek: local.weekday * 1440 + local.minuteOfDay, date: local.date, holiday, clockTrusted: true };
  };
  const name = (uuid: string) => (uuid === FRONT ? 'Front door' : 'Server room');

  it('lists each level the user holds, whether it covers the door and is in force, in words', () => {
    const index = compileLevels(levels, DOORS);
    const lines = explainLevels(index, SERVER, { groups: ['Staff'], policies: ['Cleaning'] }, t('2026-12-24T18:00:00Z', true), name).map((e) => e.text);
    expect(lines).toEqual([
      'level Staff front door [config] via group Staff: Front door; schedule office: mon 07:30-18:00; tue 07:30-18:00; wed 07:30-18:00; thu 07:30-18:00; fri 07:30-18:00 (holidays closed) -> does not cover this door',
      'level Night cleaning [service] via policy Cleaning: Front door, Server room; mon 22:00-06:00; tue 22:00-06:00 (holidays open) -> outside its schedule at this time',
    ]);
  });

  it('levelsAtDoor: the levels covering a door and whether each is in force now (status)', () => {
    const index = compileLevels(levels, DOORS);
    const atServer = levelsAtDoor(index, SERVER, t(WED_10)).map((l) => [l.level.name, l.refusal]);
    expect(atServer).toEqual([
      ['IT server room', null],
      ['Night cleaning', 'outside_schedule'],
      ['Auditor', null],
    ]);
  });
});
