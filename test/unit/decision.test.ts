import { describe, it, expect } from 'vitest';
import {
  CLOCK_TRUSTED_FROM,
  DENY_REASONS,
  decide,
  isClockTrusted,
  type DecisionContext,
  type DecisionRequest,
  type DenyReason,
  type Holder,
  type LinkHolder,
  type UserHolder,
} from '../../src/core/decision.js';
import type { CredentialKind } from '../../src/core/credentials.js';
import { ALL_WEEK, localTimeIn, type TimeMapping } from '../../src/core/schedule.js';
import { compileLevels } from '../../src/core/accessLevels.js';

const DOOR = 12;
const OTHER_DOOR = 13;
const utc = (iso: string) => Date.parse(iso);
// Wednesday 2026-07-01 14:00 in Berlin (CEST).
const NOW = utc('2026-07-01T12:00:00Z');

const DOOR_UUID = 'door-12';
const ctx: DecisionContext = {
  // access.groups/policies: every door, always.
  levels: compileLevels([{ name: 'every_door', source: 'every_door', groups: ['Staff'], policies: ['Cleaning'], doors: 'all', schedule: null }], [DOOR_UUID]),
  responders: null,
  holidays: new Set(),
  localTime: localTimeIn('Europe/Berlin'),
};

function user(over: Partial<UserHolder> = {}): UserHolder {
  return { kind: 'user', emailId: 1, tag: 'USER', adStatus: 'ACTIVE', groups: ['Staff'], policies: [], ...over };
}

function link(over: Partial<LinkHolder> = {}): LinkHolder {
  return {
    kind: 'link',
    magicLinkId: 'ml-1',
    resourceIds: [DOOR],
    startAt: utc('2026-06-01T00:00:00Z'),
    endAt: utc('2026-08-01T00:00:00Z'),
    timeMapping: ALL_WEEK,
    ...over,
  };
}

function req(over: Partial<DecisionRequest> = {}): DecisionRequest {
  return { kind: 'card', doorResourceId: DOOR, doorUuid: DOOR_UUID, now: NOW, ...over };
}

// Weekdays 9-17 local time only.
const WORKDAYS_9_17: TimeMapping = [[], [[9, 17]], [[9, 17]], [[9, 17]], [[9, 17]], [[9, 17]], []];

type Row = [string, Partial<DecisionRequest>, Holder[], DenyReason | null];

