import { parseServiceTime } from './schedule.js';
import { compileWeeklySchedule, clockText, WEEKDAY_KEYS, type WeeklySchedule } from './weeklySchedule.js';

/**
 * The restrictive part of a directory answer the mass-removal guard refused (docs/sync.md, "Mass-removal guard"):
 * what in it takes access away from users the door already holds, judged against what the door holds now. It
 * applies at once; what the guard exists for (the users the answer no longer lists) and everything that grants or
 * widens wait for the operator. Pure: the store reads the rows and writes the result.
 */

/** A card or PIN as the cache holds it or an answer gives it (epoch ms; from inclusive, until exclusive; null: unbounded). */
export interface CredentialFacts {
  number: string;
  validFrom: number | null;
  validUntil: number | null;
}

/** A user's facts a decision reads, as the cache holds them or an answer gives them. */
export interface UserFacts {
  /** Who the user is (a restored service gives a vanished user's email_id to someone else). null: not known. */
  email: string | null;
  tag: 'USER' | 'GUEST';
  adStatus: string;
  groups: readonly string[];
  policies: readonly string[];
  credentials: readonly CredentialFacts[];
}

/** What changes for one user: their facts narrowed, credentials removed, validity dates shortened. */
export interface UserRestriction {
  tag: 'USER' | 'GUEST';
  adStatus: string;
  groups: string[];
  policies: string[];
  /** Newly suspended (any status but ACTIVE where the cache held ACTIVE). */
  suspended: boolean;
  /** Fewer groups or policies, or USER become GUEST (who enters through guest links only). */
  narrowed: boolean;
  /** Numbers the answer no longer gives this user. */
  removed: string[];
  /** Credentials kept with a shorter validity: the intersection of the held dates and the answer's. */
  shortened: CredentialFacts[];
}

const ACTIVE = 'ACTIVE';

const later = (a: number | null, b: number | null): number | null => (a === null ? b : b === null ? a : Math.max(a, b));
const earlier = (a: number | null, b: number | null): number | null => (a === null ? b : b === null ? a : Math.min(a, b));

/** The names of `held` the answer keeps, in the held order: a user never gains one here. */
function kept(held: readonly string[], answered: readonly string[]): string[] {
  const names = new Set(answered);
  return held.filter((name) => names.has(name));
}

/**
 * The restrictive part of the answer for one user the door holds, or null when nothing in it restricts them.
 * `removeCredentials` false: the credentials the answer no longer gives stay (their removal is itself a mass
 * removal, see restrictiveRemovalsAllowed). A user whose e-mail differs is another person under the same
 * email_id (a restored service issues ids again): nothing of theirs applies before the operator accepts.
 */
export function restrictUser(held: UserFacts, answered: UserFacts, options: { removeCredentials: boolean }): UserRestriction | null {
  if (held.email !== null && answered.email !== null && held.email.toLowerCase() !== answered.email.toLowerCase()) return null;
  const suspended = held.adStatus === ACTIVE && answered.adStatus !== ACTIVE;
  const tag = held.tag === 'USER' && answered.tag === 'GUEST' ? 'GUEST' : held.tag;
  const groups = kept(held.groups, answered.groups);
  const policies = kept(held.policies, answered.policies);
  const narrowed = tag !== held.tag || groups.length < held.groups.length || policies.length < held.policies.length;
  const given = new Map(answered.credentials.map((c) => [c.number, c]));
  const removed: string[] = [];
  const shortened: CredentialFacts[] = [];
  for (const credential of held.credentials) {
    const answer = given.get(credential.number);
    if (answer === undefined) {
      if (options.removeCredentials) removed.push(credential.number);
      continue;
    }
    const validFrom = later(credential.validFrom, answer.validFrom);
    const validUntil = earlier(credential.validUntil, answer.validUntil);
    if (validFrom !== credential.validFrom || validUntil !== credential.validUntil) shortened.push({ number: credential.number, validFrom, validUntil });
  }
  if (!suspended && !narrowed && removed.length === 0 && shortened.length === 0) return null;
  return { tag, adStatus: suspended ? answered.adStatus : held.adStatus, groups, policies, suspended, narrowed, removed, shortened };
}

/**
 * Whether the restrictive part may remove `removed` of the `total` credentials the sync manages: past
 * maxRemovalRatio it is a mass removal itself (a service listing everyone without their cards), which waits like
 * any other. null: the operator allowed any removal.
 */
export function restrictiveRemovalsAllowed(removed: number, total: number, maxRemovalRatio: number | null): boolean {
  return maxRemovalRatio === null || removed === 0 || removed / total <= maxRemovalRatio;
}

/** An access level the service defines, in the shape it sends (GET /directory `levels`). */
export interface ServiceLevelFacts {
  name: string;
  resource_ids: number[];
  resource_group?: string | null;
  schedule?: unknown;
  start_time?: string | null;
  end_time?: string | null;
}

export interface ResourceGroupFacts {
  name: string;
  resource_ids: number[];
}

export interface ServiceLevelsFacts {
  levels: ServiceLevelFacts[];
  resourceGroups: ResourceGroupFacts[];
}

