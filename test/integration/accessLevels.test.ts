import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOOR_UUID, SECOND_DOOR_UUID, runCli, tempDir, writeConfig } from '../support/cli.js';
import { exampleSnapshot, writeSnapshot } from '../support/snapshot.js';

// Two doors on one agent: the Front door (resource 12) and the Back door (13), as the server room. The example
// directory: Alice (101) and Bob (102, suspended) in Staff, Dave (104) in Contractors, Erin (105) holds the policy
// Night shift. Berlin time; 2026-11-23 is a Monday, 2026-12-24 a Thursday, 2026-11-28 a Saturday.
const tmp = tempDir();
afterAll(tmp.cleanup);

const ALICE = '4213578';
const DAVE = '4213580';
const ERIN = '4213581';

const ACCESS = `
  groups: []
  holidays: [2026-12-25]
  levels:
    - { name: Staff front door, groups: [Staff], doors: [Front door], schedule: office }
    - { name: Contractors 2026, groups: [Contractors], doors: [13], from: 2026-01-01, until: 2026-06-30 }
    - { name: Night shift, policies: [Night shift], doors: [Front door, ${SECOND_DOOR_UUID}], schedule: nights }`;

const SCHEDULES = `schedules:
  office:
    mon: ["07:30-18:00"]
    tue: ["07:30-18:00"]
    wed: ["07:30-18:00"]
    thu: ["07:30-18:00"]
    fri: ["07:30-18:00"]
  nights:
    mon: ["22:00-06:00"]
    tue: ["22:00-06:00"]
    wed: ["22:00-06:00"]
    thu: ["22:00-06:00"]
    fri: ["22:00-06:00"]
    sat: ["22:00-06:00"]
    holidays: open`;

let config: string;

beforeAll(() => {
  const dir = join(tmp.path, 'agent');
  mkdirSync(dir);
  config = writeConfig(dir, { twoDoors: true, access: `${ACCESS}\n`, extra: SCHEDULES });
  const imported = runCli(['import', writeSnapshot(tmp.path, 'snapshot.json', exampleSnapshot()), '--config', config]);
  expect(imported.stderr).toBe('');
  expect(imported.status).toBe(0);
});

interface CheckOutput {
  granted: boolean;
  reason: string | null;
  level?: string;
  who?: string;
  door_name: string;
  at: string;
  holders: Array<{ email_id?: number; granted: boolean; reason: string | null; levels?: string[] }>;
}

function check(card: string, door: string, at: string): CheckOutput & { status: number | null } {
  const r = runCli(['check', card, '--door', door, '--at', at, '--config', config]);
  expect(r.stderr).toBe('');
  return { ...(JSON.parse(r.stdout) as CheckOutput), status: r.status };
}