const rules: Row[] = [
  // Users (rule 3)
  ['active USER in an access group', {}, [user()], null],
  ['active USER holding an access policy', {}, [user({ groups: ['Visitors'], policies: ['Cleaning'] })], null],
  ['active USER in several groups, one matching', {}, [user({ groups: ['Visitors', 'Staff'] })], null],
  ['SUSPENDED user in an access group', {}, [user({ adStatus: 'SUSPENDED' })], 'user_suspended'],
  ['INACTIVE user', {}, [user({ adStatus: 'INACTIVE' })], 'user_suspended'],
  ['lower-case "active" is not ACTIVE', {}, [user({ adStatus: 'active' })], 'user_suspended'],
  ['empty status', {}, [user({ adStatus: '' })], 'user_suspended'],
  ['SUSPENDED user with no group either', {}, [user({ adStatus: 'SUSPENDED', groups: [] })], 'user_suspended'],
  ['GUEST tag user in an access group', {}, [user({ tag: 'GUEST' })], 'not_authorized'],
  ['GUEST tag user holding an access policy', {}, [user({ tag: 'GUEST', groups: [], policies: ['Cleaning'] })], 'not_authorized'],
  ['USER with no matching group or policy', {}, [user({ groups: ['Visitors'], policies: ['Parking'] })], 'not_authorized'],
  ['USER with no groups and no policies', {}, [user({ groups: [], policies: [] })], 'not_authorized'],
  ['group name is case sensitive', {}, [user({ groups: ['staff'] })], 'not_authorized'],
  ['a policy name is not a group name', {}, [user({ groups: ['Cleaning'], policies: [] })], 'not_authorized'],
  // No holders
  ['no holders', {}, [], 'unknown_credential'],
  ['no holders for a PIN', { kind: 'pin' }, [], 'unknown_credential'],
  ['no holders for a token', { kind: 'token' }, [], 'unknown_credential'],
  // Keypad lockout (rule 6) applies to PINs only
  ['PIN while the keypad is locked out', { kind: 'pin', keypadLockedOut: true }, [user()], 'keypad_locked_out'],
  ['unknown PIN while locked out', { kind: 'pin', keypadLockedOut: true }, [], 'keypad_locked_out'],
  ['PIN when not locked out', { kind: 'pin', keypadLockedOut: false }, [user()], null],
  ['card while the keypad is locked out', { kind: 'card', keypadLockedOut: true }, [user()], null],
  ['denied card while locked out keeps its own reason', { kind: 'card', keypadLockedOut: true }, [user({ tag: 'GUEST' })], 'not_authorized'],
  ['unknown card while locked out', { kind: 'card', keypadLockedOut: true }, [], 'unknown_credential'],
  ['token while the keypad is locked out', { kind: 'token', keypadLockedOut: true }, [link()], null],
  // Card lockout (unknown cards and tokens) applies to cards and tokens, never to PINs
  ['valid card while the reader is locked out', { kind: 'card', cardLockedOut: true }, [user()], 'card_locked_out'],
  ['token while the reader is locked out', { kind: 'token', cardLockedOut: true }, [link()], 'card_locked_out'],
  ['PIN while the reader is locked out for cards', { kind: 'pin', cardLockedOut: true }, [user()], null],
  // A PIN under access.minPinLength (issue 32): refused for that, after a lockout in progress, lockdown or not
  ['PIN shorter than the minimum', { kind: 'pin', pinTooShort: true }, [], 'pin_too_short'],
  ['short PIN while the keypad is locked out', { kind: 'pin', pinTooShort: true, keypadLockedOut: true }, [], 'keypad_locked_out'],
  ['short PIN in lockdown', { kind: 'pin', pinTooShort: true, lockdown: true }, [], 'pin_too_short'],
  // Guest links (rule 4)
  ['link valid for this door now', {}, [link()], null],
  ['link for another door', {}, [link({ resourceIds: [OTHER_DOOR] })], 'wrong_door'],
  ['link for several doors including this one', {}, [link({ resourceIds: [OTHER_DOOR, DOOR] })], null],
  ['link with no doors', {}, [link({ resourceIds: [] })], 'wrong_door'],
  ['link before its start', { now: utc('2026-05-31T23:59:59Z') }, [link()], 'link_not_yet_valid'],
  ['link one ms before its start', { now: utc('2026-06-01T00:00:00Z') - 1 }, [link()], 'link_not_yet_valid'],
  ['link exactly at its start (inclusive)', { now: utc('2026-06-01T00:00:00Z') }, [link()], null],
  ['link one ms before its end', { now: utc('2026-08-01T00:00:00Z') - 1 }, [link()], null],
  ['link exactly at its end (exclusive)', { now: utc('2026-08-01T00:00:00Z') }, [link()], 'link_expired'],
  ['link after its end', { now: utc('2027-01-01T00:00:00Z') }, [link()], 'link_expired'],
  ['link with null end never expires', { now: utc('2099-01-01T00:00:00Z') }, [link({ endAt: null })], null],
  ['link with null start is valid from any time', { now: utc('2025-01-01T00:00:00Z') }, [link({ startAt: null })], null],
  ['link inside its schedule (Wed 14:00 local)', {}, [link({ timeMapping: WORKDAYS_9_17 })], null],
  ['link outside its schedule (Wed 17:00 local)', { now: utc('2026-07-01T15:00:00Z') }, [link({ timeMapping: WORKDAYS_9_17 })], 'outside_schedule'],
  ['link at schedule start (Wed 09:00 local)', { now: utc('2026-07-01T07:00:00Z') }, [link({ timeMapping: WORKDAYS_9_17 })], null],
  ['link before schedule start (Wed 08:59 local)', { now: utc('2026-07-01T06:59:59Z') }, [link({ timeMapping: WORKDAYS_9_17 })], 'outside_schedule'],
  // 2026-07-04 23:30 UTC is Sunday 01:30 in Berlin, Saturday in UTC: the local weekday decides.
  [
    'link on a local Sunday that is Saturday in UTC',
    { now: utc('2026-07-04T23:30:00Z') },
    [link({ timeMapping: [[], [], [], [], [], [], [[0, 24]]] })],
    'outside_schedule',
  ],
  ['link on local Sunday allowed by element 0', { now: utc('2026-07-04T23:30:00Z') }, [link({ timeMapping: [[[0, 24]], [], [], [], [], [], []] })], null],
  ['link with an empty schedule', {}, [link({ timeMapping: [[], [], [], [], [], [], []] })], 'outside_schedule'],
  ['link by token', { kind: 'token' }, [link()], null],
  // Clock trust (rule 5): only time-bound grants are refused
  ['link with the clock before 2024', { now: utc('2023-12-31T23:59:59Z') }, [link({ startAt: null, endAt: null })], 'clock_untrusted'],
  ['link with the clock at epoch 0', { now: 0 }, [link({ startAt: null, endAt: null })], 'clock_untrusted'],
  ['link with the clock at 2024-01-01 exactly', { now: CLOCK_TRUSTED_FROM }, [link({ startAt: null, endAt: null })], null],
  ['user with an untrusted clock', { now: 0 }, [user()], null],
  ['user and link with an untrusted clock', { now: 0 }, [link(), user()], null],
  ['denied user and link with an untrusted clock', { now: 0 }, [user({ tag: 'GUEST' }), link()], 'clock_untrusted'],
  // Card numbers under access.minCardDigits (issue 32 item 4): refused without holders, after the lockouts and lockdown
  ['a card too short (likely a PIN)', { cardTooShort: true }, [], 'card_too_short'],
  ['a card too short while the reader is locked out', { cardTooShort: true, cardLockedOut: true }, [], 'card_locked_out'],
  ['a card too short during a lockdown', { cardTooShort: true, lockdown: true }, [], 'lockdown'],
  ['cardTooShort is about cards only', { kind: 'pin', cardTooShort: true }, [user()], null],
  // card_and_pin (issue 32 item 4): a guest link's card needs the link's PIN as its second factor
  ['a guest link card at a card_and_pin door, the link without a PIN', { secondFactor: true }, [link()], 'no_second_factor'],
  ['a guest link card at a card_and_pin door, the link with a PIN', { secondFactor: true }, [link({ hasPin: true })], null],
  ['a user card at a card_and_pin door (the runtime asks for the PIN)', { secondFactor: true }, [user()], null],
  [
    'no PIN and outside its schedule: the schedule is the reason',
    { secondFactor: true, now: utc('2026-07-01T15:00:00Z') },
    [link({ timeMapping: WORKDAYS_9_17 })],
    'outside_schedule',
  ],
  ['no PIN, the card also held by a GUEST-tag user: no_second_factor says why', { secondFactor: true }, [user({ tag: 'GUEST' }), link()], 'no_second_factor'],
  ['a link without a PIN at a card_or_pin door', { secondFactor: false }, [link()], null],
  // Duplicates (rule 2)
  ['suspended user and a valid link', {}, [user({ adStatus: 'SUSPENDED' }), link()], null],
  ['expired link and a qualifying user', {}, [link({ endAt: NOW }), user()], null],
  ['two denied users', {}, [user({ emailId: 1, groups: [] }), user({ emailId: 2, adStatus: 'SUSPENDED' })], 'user_suspended'],
  [
    'wrong-door link and outside-schedule link',
    { now: utc('2026-07-01T15:00:00Z') },
    [link({ magicLinkId: 'a', timeMapping: WORKDAYS_9_17 }), link({ magicLinkId: 'b', resourceIds: [OTHER_DOOR] })],
    'wrong_door',
  ],
];

