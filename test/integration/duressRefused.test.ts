import { describe, expect, it } from 'vitest';
import type { FeedbackKind } from '../../src/door/options.js';
import { exampleSnapshot, type Snapshot } from '../support/snapshot.js';
import { ALICE_PIN, DOOR_UUID, useDoorRuntime } from './doorRuntimeHarness.js';

// Issue 32 item 12: a recognized duress PIN raises its alarm whatever the decision. The door and the reader do
// exactly what the owner's own PIN would get (a guesser learns nothing); only the silent alarm goes out, and it
// is recorded first. During a keypad lockout no PIN is looked up, so none is recognized. A real DoorRuntime over a real SQLite cache and audit log, on a manual clock.

const setup = useDoorRuntime();
const DURESS = { access: 'duressPin: lastDigitPlusOne' };
const ALICE_DURESS = '1235'; // Alice (101, Staff): PIN 1234
const DAVE_PIN = '4321'; // Dave (104, Contractors: not in the doors' groups)
const GUEST_PIN = '5550'; // guest link 501 (Carol, resource 12, Mon-Fri 9-17)

/** The example organization, with a PIN for Dave and one for guest link 501. */
function directory(): Snapshot {
  const s = exampleSnapshot();
  (s.details['104'] as { smartcards: unknown[] }).smartcards.push({ number: DAVE_PIN, label: 'PIN' });
  (s.guest_links![0] as { smartcards: unknown[] }).smartcards.push({ number: GUEST_PIN, label: 'PIN' });
  return s;
}

type Runtime = ReturnType<typeof setup>;

function signals(t: Runtime): FeedbackKind[] {
  const shown: FeedbackKind[] = [];
  t.runtime.setFeedback((kind) => shown.push(kind));
  return shown;
}

/** What a decision event says, without its bookkeeping (id, seq, time). */
function decisionOf(t: Runtime) {
  const e = t
    .all()
    .filter((x) => x.type === 'access_granted' || x.type === 'access_denied')
    .at(-1)!;
  return { type: e.type, kind: e.kind, hint: e.hint, reason: e.reason, holders: e.holders };
}

/** Types the owner's PIN, then its duress PIN, each on a fresh door; both must be refused the same way. */
function compare(options: {
  pin: string;
  duress: string;
  door?: Parameters<typeof setup>[0];
  site?: Parameters<typeof setup>[1];
  before?: (t: Runtime) => void;
}) {
  const own = setup(options.door, { ...DURESS, snapshot: directory(), ...options.site });
  options.before?.(own);
  const ownSignals = signals(own);
  own.pin(options.pin);
  const underDuress = setup(options.door, { ...DURESS, snapshot: directory(), ...options.site });
  options.before?.(underDuress);
  const duressSignals = signals(underDuress);
  underDuress.pin(options.duress);
  // The same at the door: the relay untouched, the same signal, the same decision recorded.
  expect(underDuress.relay.writes).toEqual(own.relay.writes);
  expect(duressSignals).toEqual(ownSignals);
  expect(decisionOf(underDuress)).toEqual(decisionOf(own));
  // The owner's own PIN raises nothing; the duress PIN raises the alarm.
  expect(own.types()).not.toContain('duress');
  expect(own.alarms).toEqual([]);
  return { own, underDuress, ownSignals };
}

/** An event without the audit chain's ids and hashes: random hex, in which a run of digits is no PIN. */
function withoutChain(e: Record<string, unknown>): Record<string, unknown> {
  const { chain: _chain, prev_hash: _prev, hash: _hash, ...rest } = e;
  return rest;
}

/** The duress alarm: recorded before the decision, and sent on the alarm path naming the holders. */
function expectAlarm(t: Runtime, holders: Array<Record<string, unknown>>) {
  const types = t.types();
  expect(types).toContain('duress');
  const decision = types.findIndex((x) => x === 'access_denied' || x === 'access_granted');
  expect(types.indexOf('duress')).toBeLessThan(decision);
  expect(t.last('duress')).toMatchObject({ type: 'duress', door: DOOR_UUID, kind: 'pin', hint: 'PIN', holders });
  expect(t.alarms).toMatchObject([{ type: 'duress', data: { holders } }]);
  for (const e of t.all()) expect(JSON.stringify(withoutChain(e))).not.toMatch(/1234|1235|4321|4322|5550|5551/);
}

