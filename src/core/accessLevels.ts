import { scheduleOpenAt, describeSchedule, type WeeklySchedule } from './weeklySchedule.js';

/**
 * Access levels: who (user groups or policy names), where (doors of this agent), when (a weekly schedule, none =
 * always) and optionally between two dates. A door admits a user who holds at least one level for that door that
 * is in force. Compiled once per change into per-door maps (compileLevels), so a tap looks up only the user's own
 * groups and policies.
 */
export interface AccessLevel {
  name: string;
  /** config: access.levels; service: a policy the service defines as a level; every_door: access.groups/policies. */
  source: 'config' | 'service' | 'every_door';
  groups: readonly string[];
  policies: readonly string[];
  /** The door uuids (lower case) it covers, or every door of the agent. */
  doors: readonly string[] | 'all';
  /** The service resource group the doors came from, when named so (for explanations). */
  resourceGroup?: string;
  /** null: always. */
  schedule: WeeklySchedule | null;
  scheduleName?: string;
  /** Local dates YYYY-MM-DD, both inclusive (config levels). */
  fromDate?: string;
  untilDate?: string;
  /** Instants, start inclusive, end exclusive (service levels). */
  startAt?: number | null;
  endAt?: number | null;
}

export type LevelRefusal = 'not_authorized' | 'wrong_door' | 'level_not_yet_valid' | 'level_expired' | 'holiday' | 'outside_schedule' | 'clock_untrusted';

/** When a level is asked about: the instant, and the agent's local minute of the week, date and holiday. */
export interface LevelTime {
  now: number;
  /** 0 = Sunday 00:00 local. */
  minuteOfWeek: number;
  /** Local date YYYY-MM-DD. */
  date: string;
  holiday: boolean;
  /** The wall clock is believed: a level bound to a schedule or dates refuses (clock_untrusted) otherwise. */
  clockTrusted: boolean;
}

interface DoorLevels {
  byGroup: Map<string, AccessLevel[]>;
  byPolicy: Map<string, AccessLevel[]>;
}

/** Levels compiled for lookups by door and by the user's groups and policies. */
export interface LevelIndex {
  readonly levels: readonly AccessLevel[];
  readonly byDoor: ReadonlyMap<string, DoorLevels>;
  /** The levels of every door (access.groups/policies), whatever door asks. */
  readonly everyDoor: DoorLevels;
  /** Groups and policies that hold a level at some door (a user with one, refused here, is at the wrong door). */
  readonly anyGroup: ReadonlySet<string>;
  readonly anyPolicy: ReadonlySet<string>;
}

function push(map: Map<string, AccessLevel[]>, key: string, level: AccessLevel): void {
  const list = map.get(key);
  if (list) {
    if (!list.includes(level)) list.push(level);
  } else map.set(key, [level]);
}

export function compileLevels(levels: readonly AccessLevel[], doorUuids: readonly string[]): LevelIndex {
  const byDoor = new Map<string, DoorLevels>(doorUuids.map((uuid) => [uuid, { byGroup: new Map(), byPolicy: new Map() }]));
  const everyDoor: DoorLevels = { byGroup: new Map(), byPolicy: new Map() };
  const anyGroup = new Set<string>();
  const anyPolicy = new Set<string>();
  for (const level of levels) {
    if (level.doors === 'all') {
      for (const g of level.groups) push(everyDoor.byGroup, g, level);
      for (const p of level.policies) push(everyDoor.byPolicy, p, level);
    }
    const doors = level.doors === 'all' ? [] : level.doors;
    if (level.doors !== 'all' && doors.length === 0) continue;
    for (const uuid of doors) {
      const door = byDoor.get(uuid);
      if (!door) continue;
      for (const g of level.groups) push(door.byGroup, g, level);
      for (const p of level.policies) push(door.byPolicy, p, level);
    }
    for (const g of level.groups) anyGroup.add(g);
    for (const p of level.policies) anyPolicy.add(p);
  }
  return { levels, byDoor, everyDoor, anyGroup, anyPolicy };
}

const ORDER: readonly LevelRefusal[] = [
  'clock_untrusted',
  'not_authorized',
  'wrong_door',
  'level_not_yet_valid',
  'level_expired',
  'holiday',
  'outside_schedule',
];

/** Whether a level is in force at `t` (null), or why not. */
function levelInForce(level: AccessLevel, t: LevelTime): LevelRefusal | null {
  const timeBound = level.schedule !== null || level.fromDate !== undefined || level.untilDate !== undefined || level.startAt != null || level.endAt != null;
  if (!timeBound) return null;
  if (!t.clockTrusted) return 'clock_untrusted';
  if ((level.fromDate !== undefined && t.date < level.fromDate) || (level.startAt != null && t.now < level.startAt)) return 'level_not_yet_valid';
  if ((level.untilDate !== undefined && t.date > level.untilDate) || (level.endAt != null && t.now >= level.endAt)) return 'level_expired';
  if (level.schedule === null) return null;
  if (t.holiday && level.schedule.holidays === 'closed') return 'holiday';
  return scheduleOpenAt(level.schedule, t.minuteOfWeek) ? null : 'outside_schedule';
}

