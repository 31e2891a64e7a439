import type { CredentialKind } from './credentials.js';
import { scheduleAllows, type LocalTime, type TimeMapping } from './schedule.js';
import { levelFor, type LevelIndex, type LevelTime } from './accessLevels.js';

/** Denial reasons, most specific first: when every holder is refused, the earliest reason here is reported. */
export const DENY_REASONS = [
  'lockdown',
  // access.maxCacheAgeHours passed without a successful sync: only responders (and guest links) are admitted.
  'cache_too_old',
  'clock_untrusted',
  'keypad_locked_out',
  'card_locked_out',
  'card_too_short',
  // A card read whose number and printed form (facility:card) belong to different users (docs/hardware.md).
  'card_ambiguous',
  'pin_too_short',
  'unknown_credential',
  // Given only to a guest link that qualifies in every other respect: it, not a co-holder's refusal, says why.
  'no_second_factor',
  'user_suspended',
  'not_authorized',
  // The credential's own validity dates (valid_from inclusive, valid_until exclusive), user or guest link alike.
  'credential_not_yet_valid',
  'credential_expired',
  'wrong_door',
  'link_not_yet_valid',
  'link_expired',
  'level_not_yet_valid',
  'level_expired',
  'holiday',
  'outside_schedule',
  // Doors that work together (docs/areas.md): decided after a grant, for the door, never for a holder, so they
  // never compete with the reasons above.
  'passback',
  'area_full',
  'interlock',
] as const;
export type DenyReason = (typeof DENY_REASONS)[number];
const PRECEDENCE = new Map<DenyReason, number>(DENY_REASONS.map((r, i) => [r, i]));

/** Before this instant the system clock is not believed (no RTC, no NTP yet): time-bound grants are refused. */
export const CLOCK_TRUSTED_FROM = Date.UTC(2024, 0, 1);

export function isClockTrusted(epochMs: number): boolean {
  return epochMs >= CLOCK_TRUSTED_FROM;
}

export interface UserHolder {
  kind: 'user';
  emailId: number;
  tag: 'USER' | 'GUEST';
  adStatus: string;
  /** Group names, flattened from the service's array of arrays. */
  groups: readonly string[];
  /** Policy names, flattened from the user detail's array of arrays. */
  policies: readonly string[];
  /** The credential's validity dates (epoch ms; from inclusive, until exclusive); null or absent: unbounded. */
  validFrom?: number | null;
  validUntil?: number | null;
}

export interface LinkHolder {
  kind: 'link';
  magicLinkId: string;
  resourceIds: readonly number[];
  startAt: number | null;
  /** null: never expires. */
  endAt: number | null;
  timeMapping: TimeMapping;
  /** The link also carries a PIN (a smartcard with a PIN label): its second factor at a card_and_pin door. */
  hasPin?: boolean;
  /** The credential's own validity dates (epoch ms; from inclusive, until exclusive), besides the link's. */
  validFrom?: number | null;
  validUntil?: number | null;
}

export type Holder = UserHolder | LinkHolder;

/** Members of any of these groups or policies (who may open; who is a responder; who is a first person in). */
export interface AccessPolicy {
  groups: ReadonlySet<string>;
  policies: ReadonlySet<string>;
}

/** Who is still admitted during a lockdown; everyDoor: at every door, whatever their levels say. */
export type ResponderPolicy = AccessPolicy & { everyDoor?: boolean };

export interface DecisionContext {
  /** Who may open which door, and when (config `access.levels`, `access.groups/policies`, levels from the service). */
  levels: LevelIndex;
  /** Who is still admitted during a lockdown (config `access.responders`); null: nobody. */
  responders: ResponderPolicy | null;
  /** Local dates YYYY-MM-DD on which guest links are refused, unless made for that day. */
  holidays: ReadonlySet<string>;
  /** Weekday, hour and date of an instant in the agent's time zone. */
  localTime: (epochMs: number) => LocalTime;
}

