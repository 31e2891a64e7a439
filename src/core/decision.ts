import type { CredentialKind } from './credentials.js';
import { scheduleAllows, type LocalTime, type TimeMapping } from './schedule.js';

/** Denial reasons, most specific first: when every holder is refused, the earliest reason here is reported. */
export const DENY_REASONS = [
  'clock_untrusted',
  'keypad_locked_out',
  'card_locked_out',
  'unknown_credential',
  'user_suspended',
  'not_authorized',
  'wrong_door',
  'link_not_yet_valid',
  'link_expired',
  'outside_schedule',
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
}

export interface LinkHolder {
  kind: 'link';
  magicLinkId: string;
  resourceIds: readonly number[];
  startAt: number | null;
  /** null: never expires. */
  endAt: number | null;
  timeMapping: TimeMapping;
}

export type Holder = UserHolder | LinkHolder;

/** Who may open this agent's doors (config `access`). */
export interface AccessPolicy {
  groups: ReadonlySet<string>;
  policies: ReadonlySet<string>;
}

export interface DecisionContext {
  access: AccessPolicy;
  /** Weekday and hour of an instant in the agent's time zone. */
  localTime: (epochMs: number) => LocalTime;
}

export interface DecisionRequest {
  kind: CredentialKind;
  doorResourceId: number;
  now: number;
  /** The door's keypad is in lockout after too many wrong PINs (only affects kind pin). */
  keypadLockedOut?: boolean;
  /** The door's reader is in lockout after too many unknown cards or tokens (affects kinds card and token). */
  cardLockedOut?: boolean;
}

export type HolderRef = { email_id: number } | { magic_link_id: string };

export interface HolderVerdict {
  holder: HolderRef;
  reason: DenyReason | null;
}

export interface Decision {
  granted: boolean;
  reason: DenyReason | null;
  holders: HolderVerdict[];
}

function userVerdict(user: UserHolder, access: AccessPolicy): DenyReason | null {
  if (user.adStatus !== 'ACTIVE') return 'user_suspended';
  // GUEST-tag users enter only through guest links.
  if (user.tag !== 'USER') return 'not_authorized';
  if (user.groups.some((g) => access.groups.has(g))) return null;
  if (user.policies.some((p) => access.policies.has(p))) return null;
  return 'not_authorized';
}

function linkVerdict(link: LinkHolder, req: DecisionRequest, ctx: DecisionContext): DenyReason | null {
  if (!isClockTrusted(req.now)) return 'clock_untrusted';
  if (!link.resourceIds.includes(req.doorResourceId)) return 'wrong_door';
  if (link.startAt !== null && req.now < link.startAt) return 'link_not_yet_valid';
  if (link.endAt !== null && req.now >= link.endAt) return 'link_expired';
  if (!scheduleAllows(link.timeMapping, ctx.localTime(req.now))) return 'outside_schedule';
  return null;
}

/**
 * The access decision: a pure function of the credential's holders (looked up by the caller), the door,
 * the time and the agent's access policy. Granted when any holder qualifies.
 */
export function decide(req: DecisionRequest, holders: readonly Holder[], ctx: DecisionContext): Decision {
  if (req.kind === 'pin' && req.keypadLockedOut) {
    return { granted: false, reason: 'keypad_locked_out', holders: [] };
  }
  if (req.kind !== 'pin' && req.cardLockedOut) {
    return { granted: false, reason: 'card_locked_out', holders: [] };
  }
  if (holders.length === 0) return { granted: false, reason: 'unknown_credential', holders: [] };

  const verdicts: HolderVerdict[] = [];
  let granted = false;
  let reason: DenyReason | null = null;
  for (const holder of holders) {
    const verdict =
      holder.kind === 'user'
        ? { holder: { email_id: holder.emailId }, reason: userVerdict(holder, ctx.access) }
        : { holder: { magic_link_id: holder.magicLinkId }, reason: linkVerdict(holder, req, ctx) };
    verdicts.push(verdict);
    if (verdict.reason === null) granted = true;
    else if (reason === null || PRECEDENCE.get(verdict.reason)! < PRECEDENCE.get(reason)!) reason = verdict.reason;
  }
  return { granted, reason: granted ? null : reason, holders: verdicts };
}