describe('access levels at two doors of one agent (door-agent check)', () => {
  it('the server room (Back door) refuses a front-door user: wrong_door, explained', () => {
    const out = check(ALICE, 'Back door', '2026-11-23 10:00');
    expect(out).toMatchObject({ granted: false, reason: 'wrong_door', status: 1, door_name: 'Back door' });
    expect(out.holders[0]!.levels).toEqual([
      'level Staff front door [config] via group Staff: Front door; schedule office: mon 07:30-18:00; tue 07:30-18:00; wed 07:30-18:00; thu 07:30-18:00; fri 07:30-18:00 (holidays closed) -> does not cover this door',
    ]);
  });

  it('the front door admits them in office hours, names the level and who, by the door name, uuid or resourceId', () => {
    for (const door of ['Front door', DOOR_UUID, '12']) {
      expect(check(ALICE, door, '2026-11-23 10:00')).toMatchObject({ granted: true, level: 'Staff front door', who: 'Alice Adams', status: 0 });
    }
  });

  it('check --at "2026-12-24 19:00" (local time): outside the schedule, and why', () => {
    const out = check(ALICE, 'Front door', '2026-12-24 19:00');
    expect(out).toMatchObject({ granted: false, reason: 'outside_schedule', at: '2026-12-24T18:00:00.000Z' });
    expect(out.holders[0]!.levels![0]).toMatch(/^level Staff front door \[config\] via group Staff: .* -> outside its schedule at this time$/);
  });

  it('a holiday-closed schedule refuses on a configured holiday (holiday); a holiday-open one admits', () => {
    expect(check(ALICE, 'Front door', '2026-12-25 10:00')).toMatchObject({ granted: false, reason: 'holiday' });
    // Friday 2026-12-25 23:00: the night shift runs on holidays.
    expect(check(ERIN, 'Back door', '2026-12-25 23:00')).toMatchObject({ granted: true, level: 'Night shift' });
  });

  it('an overnight level across midnight: Monday 23:00 and Tuesday 05:59 admitted, Tuesday 06:00 refused', () => {
    expect(check(ERIN, 'Back door', '2026-11-23 23:00').granted).toBe(true);
    expect(check(ERIN, 'Back door', '2026-11-24 05:59').granted).toBe(true);
    expect(check(ERIN, 'Back door', '2026-11-24 06:00')).toMatchObject({ granted: false, reason: 'outside_schedule' });
  });

  it('an overnight level across the spring daylight-saving change (Sunday 2027-03-28, 02:00 -> 03:00) ends at 06:00 local', () => {
    expect(check(ERIN, 'Front door', '2027-03-28 01:59')).toMatchObject({ granted: true, at: '2027-03-28T00:59:00.000Z' });
    expect(check(ERIN, 'Front door', '2027-03-28 05:59')).toMatchObject({ granted: true, at: '2027-03-28T03:59:00.000Z' });
    expect(check(ERIN, 'Front door', '2027-03-28 06:00')).toMatchObject({ granted: false, reason: 'outside_schedule', at: '2027-03-28T04:00:00.000Z' });
  });

  it('a level past its date range: level_expired', () => {
    expect(check(DAVE, 'Back door', '2026-06-30 23:59')).toMatchObject({ granted: true, level: 'Contractors 2026' });
    expect(check(DAVE, 'Back door', '2026-07-01 00:00')).toMatchObject({ granted: false, reason: 'level_expired' });
  });

  it('refuses an --at that does not exist in the agent time zone, naming it', () => {
    const r = runCli(['check', ALICE, '--door', 'Front door', '--at', '2027-03-28 02:30', '--config', config]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--at "2027-03-28 02:30" is not a time that exists in Europe/Berlin');
    const unknownDoor = runCli(['check', ALICE, '--door', 'Vault', '--config', config]);
    expect(unknownDoor.stderr).toContain('--door Vault is not a configured door (uuid, name or resourceId)');
  });
});

describe('door-agent status and config check list each door levels', () => {
  it('status: every door with its levels and whether each is in force now', () => {
    const r = runCli(['status', '--json', '--config', config]);
    expect(r.status).toBe(0);
    const status = JSON.parse(r.stdout) as {
      levels: { doors: Record<string, Array<{ name: string; source: string; inForce: boolean }>>; serviceLevels: number | null };
    };
    expect(status.levels.serviceLevels).toBeNull();
    expect(status.levels.doors[DOOR_UUID]!.map((l) => l.name)).toEqual(['Staff front door', 'Night shift']);
    expect(status.levels.doors[SECOND_DOOR_UUID]!.map((l) => l.name)).toEqual(['Contractors 2026', 'Night shift']);
    // Today is past the contractors' date range.
    expect(status.levels.doors[SECOND_DOOR_UUID]![0]).toMatchObject({ source: 'config', inForce: false });
    const text = runCli(['status', '--config', config]).stdout;
    expect(text).toContain('access levels (none from the service):');
    expect(text).toMatch(/Contractors 2026 \[config\] NOT in force now: no longer in force \(after its end\)/);
  });

  it('config check: the same list', () => {
    const r = runCli(['config', 'check', '--config', config]);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/ {4}Front door: \n {6}Staff front door \[config\] .*\n {6}Night shift \[config\]/);
  });
});