describe('decide: one rule per row', () => {
  it.each(rules)('%s', (_name, reqOver, holders, expected) => {
    const d = decide(req(reqOver), holders, ctx);
    expect(d.granted).toBe(expected === null);
    expect(d.reason).toBe(expected);
  });
});

describe('decide: holders reported', () => {
  it('lists every holder with its own reason, by email_id / magic_link_id, in input order', () => {
    const holders: Holder[] = [
      user({ emailId: 7, adStatus: 'SUSPENDED' }),
      link({ magicLinkId: 'ml-wrong', resourceIds: [OTHER_DOOR] }),
      user({ emailId: 8 }),
      link({ magicLinkId: 'ml-ok' }),
      user({ emailId: 9, tag: 'GUEST' }),
    ];
    const d = decide(req(), holders, ctx);
    expect(d).toEqual({
      granted: true,
      reason: null,
      holders: [
        { holder: { email_id: 7 }, reason: 'user_suspended' },
        { holder: { magic_link_id: 'ml-wrong' }, reason: 'wrong_door' },
        { holder: { email_id: 8 }, reason: null },
        { holder: { magic_link_id: 'ml-ok' }, reason: null },
        { holder: { email_id: 9 }, reason: 'not_authorized' },
      ],
      level: 'every_door',
    });
  });

  it('a single granted holder is listed with reason null', () => {
    expect(decide(req(), [user({ emailId: 42 })], ctx).holders).toEqual([{ holder: { email_id: 42 }, reason: null }]);
  });

  it('no holders are listed when there are none or the keypad is locked out', () => {
    expect(decide(req(), [], ctx).holders).toEqual([]);
    expect(decide(req({ kind: 'pin', keypadLockedOut: true }), [user()], ctx).holders).toEqual([]);
  });

  it('a user holder reference carries only email_id and a link only magic_link_id', () => {
    const d = decide(req(), [user({ emailId: 3 }), link({ magicLinkId: 'x' })], ctx);
    expect(Object.keys(d.holders[0]!.holder)).toEqual(['email_id']);
    expect(Object.keys(d.holders[1]!.holder)).toEqual(['magic_link_id']);
  });
});