export interface DecisionRequest {
  kind: CredentialKind;
  doorResourceId: number;
  /** Lower case: the key of the door's access levels. */
  doorUuid: string;
  now: number;
  /** The door's keypad is in lockout after too many wrong PINs (only affects kind pin). */
  keypadLockedOut?: boolean;
  /** The door's reader is in lockout after too many unknown cards or tokens (affects kinds card and token). */
  cardLockedOut?: boolean;
  /** The door is in lockdown (its own or the agent's): only responders are admitted. */
  lockdown?: boolean;
  /** A PIN shorter than access.minPinLength (refused without a lookup: no holders). */
  pinTooShort?: boolean;
  /** The door's first-person-in members: the decision says whether one of them was granted. */
  firstPersonIn?: AccessPolicy;
  /** A card number shorter than access.minCardDigits (likely a PIN): refused without a lookup. */
  cardTooShort?: boolean;
  /** A card or QR token at a card_and_pin door: a guest link qualifies only if it has a PIN to add (hasPin). */
  secondFactor?: boolean;
  /**
   * The cache is older than access.maxCacheAgeHours (core/cacheAge.ts): a user is admitted only as a responder
   * would be in a lockdown; a guest link keeps its own validity (it reaches the agent over MQTT, not the sync).
   */
  cacheTooOld?: boolean;
}

export type HolderRef = { email_id: number } | { magic_link_id: string };

export interface HolderVerdict {
  holder: HolderRef;
  reason: DenyReason | null;
  /** A member of access.responders (exempt from anti-passback and an area's maximum: docs/areas.md). */
  responder?: true;
}

export interface Decision {
  granted: boolean;
  reason: DenyReason | null;
  holders: HolderVerdict[];
  /** Granted to a member of the request's firstPersonIn (the door's unlock schedule may start). */
  firstPerson?: boolean;
  /** The access level that granted a user (a guest link grants by itself). */
  level?: string;
}

function isMember(user: UserHolder, policy: AccessPolicy): boolean {
  return user.groups.some((g) => policy.groups.has(g)) || user.policies.some((p) => policy.policies.has(p));
}

function isResponder(holder: Holder, responders: AccessPolicy | null): boolean {
  return responders !== null && holder.kind === 'user' && isMember(holder, responders);
}

/** With the cache too old: a guest link and a responder are still decided; any other holder is not. */
function passesOldCache(holder: Holder, responders: AccessPolicy | null): boolean {
  return holder.kind === 'link' || isResponder(holder, responders);
}

export function refOf(holder: Holder): HolderRef {
  return holder.kind === 'user' ? { email_id: holder.emailId } : { magic_link_id: holder.magicLinkId };
}

/** A credential with validity dates needs a trusted clock; before valid_from or from valid_until on it is refused. */
function credentialDatesVerdict(holder: Holder, now: number): DenyReason | null {
  const from = holder.validFrom ?? null;
  const until = holder.validUntil ?? null;
  if (from === null && until === null) return null;
  if (!isClockTrusted(now)) return 'clock_untrusted';
  if (from !== null && now < from) return 'credential_not_yet_valid';
  if (until !== null && now >= until) return 'credential_expired';
  return null;
}

/** The moment as the access levels see it (local minute of the week, date, holiday, clock trusted). */
export function levelTime(now: number, ctx: Pick<DecisionContext, 'localTime' | 'holidays'>): LevelTime {
  const local = ctx.localTime(now);
  return {
    now,
    minuteOfWeek: local.weekday * 1440 + local.minuteOfDay,
    date: local.date,
    holiday: ctx.holidays.has(local.date),
    clockTrusted: isClockTrusted(now),
  };
}

/** A user's verdict, and the level that admits them. `everyDoor`: a responder in a lockdown, admitted at any door. */
function userVerdict(
  user: UserHolder,
  req: DecisionRequest,
  ctx: DecisionContext,
  t: () => LevelTime,
  everyDoor: boolean,
): { reason: DenyReason | null; level?: string } {
  if (user.adStatus !== 'ACTIVE') return { reason: 'user_suspended' };
  const dates = credentialDatesVerdict(user, req.now);
  if (dates !== null) return { reason: dates };
  // GUEST-tag users enter only through guest links.
  if (user.tag !== 'USER') return { reason: 'not_authorized' };
  const found = levelFor(ctx.levels, req.doorUuid, user, t());
  if ('level' in found) return { reason: null, level: found.level.name };
  if (everyDoor) return { reason: null, level: 'responders (every door)' };
  return { reason: found.reason };
}

function linkVerdict(link: LinkHolder, req: DecisionRequest, ctx: DecisionContext): DenyReason | null {
  if (!isClockTrusted(req.now)) return 'clock_untrusted';
  const dates = credentialDatesVerdict(link, req.now);
  if (dates !== null) return dates;
  if (!link.resourceIds.includes(req.doorResourceId)) return 'wrong_door';
  if (link.startAt !== null && req.now < link.startAt) return 'link_not_yet_valid';
  if (link.endAt !== null && req.now >= link.endAt) return 'link_expired';
  // On a holiday only a link made for the day opens: one whose validity starts on that date.
  const today = ctx.localTime(req.now).date;
  if (ctx.holidays.has(today) && (link.startAt === null || ctx.localTime(link.startAt).date !== today)) return 'holiday';
  if (!scheduleAllows(link.timeMapping, ctx.localTime(req.now))) return 'outside_schedule';
  return null;
}