export interface UserMembership {
  groups: readonly string[];
  policies: readonly string[];
}

/**
 * The level that admits this user at this door now, or the most telling refusal: not_authorized (no level
 * anywhere), wrong_door (levels, none for this door), or why none of this door's levels is in force.
 */
export function levelFor(index: LevelIndex, doorUuid: string, user: UserMembership, t: LevelTime): { level: AccessLevel } | { reason: LevelRefusal } {
  const door = index.byDoor.get(doorUuid);
  let reason: LevelRefusal | null = null;
  let candidates = false;
  const consider = (list: AccessLevel[] | undefined): AccessLevel | null => {
    if (!list) return null;
    for (const level of list) {
      candidates = true;
      const why = levelInForce(level, t);
      if (why === null) return level;
      if (reason === null || ORDER.indexOf(why) < ORDER.indexOf(reason)) reason = why;
    }
    return null;
  };
  for (const levels of door ? [door, index.everyDoor] : [index.everyDoor]) {
    for (const g of user.groups) {
      const level = consider(levels.byGroup.get(g));
      if (level) return { level };
    }
    for (const p of user.policies) {
      const level = consider(levels.byPolicy.get(p));
      if (level) return { level };
    }
  }
  if (candidates && reason !== null) return { reason };
  const elsewhere = user.groups.some((g) => index.anyGroup.has(g)) || user.policies.some((p) => index.anyPolicy.has(p));
  return { reason: elsewhere ? 'wrong_door' : 'not_authorized' };
}

export interface LevelExplanation {
  level: AccessLevel;
  /** Covers the door asked about. */
  coversDoor: boolean;
  /** null: it applies (covers the door and is in force). */
  refusal: LevelRefusal | null;
  /** One line: what the level is and why it did or did not apply. */
  text: string;
}

/** A level in words: where and when. */
export function describeLevel(level: AccessLevel, doorName: (uuid: string) => string): string {
  const where = level.doors === 'all' ? 'every door' : level.doors.map(doorName).join(', ') || 'no door of this agent';
  const group = level.resourceGroup ? ` (resource group ${level.resourceGroup})` : '';
  const when =
    level.schedule === null
      ? 'always'
      : level.scheduleName
        ? `schedule ${level.scheduleName}: ${describeSchedule(level.schedule)}`
        : describeSchedule(level.schedule);
  const dates: string[] = [];
  if (level.fromDate) dates.push(`from ${level.fromDate}`);
  if (level.untilDate) dates.push(`until ${level.untilDate}`);
  if (level.startAt != null) dates.push(`from ${new Date(level.startAt).toISOString()}`);
  if (level.endAt != null) dates.push(`until ${new Date(level.endAt).toISOString()}`);
  return `${where}${group}; ${when}${dates.length ? `; ${dates.join(' ')}` : ''}`;
}

const REFUSAL_TEXT: Record<LevelRefusal, string> = {
  clock_untrusted: 'the clock is not trusted (a time-bound level needs NTP or an RTC)',
  not_authorized: 'not held',
  wrong_door: 'does not cover this door',
  level_not_yet_valid: 'not yet in force (before its start)',
  level_expired: 'no longer in force (after its end)',
  holiday: 'closed on holidays, and this is a holiday',
  outside_schedule: 'outside its schedule at this time',
};

/** Each level the user holds (by group or policy), whether it covers `doorUuid`, and why it applies or not. */
export function explainLevels(index: LevelIndex, doorUuid: string, user: UserMembership, t: LevelTime, doorName: (uuid: string) => string): LevelExplanation[] {
  const out: LevelExplanation[] = [];
  for (const level of index.levels) {
    const via = level.groups.find((g) => user.groups.includes(g)) ?? level.policies.find((p) => user.policies.includes(p));
    if (via === undefined) continue;
    const viaText = level.groups.includes(via) ? `group ${via}` : `policy ${via}`;
    const coversDoor = level.doors === 'all' || level.doors.includes(doorUuid);
    const refusal: LevelRefusal | null = coversDoor ? levelInForce(level, t) : 'wrong_door';
    const verdict = refusal === null ? 'applies' : REFUSAL_TEXT[refusal];
    out.push({ level, coversDoor, refusal, text: `level ${level.name} [${level.source}] via ${viaText}: ${describeLevel(level, doorName)} -> ${verdict}` });
  }
  return out;
}

/** The levels covering a door, and whether each is in force at `t` (status). */
export function levelsAtDoor(index: LevelIndex, doorUuid: string, t: LevelTime): Array<{ level: AccessLevel; refusal: LevelRefusal | null }> {
  return index.levels.filter((level) => level.doors === 'all' || level.doors.includes(doorUuid)).map((level) => ({ level, refusal: levelInForce(level, t) }));
}

export const LEVEL_REFUSAL_TEXT = REFUSAL_TEXT;
