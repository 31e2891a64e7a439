import type { DenyReason } from '../../core/decision.js';

/**
 * An access decision's outcome in words, as the Events page shows it: "refused: outside its schedule", "granted:
 * guest link". One table for every reason code an agent gives a refusal (core/decision.ts DENY_REASONS, typed so a
 * new one must be worded here, and the door's own: a cache it cannot read); a code it does not know is shown as it
 * is, never as a blank.
 */
const REFUSALS: Record<DenyReason | 'cache_damaged' | 'cache_unreadable', string> = {
  lockdown: 'the door is in lockdown',
  cache_too_old: 'no sync for too long (the door only admits responders)',
  clock_untrusted: "the door's clock is not trusted yet",
  keypad_locked_out: 'keypad locked out after wrong PINs',
  card_locked_out: 'reader locked out after unknown cards',
  card_too_short: 'card number too short',
  card_ambiguous: 'card number belongs to two people',
  pin_too_short: 'PIN too short',
  unknown_credential: 'unknown card or PIN',
  no_second_factor: 'its second factor is missing',
  user_suspended: 'card suspended',
  not_authorized: 'no access level allows it',
  credential_not_yet_valid: 'card not valid yet',
  credential_expired: 'card expired',
  wrong_door: 'not allowed at this door',
  link_not_yet_valid: 'guest link not started yet',
  link_expired: 'guest link expired',
  level_not_yet_valid: 'access level not in force yet',
  level_expired: 'access level ended',
  holiday: 'closed on holidays',
  outside_schedule: 'outside its schedule',
  passback: 'anti-passback (already inside)',
  area_full: 'the area is full',
  interlock: 'another door of its interlock is open',
  cache_damaged: "the door's cache is damaged",
  cache_unreadable: "the door's cache cannot be read",
};

/** How a grant was presented (the event's `kind`); a guest link's holder is named as one whatever it showed. */
const GRANTS: Record<string, string> = {
  card: 'card',
  pin: 'PIN',
  card_and_pin: 'card and PIN',
  token: 'guest link',
};

/** Other event types a person reads often; any type not here is shown as its code. */
const TYPES: Record<string, string> = {
  unlocked: 'unlocked',
  locked: 'locked',
  door_opened: 'door opened',
  door_closed: 'door closed',
  door_forced: 'door forced open',
  door_held_open: 'door held open',
  exit_request: 'exit button',
  card_locked_out: 'card reader locked out after unknown cards',
  keypad_locked_out: 'keypad locked out after wrong PINs',
  passback_violation: 'anti-passback violation (let in)',
  command_rejected: 'a command was refused',
  audit_chain_started: "the door's audit chain started (a new or upgraded log)",
};

const hasOwn = (table: Record<string, string>, key: string) => Object.hasOwn(table, key);

/** A refusal's words: "outside its schedule"; an unknown code as it is; none given: "no reason given". */
export function refusalWords(reason: string | null | undefined): string {
  if (reason === null || reason === undefined || reason === '') return 'no reason given';
  return hasOwn(REFUSALS, reason) ? REFUSALS[reason as keyof typeof REFUSALS] : reason;
}

/** A grant's words: "card", "guest link" (a guest link's holder, or its token), an unknown kind as it is. */
export function grantWords(kind: string | null | undefined, byGuestLink: boolean): string {
  if (byGuestLink) return 'guest link';
  if (kind === null || kind === undefined || kind === '') return 'access';
  return hasOwn(GRANTS, kind) ? GRANTS[kind]! : kind;
}

/** Any other event's type in words: "door forced open"; a type not in the table as its code. */
export function typeWords(type: string): string {
  return hasOwn(TYPES, type) ? TYPES[type]! : type;
}