describe('decide: reason precedence when every holder is denied', () => {
  // One holder producing each holder-level reason, at NOW = Wednesday 14:00 local.
  const byReason: Array<[DenyReason, Holder, Partial<DecisionRequest>?]> = [
    ['user_suspended', user({ emailId: 1, adStatus: 'SUSPENDED' })],
    ['not_authorized', user({ emailId: 2, groups: [] })],
    ['wrong_door', link({ magicLinkId: 'w', resourceIds: [OTHER_DOOR] })],
    ['link_not_yet_valid', link({ magicLinkId: 'n', startAt: NOW + 1 })],
    ['link_expired', link({ magicLinkId: 'e', endAt: NOW })],
    ['credential_not_yet_valid', user({ emailId: 4, validFrom: NOW + 1 })],
    ['credential_expired', user({ emailId: 5, validUntil: NOW })],
    ['outside_schedule', link({ magicLinkId: 'o', timeMapping: [[], [], [], [], [], [], []] })],
  ];

  it('each prepared holder alone yields its reason', () => {
    for (const [reason, holder] of byReason) expect(decide(req(), [holder], ctx).reason).toBe(reason);
  });

  const pairs: Array<[DenyReason, DenyReason]> = [];
  for (const [a] of byReason) for (const [b] of byReason) if (a !== b) pairs.push([a, b]);

  it.each(pairs)('%s with %s reports the earlier one in DENY_REASONS', (a, b) => {
    const ha = byReason.find((r) => r[0] === a)![1];
    const hb = byReason.find((r) => r[0] === b)![1];
    const d = decide(req(), [ha, hb], ctx);
    const expected = DENY_REASONS.indexOf(a) < DENY_REASONS.indexOf(b) ? a : b;
    expect(d.granted).toBe(false);
    expect(d.reason).toBe(expected);
    expect(d.holders.map((h) => h.reason)).toEqual([a, b]);
  });

  it('all the denied holders in any rotation report user_suspended', () => {
    const holders = byReason.map((r) => r[1]);
    for (let i = 0; i < holders.length; i++) {
      const rotated = [...holders.slice(i), ...holders.slice(0, i)];
      expect(decide(req(), rotated, ctx).reason).toBe('user_suspended');
    }
  });

  it('DENY_REASONS is the order of the contract', () => {
    expect([...DENY_REASONS]).toEqual([
      'lockdown',
      'cache_too_old',
      'clock_untrusted',
      'keypad_locked_out',
      'card_locked_out',
      'card_too_short',
      'card_ambiguous',
      'pin_too_short',
      'unknown_credential',
      'no_second_factor',
      'user_suspended',
      'not_authorized',
      'credential_not_yet_valid',
      'credential_expired',
      'wrong_door',
      'link_not_yet_valid',
      'link_expired',
      'level_not_yet_valid',
      'level_expired',
      'holiday',
      'outside_schedule',
      'passback',
      'area_full',
      'interlock',
    ]);
  });
});