/**
 * The service's levels and resource groups narrowed by the answer's: a level or group the answer drops is dropped,
 * one in both keeps only the doors both give, the later start, the earlier end and the minutes both schedules
 * open (holidays closed if either says so). A level or group only the answer has waits. `narrowed`: how many
 * levels and groups changed; 0 leaves the held value as it was.
 */
export function restrictLevels(held: ServiceLevelsFacts | null, answered: ServiceLevelsFacts | null): { levels: ServiceLevelsFacts | null; narrowed: number } {
  if (held === null) return { levels: null, narrowed: 0 };
  const answeredLevels = new Map((answered?.levels ?? []).map((l) => [l.name, l]));
  const answeredGroups = new Map((answered?.resourceGroups ?? []).map((g) => [g.name, g]));
  let narrowed = 0;
  const levels: ServiceLevelFacts[] = [];
  for (const level of held.levels) {
    const answer = answeredLevels.get(level.name);
    const next = answer ? narrowLevel(level, answer) : null;
    if (next !== level) narrowed++;
    if (next !== null) levels.push(next);
  }
  const resourceGroups: ResourceGroupFacts[] = [];
  for (const group of held.resourceGroups) {
    const answer = answeredGroups.get(group.name);
    if (!answer) {
      narrowed++;
      continue;
    }
    const ids = keptIds(group.resource_ids, answer.resource_ids);
    if (ids.length < group.resource_ids.length) narrowed++;
    resourceGroups.push(ids.length < group.resource_ids.length ? { name: group.name, resource_ids: ids } : group);
  }
  return narrowed === 0 ? { levels: held, narrowed } : { levels: { levels, resourceGroups }, narrowed };
}

function keptIds(held: readonly number[], answered: readonly number[]): number[] {
  const ids = new Set(answered);
  return held.filter((id) => ids.has(id));
}

/** `level` itself when the answer takes nothing from it, a narrower copy, or null when nothing of it is left. */
function narrowLevel(level: ServiceLevelFacts, answer: ServiceLevelFacts): ServiceLevelFacts | null {
  const ids = keptIds(level.resource_ids, answer.resource_ids);
  const start = laterTime(level.start_time ?? null, answer.start_time ?? null);
  const end = earlierTime(level.end_time ?? null, answer.end_time ?? null);
  if (start !== null && end !== null && parseServiceTime(end)! <= parseServiceTime(start)!) return null;
  const schedule = narrowSchedule(level.schedule ?? null, answer.schedule ?? null);
  if (schedule === 'never') return null;
  const same =
    ids.length === level.resource_ids.length &&
    start === (level.start_time ?? null) &&
    end === (level.end_time ?? null) &&
    schedule === (level.schedule ?? null);
  if (same) return level;
  const out: ServiceLevelFacts = { name: level.name, resource_ids: ids, schedule, start_time: start, end_time: end };
  if (level.resource_group != null) out.resource_group = level.resource_group;
  return out;
}

const laterTime = (a: string | null, b: string | null): string | null =>
  a === null ? b : b === null ? a : parseServiceTime(b)! > parseServiceTime(a)! ? b : a;
const earlierTime = (a: string | null, b: string | null): string | null =>
  a === null ? b : b === null ? a : parseServiceTime(b)! < parseServiceTime(a)! ? b : a;

/** The held schedule (the same value) when the answer's takes nothing from it, the minutes both open, or 'never'. */
function narrowSchedule(held: unknown, answer: unknown): unknown {
  if (answer === null) return held;
  if (JSON.stringify(held) === JSON.stringify(answer)) return held;
  const b = compileWeeklySchedule(answer);
  if (!('schedule' in b)) return held; // validated by the sync that brought it; never widened by a bad one
  if (held === null) return answer;
  const a = compileWeeklySchedule(held);
  if (!('schedule' in a)) return 'never';
  return scheduleSpec(a.schedule, b.schedule);
}

const MINUTES_PER_DAY = 24 * 60;

/** The minutes both schedules open, written back as a schedule (ranges within each day), or 'never'. */
function scheduleSpec(a: WeeklySchedule, b: WeeklySchedule): unknown {
  const open = (m: number) => (a.minutes[m >>> 5]! & b.minutes[m >>> 5]! & (1 << (m & 31))) !== 0;
  const spec: Record<string, unknown> = { holidays: a.holidays === 'closed' || b.holidays === 'closed' ? 'closed' : 'open' };
  let any = false;
  WEEKDAY_KEYS.forEach((key, day) => {
    const ranges: string[] = [];
    let start = -1;
    for (let minute = 0; minute <= MINUTES_PER_DAY; minute++) {
      const inside = minute < MINUTES_PER_DAY && open(day * MINUTES_PER_DAY + minute);
      if (inside && start < 0) start = minute;
      if (!inside && start >= 0) {
        ranges.push(`${clockText(start)}-${clockText(minute)}`);
        start = -1;
      }
    }
    if (ranges.length > 0) {
      spec[key] = ranges;
      any = true;
    }
  });
  return any ? spec : 'never';
}