/**
 * The access decision: a pure function of the credential's holders (looked up by the caller), the door,
 * the time and the agent's access policy. Granted when any holder qualifies.
 *
 * A keypad or reader in lockout refuses before anything is looked up, lockdown or not: otherwise the reader's
 * signal would tell a guesser which of the numbers tried belongs to a responder. In lockdown every holder but a
 * responder (who must still qualify as usual) is refused with `lockdown`, unknown numbers included; with the cache
 * too old (cacheTooOld) every user but a responder likewise with `cache_too_old`, guest links decided as always. Then a card
 * too short to be a card (cardTooShort) is `card_too_short`, and at a card_and_pin door (secondFactor) a guest
 * link that qualifies but carries no PIN is `no_second_factor`.
 */
export function decide(req: DecisionRequest, holders: readonly Holder[], ctx: DecisionContext): Decision {
  if (req.kind === 'pin' && req.keypadLockedOut) {
    return { granted: false, reason: 'keypad_locked_out', holders: [] };
  }
  if (req.kind !== 'pin' && req.cardLockedOut) {
    return { granted: false, reason: 'card_locked_out', holders: [] };
  }
  if (req.kind === 'pin' && req.pinTooShort) return { granted: false, reason: 'pin_too_short', holders: [] };
  const lockdown = req.lockdown === true;
  if (lockdown && !holders.some((h) => isResponder(h, ctx.responders))) {
    return { granted: false, reason: 'lockdown', holders: holders.map((h) => ({ holder: refOf(h), reason: 'lockdown' })) };
  }
  // The offline limit, like a lockdown: unknown numbers too get its reason (the reader tells a guesser nothing more).
  const oldCache = req.cacheTooOld === true;
  if (oldCache && !holders.some((h) => passesOldCache(h, ctx.responders))) {
    return { granted: false, reason: 'cache_too_old', holders: holders.map((h) => ({ holder: refOf(h), reason: 'cache_too_old' })) };
  }
  if (req.kind === 'card' && req.cardTooShort) return { granted: false, reason: 'card_too_short', holders: [] };
  if (holders.length === 0) return { granted: false, reason: 'unknown_credential', holders: [] };

  const verdicts: HolderVerdict[] = [];
  let granted = false;
  let firstPerson = false;
  let reason: DenyReason | null = null;
  let level: string | undefined;
  let time: LevelTime | undefined;
  const at = () => (time ??= levelTime(req.now, ctx));
  for (const holder of holders) {
    // The responder rule of a lockdown serves the offline limit too (everyDoor included).
    const responder = (lockdown || oldCache) && isResponder(holder, ctx.responders);
    const user = holder.kind === 'user' ? userVerdict(holder, req, ctx, at, responder && ctx.responders?.everyDoor === true) : null;
    let verdictReason = user ? user.reason : linkVerdict(holder as LinkHolder, req, ctx);
    if (lockdown && verdictReason === null && !responder) verdictReason = 'lockdown';
    if (oldCache && verdictReason === null && !passesOldCache(holder, ctx.responders)) verdictReason = 'cache_too_old';
    if (verdictReason === null && req.secondFactor && holder.kind === 'link' && holder.hasPin !== true) verdictReason = 'no_second_factor';
    verdicts.push(
      isResponder(holder, ctx.responders)
        ? { holder: refOf(holder), reason: verdictReason, responder: true }
        : { holder: refOf(holder), reason: verdictReason },
    );
    if (verdictReason === null) {
      granted = true;
      if (user?.level !== undefined) level ??= user.level;
      if (req.firstPersonIn && holder.kind === 'user' && isMember(holder, req.firstPersonIn)) firstPerson = true;
    } else if (reason === null || PRECEDENCE.get(verdictReason)! < PRECEDENCE.get(reason)!) reason = verdictReason;
  }
  const decision: Decision = { granted, reason: granted ? null : reason, holders: verdicts };
  if (req.firstPersonIn) decision.firstPerson = firstPerson;
  if (level !== undefined) decision.level = level;
  return decision;
}