describe("decide: a credential's validity dates (valid_from inclusive, valid_until exclusive)", () => {
  const FROM = utc('2026-06-01T00:00:00Z');
  const UNTIL = utc('2026-08-01T00:00:00Z');
  const dated = { validFrom: FROM, validUntil: UNTIL };

  it.each<[string, number, Holder, DenyReason | null]>([
    ['a user card inside its dates', NOW, user(dated), null],
    ['a user card before valid_from', FROM - 1, user(dated), 'credential_not_yet_valid'],
    ['a user card exactly at valid_from', FROM, user(dated), null],
    ['a user card one ms before valid_until', UNTIL - 1, user(dated), null],
    ['a user card exactly at valid_until', UNTIL, user(dated), 'credential_expired'],
    ['a user card long expired', utc('2027-01-01T00:00:00Z'), user(dated), 'credential_expired'],
    ['a user card with valid_from only', utc('2099-01-01T00:00:00Z'), user({ validFrom: FROM }), null],
    ['a user card with valid_until only, before it', FROM - 1, user({ validUntil: UNTIL }), null],
    ['a user card with valid_until only, after it', UNTIL, user({ validUntil: UNTIL }), 'credential_expired'],
    ['a user card with null dates', utc('2099-01-01T00:00:00Z'), user({ validFrom: null, validUntil: null }), null],
    ['a link card inside both validities', NOW, link(dated), null],
    ['a link card whose own dates ended first', NOW, link({ validUntil: NOW }), 'credential_expired'],
    ['a link card whose own dates have not begun', NOW, link({ validFrom: NOW + 1 }), 'credential_not_yet_valid'],
    ['a link card at another door, expired: its dates come first', NOW, link({ resourceIds: [OTHER_DOOR], validUntil: NOW }), 'credential_expired'],
  ])('%s', (_name, now, holder, reason) => {
    const d = decide(req({ now }), [holder], ctx);
    expect(d.reason).toBe(reason);
    expect(d.granted).toBe(reason === null);
  });

  it('refuses a dated credential while the clock is untrusted, and an undated one of staff still opens', () => {
    expect(decide(req({ now: 0 }), [user(dated)], ctx).reason).toBe('clock_untrusted');
    expect(decide(req({ now: CLOCK_TRUSTED_FROM - 1 }), [user({ validUntil: UNTIL })], ctx).reason).toBe('clock_untrusted');
    expect(decide(req({ now: 0 }), [user()], ctx).granted).toBe(true);
    expect(decide(req({ now: 0 }), [link({ startAt: null, endAt: null, validUntil: UNTIL })], ctx).reason).toBe('clock_untrusted');
  });

  it('a suspended user stays user_suspended, whatever the dates', () => {
    expect(decide(req({ now: UNTIL }), [user({ ...dated, adStatus: 'SUSPENDED' })], ctx).reason).toBe('user_suspended');
    expect(decide(req({ now: 0 }), [user({ ...dated, adStatus: 'SUSPENDED' })], ctx).reason).toBe('user_suspended');
  });

  it('a user outside its dates is refused for the dates even when it would not be authorized either', () => {
    expect(decide(req({ now: UNTIL }), [user({ ...dated, groups: [] })], ctx).reason).toBe('credential_expired');
  });

  it('another holder of the same number still opens', () => {
    const d = decide(req({ now: UNTIL }), [user({ emailId: 1, ...dated }), user({ emailId: 2 })], ctx);
    expect(d.granted).toBe(true);
    expect(d.holders.map((h) => h.reason)).toEqual(['credential_expired', null]);
  });

  it('lockdown keeps its meaning: an expired responder is refused for the dates, others with lockdown', () => {
    const responders: DecisionContext = { ...ctx, responders: { groups: new Set(['Security']), policies: new Set() } };
    expect(decide(req({ now: UNTIL, lockdown: true }), [user({ ...dated })], responders).reason).toBe('lockdown');
    expect(decide(req({ now: UNTIL, lockdown: true }), [user({ ...dated, groups: ['Staff', 'Security'] })], responders).reason).toBe('credential_expired');
    expect(decide(req({ now: NOW, lockdown: true }), [user({ ...dated, groups: ['Staff', 'Security'] })], responders).granted).toBe(true);
  });
});