describe('a duress PIN the door refuses still raises its alarm', () => {
  it('during a lockdown: refused as her own PIN (lockdown signal), the alarm goes out, and it never counts toward the keypad lockout', () => {
    const { underDuress, ownSignals } = compare({ pin: ALICE_PIN, duress: ALICE_DURESS, site: { lockdown: () => true } });
    expect(ownSignals).toEqual(['lockdown']);
    expect(decisionOf(underDuress)).toMatchObject({ reason: 'lockdown', holders: [{ email_id: 101, reason: 'lockdown' }] });
    expectAlarm(underDuress, [{ email_id: 101 }]);
    // Typed again and again (default lockout: 5 wrong PINs in 60 s): no lockout, an alarm each time.
    for (let i = 0; i < 7; i++) underDuress.pin(ALICE_DURESS);
    expect(underDuress.types()).not.toContain('keypad_locked_out');
    expect(underDuress.alarms).toHaveLength(8);
  });

  it("outside a guest link's hours: refused outside_schedule as the link's own PIN, the alarm names the link", () => {
    // Tuesday 18:00: past the link's 9-17.
    const late = (t: Runtime) => t.time.advance(8 * 3600_000);
    const { underDuress, ownSignals } = compare({ pin: GUEST_PIN, duress: '5551', before: late });
    expect(ownSignals).toEqual(['deny']);
    expect(decisionOf(underDuress)).toMatchObject({ reason: 'outside_schedule', holders: [{ magic_link_id: '501', reason: 'outside_schedule' }] });
    expectAlarm(underDuress, [{ magic_link_id: '501' }]);
  });

  it('at a door the guest link does not list: refused wrong_door, the alarm goes out', () => {
    const { underDuress } = compare({ pin: GUEST_PIN, duress: '5551', door: { resourceId: 13 } });
    expect(decisionOf(underDuress)).toMatchObject({ reason: 'wrong_door' });
    expectAlarm(underDuress, [{ magic_link_id: '501' }]);
  });

  it('on a holiday: refused holiday, the alarm goes out', () => {
    const { underDuress } = compare({ pin: GUEST_PIN, duress: '5551', site: { access: `${DURESS.access}, holidays: [2026-11-24]` } });
    expect(decisionOf(underDuress)).toMatchObject({ reason: 'holiday' });
    expectAlarm(underDuress, [{ magic_link_id: '501' }]);
  });

  it('a user these doors do not admit: refused not_authorized, the alarm goes out', () => {
    const { underDuress, ownSignals } = compare({ pin: DAVE_PIN, duress: '4322' });
    expect(ownSignals).toEqual(['deny']);
    expect(decisionOf(underDuress)).toMatchObject({ reason: 'not_authorized', holders: [{ email_id: 104, reason: 'not_authorized' }] });
    expectAlarm(underDuress, [{ email_id: 104 }]);
  });

  it('card_and_pin, the PIN typed without a card first: refused (card_first), the alarm goes out', () => {
    const t = setup({ mode: 'card_and_pin' }, DURESS);
    t.pin(ALICE_DURESS);
    expect(t.last('access_denied')).toMatchObject({ factor: 'card_first' });
    expectAlarm(t, [{ email_id: 101 }]);
  });
});

describe('during a keypad lockout no PIN is looked up, a duress PIN included', () => {
  // A sweep of PINs at the wire would otherwise raise a duress alarm for every PIN user in seconds.
  it('refused as locked out exactly as her own PIN, with no alarm; a sweep adds only the summary; after the lockout the alarm works again', () => {
    const wrongPins = (t: Runtime) => {
      for (const wrong of ['9999', '8888', '7777']) t.pin(wrong);
      expect(t.types()).toContain('keypad_locked_out');
    };
    const door = { keypadLockout: { failures: 3, windowSeconds: 60, lockoutSeconds: 60 } };
    const own = setup(door, { ...DURESS, snapshot: directory() });
    wrongPins(own);
    const ownSignals = signals(own);
    own.pin(ALICE_PIN);
    const underDuress = setup(door, { ...DURESS, snapshot: directory() });
    wrongPins(underDuress);
    const duressSignals = signals(underDuress);
    underDuress.pin(ALICE_DURESS);
    expect(ownSignals).toEqual(['lockedOut']);
    expect(duressSignals).toEqual(ownSignals);
    expect(decisionOf(underDuress)).toEqual(decisionOf(own));
    expect(decisionOf(underDuress)).toMatchObject({ reason: 'keypad_locked_out', holders: [] });
    // Every PIN from 1200 to 1299 (Alice's duress PIN again among them): no alarm, no event of their own.
    for (let pin = 1200; pin < 1300; pin++) underDuress.pin(String(pin));
    expect(underDuress.types()).not.toContain('duress');
    expect(underDuress.alarms).toEqual([]);
    // The lockout, the third wrong PIN's refusal, and the first PIN refused during the lockout: nothing after.
    expect(underDuress.types().slice(-3)).toEqual(['keypad_locked_out', 'access_denied', 'access_denied']);
    underDuress.time.advance(60_000);
    expect(underDuress.last('access_denied')).toMatchObject({ reason: 'keypad_locked_out', count: 100 });
    underDuress.pin(ALICE_DURESS);
    expect(underDuress.types().slice(-3)).toEqual(['duress', 'access_granted', 'unlocked']);
    expect(underDuress.alarms).toMatchObject([{ type: 'duress', data: { holders: [{ email_id: 101 }] } }]);
  });
});

describe('a duress PIN the door grants', () => {
  it('records the alarm before the relay moves: a relay that fails does not lose it', () => {
    const t = setup({}, DURESS);
    const write = t.relay.write;
    t.relay.write = () => {
      throw new Error('EIO: the relay line cannot be written');
    };
    expect(() => t.pin(ALICE_DURESS)).toThrow(/EIO/);
    t.relay.write = write;
    expect(t.types()).toEqual(['duress']);
    expect(t.alarms).toMatchObject([{ type: 'duress', data: { holders: [{ email_id: 101 }] } }]);
  });

  it('opens as her own PIN does, the alarm recorded first', () => {
    const t = setup({}, DURESS);
    t.pin(ALICE_DURESS);
    expect(t.types()).toEqual(['duress', 'access_granted', 'unlocked']);
    expect(t.relay.writes).toEqual([0, 1]);
    expect(t.last('access_granted')).toMatchObject({ reason: null, holders: [{ email_id: 101, reason: null }] });
  });
});

describe('a duress PIN that is also a PIN in the directory (a collision)', () => {
  it("the real PIN wins: Erin's own 1235 opens as Erin with no alarm, though it is Alice's duress PIN", () => {
    const s = directory();
    (s.details['105'] as { smartcards: unknown[] }).smartcards.push({ number: ALICE_DURESS, label: 'PIN' });
    const t = setup({}, { ...DURESS, snapshot: s });
    t.pin(ALICE_DURESS);
    expect(t.last('access_granted')).toMatchObject({ holders: [{ email_id: 105, reason: null }] });
    expect(t.types()).not.toContain('duress');
    expect(t.alarms).toEqual([]);
  });
});
