import type { AreaPolicy } from './areas.js';
import { parseDailyTime } from './dailyReset.js';
import { withProps } from './objects.js';

/** What the checks need to know of a configured door. */
export interface GroupDoorFacts {
  uuid: string;
  entryReader: boolean;
  exitReader: boolean;
  contact: boolean;
  /** The door has an unlock schedule (held unlocked for hours). */
  unlockSchedule: boolean;
}

/** An area as configured: its policy, its doors (those that lead into it) and its daily reset. */
export interface AreaOptions extends AreaPolicy {
  doors: readonly string[];
  /** "HH:MM" in the agent's time zone; null: reset by command only. */
  resetAt: string | null;
}

export interface InterlockOptions {
  doors: readonly string[];
}

/** A problem at a configuration path (`areas[0].doors[1]`), as the config loader reports them. */
export interface GroupProblem {
  path: string;
  message: string;
}

/**
 * The checks across doors, areas and interlocks, on the loader's plain options. Errors: an area with no door or no
 * entry reader, an unknown door, a door in two areas or in two interlocks (or twice in one), an interlock of fewer
 * than two doors, an area id given twice, a timed rule without seconds, an inout rule or a maximum with no exit
 * reader (nobody would ever leave), a maximum below 1, a reset time that is not HH:MM. Warnings: an exit reader on
 * a door of an area without a contact (its grants count as passages), an unlock schedule on an interlocked door
 * (it blocks the others for its hours, and waits for them as any unlock does). A two-person door in an interlock is allowed (docs/areas.md).
 */
export function doorGroupProblems(config: { doors: readonly GroupDoorFacts[]; areas: readonly AreaOptions[]; interlocks: readonly InterlockOptions[] }): {
  errors: GroupProblem[];
  warnings: GroupProblem[];
} {
  const errors: GroupProblem[] = [];
  const warnings: GroupProblem[] = [];
  const doors = new Map(config.doors.map((d, index) => [d.uuid.toLowerCase(), withProps(d, { index })]));
  const areaIds = new Map<string, number>();
  const doorArea = new Map<string, string>();

  config.areas.forEach((area, i) => {
    const at = `areas[${i}]`;
    const seenId = areaIds.get(area.id);
    if (seenId !== undefined) errors.push({ path: `${at}.id`, message: `same id as areas[${seenId}]` });
    else areaIds.set(area.id, i);
    if (area.doors.length === 0) errors.push({ path: `${at}.doors`, message: 'an area needs at least one door (the doors that lead into it)' });
    const known: Array<GroupDoorFacts & { index: number }> = [];
    area.doors.forEach((uuid, j) => {
      const path = `${at}.doors[${j}]`;
      const door = doors.get(uuid.toLowerCase());
      if (door === undefined) {
        errors.push({ path, message: `${uuid} is not a configured door` });
        return;
      }
      const other = doorArea.get(door.uuid.toLowerCase());
      if (other !== undefined) {
        errors.push({ path, message: `door ${uuid} is already in ${other}: a door leads into one area` });
        return;
      }
      doorArea.set(door.uuid.toLowerCase(), `${at}.doors`);
      known.push(door);
    });
    if (known.length > 0 && !known.some((d) => d.entryReader)) {
      errors.push({ path: `${at}.doors`, message: 'no door of this area has an entry reader: nobody could be counted in' });
    }
    const exits = known.some((d) => d.exitReader);
    const { mode, rule, seconds } = area.antiPassback;
    if (mode !== 'off' && rule === 'timed' && (seconds === null || !(seconds >= 1))) {
      errors.push({ path: `${at}.antiPassback.seconds`, message: 'the timed rule needs seconds (at least 1): the same holder not again within them' });
    }
    if (known.length > 0 && mode !== 'off' && rule === 'inout' && !exits) {
      errors.push({
        path: `${at}.antiPassback.rule`,
        message: 'inout needs an exit reader on a door of the area: without one nobody ever leaves, and every second entry is a violation',
      });
    }
    if (area.maxOccupancy !== null) {
      if (!(area.maxOccupancy >= 1)) errors.push({ path: `${at}.maxOccupancy`, message: 'at least 1' });
      else if (known.length > 0 && !exits) {
        errors.push({
          path: `${at}.maxOccupancy`,
          message: 'a maximum needs an exit reader on a door of the area: without one the count only grows until the reset',
        });
      }
    }
    if (area.resetAt !== null && parseDailyTime(area.resetAt) === null) {
      errors.push({ path: `${at}.resetAt`, message: `"${area.resetAt}": expected a local time "HH:MM" (00:00 to 23:59)` });
    }
    for (const door of known) {
      if (door.exitReader && !door.contact) {
        warnings.push({
          path: `doors[${door.index}].readers.exit`,
          message: `an exit reader on a door without a contact: ${at} counts each grant here as a passage (nothing tells whether the door was opened)`,
        });
      }
    }
  });

  const doorInterlock = new Map<string, string>();
  config.interlocks.forEach((interlock, i) => {
    const at = `interlocks[${i}]`;
    if (interlock.doors.length < 2) errors.push({ path: `${at}.doors`, message: 'an interlock needs at least two doors' });
    const own = new Set<string>();
    interlock.doors.forEach((uuid, j) => {
      const path = `${at}.doors[${j}]`;
      const key = uuid.toLowerCase();
      const door = doors.get(key);
      if (door === undefined) {
        errors.push({ path, message: `${uuid} is not a configured door` });
        return;
      }
      if (own.has(key)) {
        errors.push({ path, message: `door ${uuid} is listed twice` });
        return;
      }
      own.add(key);
      const other = doorInterlock.get(key);
      if (other !== undefined) {
        errors.push({ path, message: `door ${uuid} is already in ${other}: a door is in one interlock at most` });
        return;
      }
      doorInterlock.set(key, `${at}.doors`);
      if (door.unlockSchedule) {
        warnings.push({
          path: `doors[${door.index}].unlockSchedule`,
          message: `held unlocked by its schedule, this door keeps the other doors of ${at} locked during its hours; when its hours start (or resume) while another of them is unlocked or open, this door stays locked until that one has locked and closed`,
        });
      }
    });
  });
  return { errors, warnings };
}