describe('isClockTrusted', () => {
  it.each([
    [0, false],
    [utc('2023-12-31T23:59:59.999Z'), false],
    [utc('2024-01-01T00:00:00Z'), true],
    [NOW, true],
  ])('%i -> %s', (t, trusted) => {
    expect(isClockTrusted(t)).toBe(trusted);
  });
});

describe('decide: every credential kind', () => {
  it.each<[CredentialKind]>([['card'], ['pin'], ['token']])('%s held by a qualifying user is granted', (kind) => {
    expect(decide(req({ kind }), [user()], ctx).granted).toBe(true);
  });
});

describe('decide: lockdown (issue 14)', () => {
  const responders: DecisionContext = { ...ctx, responders: { groups: new Set(['Security']), policies: new Set(['FirstAid']) } };

  it('refuses every holder with lockdown, reason first, and lists each holder', () => {
    const d = decide(req({ lockdown: true }), [user({ emailId: 7 }), link()], responders);
    expect(d).toEqual({
      granted: false,
      reason: 'lockdown',
      holders: [
        { holder: { email_id: 7 }, reason: 'lockdown' },
        { holder: { magic_link_id: 'ml-1' }, reason: 'lockdown' },
      ],
    });
  });

  it('refuses an unknown credential with lockdown too (nothing told about the number)', () => {
    expect(decide(req({ lockdown: true }), [], responders)).toMatchObject({ granted: false, reason: 'lockdown', holders: [] });
  });

  it('admits a responder by group or by policy, who must still qualify as usual', () => {
    expect(decide(req({ lockdown: true }), [user({ groups: ['Staff', 'Security'] })], responders).granted).toBe(true);
    expect(decide(req({ lockdown: true }), [user({ groups: ['Staff'], policies: ['FirstAid'] })], responders).granted).toBe(true);
    // A responder who is not among those who may open these doors at all is still refused.
    expect(decide(req({ lockdown: true }), [user({ groups: ['Security'] })], responders).reason).toBe('not_authorized');
    expect(decide(req({ lockdown: true }), [user({ groups: ['Staff', 'Security'], adStatus: 'SUSPENDED' })], responders).reason).toBe('user_suspended');
  });

  it('admits nobody when no responders are configured, and guest links never', () => {
    expect(decide(req({ lockdown: true }), [user({ groups: ['Staff', 'Security'] })], ctx).reason).toBe('lockdown');
    expect(decide(req({ lockdown: true }), [link()], responders).reason).toBe('lockdown');
  });

  it('reports a keypad or reader lockout before the lockdown (no signal tells a guesser whose number it is)', () => {
    const pin = decide(req({ kind: 'pin', lockdown: true, keypadLockedOut: true }), [user({ groups: ['Staff', 'Security'] })], responders);
    expect(pin).toEqual({ granted: false, reason: 'keypad_locked_out', holders: [] });
    expect(decide(req({ lockdown: true, cardLockedOut: true }), [], responders).reason).toBe('card_locked_out');
  });

  it('changes nothing without lockdown', () => {
    expect(decide(req({ lockdown: false }), [user()], responders).granted).toBe(true);
  });
});

describe('decide: the offline limit, cacheTooOld (issue 30 item 2)', () => {
  const responders: DecisionContext = { ...ctx, responders: { groups: new Set(['Security']), policies: new Set(['FirstAid']) } };
  const old = (over: Partial<DecisionRequest> = {}) => req({ cacheTooOld: true, ...over });

  it('refuses a card or PIN of anyone but a responder, and an unknown number, with cache_too_old', () => {
    expect(decide(old(), [user({ emailId: 7 })], responders)).toEqual({
      granted: false,
      reason: 'cache_too_old',
      holders: [{ holder: { email_id: 7 }, reason: 'cache_too_old' }],
    });
    expect(decide(old({ kind: 'pin' }), [user()], responders).reason).toBe('cache_too_old');
    expect(decide(old(), [], responders)).toEqual({ granted: false, reason: 'cache_too_old', holders: [] });
    expect(decide(old(), [user({ groups: ['Staff', 'Security'] })], ctx).reason).toBe('cache_too_old'); // no responders configured
  });

  it('admits a responder who qualifies as usual, as in a lockdown (everyDoor too)', () => {
    expect(decide(old(), [user({ groups: ['Staff', 'Security'] })], responders).granted).toBe(true);
    expect(decide(old({ kind: 'pin' }), [user({ groups: [], policies: ['FirstAid'] })], responders).reason).toBe('not_authorized');
    expect(decide(old(), [user({ groups: ['Staff', 'Security'], adStatus: 'SUSPENDED' })], responders).reason).toBe('user_suspended');
    const everyDoor: DecisionContext = { ...responders, responders: { ...responders.responders!, everyDoor: true } };
    expect(decide(old(), [user({ groups: ['Security'] })], everyDoor)).toMatchObject({ granted: true, level: 'responders (every door)' });
  });

  it('leaves a guest link to its own validity (its card or QR token), and a co-holder user refused', () => {
    expect(decide(old({ kind: 'token' }), [link()], ctx).granted).toBe(true);
    expect(decide(old(), [link({ endAt: NOW - 1 })], ctx).reason).toBe('link_expired');
    const both = decide(old(), [user({ emailId: 7 }), link()], ctx);
    expect(both.granted).toBe(true);
    expect(both.holders).toEqual([
      { holder: { email_id: 7 }, reason: 'cache_too_old' },
      { holder: { magic_link_id: 'ml-1' }, reason: null },
    ]);
  });

  it('comes after a lockout and a lockdown, and changes nothing when false', () => {
    expect(decide(old({ cardLockedOut: true }), [user()], responders).reason).toBe('card_locked_out');
    expect(decide(old({ lockdown: true }), [user()], responders).reason).toBe('lockdown');
    expect(decide(req({ cacheTooOld: false }), [user()], responders).granted).toBe(true);
  });
});

describe('decide: holidays for guest links (issue 14)', () => {
  // NOW is Wednesday 2026-07-01 14:00 in Berlin.
  const holiday: DecisionContext = { ...ctx, holidays: new Set(['2026-07-01']) };

  it('refuses a guest link on a holiday in the agent time zone', () => {
    expect(decide(req(), [link()], holiday).reason).toBe('holiday');
  });

  it('admits a link made for the day: its validity starts on the holiday, local date', () => {
    // 2026-06-30T22:30Z is 00:30 on 1 July in Berlin.
    expect(decide(req(), [link({ startAt: utc('2026-06-30T22:30:00Z') })], holiday).granted).toBe(true);
    // 21:30Z on 30 June is still 30 June in Berlin: a link from the day before.
    expect(decide(req(), [link({ startAt: utc('2026-06-30T21:30:00Z') })], holiday).reason).toBe('holiday');
    expect(decide(req(), [link({ startAt: null })], holiday).reason).toBe('holiday');
  });

  it('leaves users alone, and the day after is no holiday', () => {
    expect(decide(req(), [user()], holiday).granted).toBe(true);
    expect(decide(req({ now: NOW + 86_400_000 }), [link()], holiday).granted).toBe(true);
  });

  it('ranks holiday after the link validity and before its hours', () => {
    expect(decide(req(), [link({ endAt: NOW - 1 })], holiday).reason).toBe('link_expired');
    const idx = (r: DenyReason) => DENY_REASONS.indexOf(r);
    expect(idx('holiday')).toBeGreaterThan(idx('link_expired'));
    expect(idx('holiday')).toBeLessThan(idx('outside_schedule'));
  });
});

describe('decide: first person in (issue 14)', () => {
  const managers = { groups: new Set(['Managers']), policies: new Set<string>() };

  it('says whether a granted holder is a first person of the door', () => {
    expect(decide(req({ firstPersonIn: managers }), [user({ groups: ['Staff', 'Managers'] })], ctx).firstPerson).toBe(true);
    expect(decide(req({ firstPersonIn: managers }), [user()], ctx).firstPerson).toBe(false);
    // Refused: no first person, whatever the groups.
    expect(decide(req({ firstPersonIn: managers }), [user({ groups: ['Managers'] })], ctx).firstPerson).toBe(false);
    expect(decide(req(), [user({ groups: ['Staff', 'Managers'] })], ctx).firstPerson).toBeUndefined();
  });
});
