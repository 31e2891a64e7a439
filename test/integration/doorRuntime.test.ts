import { describe, expect, it } from 'vitest';
import { exampleSnapshot } from '../support/snapshot.js';
import { ALICE_CARD, ALICE_PIN, BOB_CARD, GUEST_CARD, DOOR_UUID, GUEST_TOKEN, WALL0, useDoorRuntime } from './doorRuntimeHarness.js';

const setup = useDoorRuntime();

describe('DoorRuntime decisions (card_or_pin)', () => {
  it('a granted card unlocks for unlockSeconds: access_granted, unlocked, then locked by the timer', () => {
    const t = setup();
    t.card(`000${ALICE_CARD}`); // leading zeros are the same card
    expect(t.relay.writes).toEqual([0, 1]);
    expect(t.types()).toEqual(['access_granted', 'unlocked']);
    expect(t.last('access_granted')).toMatchObject({
      id: 'test-agent-2', // 1: the audit chain's first record
      door: DOOR_UUID,
      at: new Date(WALL0).toISOString(),
      kind: 'card',
      hint: '…78',
      reason: null,
      holders: [{ email_id: 101, reason: null }],
      // Who opened it, and by which access level (access.groups: every door, always).
      who: 'Alice Adams',
      level: 'every_door',
    });
    expect(t.last('unlocked')).toMatchObject({ relock_at: new Date(WALL0 + 5000).toISOString() });
    t.time.advance(4999);
    expect(t.relay.writes).toEqual([0, 1]);
    t.time.advance(1);
    expect(t.relay.writes).toEqual([0, 1, 0]);
    expect(t.types()).toEqual(['access_granted', 'unlocked', 'locked']);
    expect(t.last('locked')).toMatchObject({ cause: 'timer', at: new Date(WALL0 + 5000).toISOString() });
  });

  it('a denied card leaves the relay alone and records the reason and every holder considered', () => {
    const t = setup();
    t.card(BOB_CARD);
    t.card('9999999');
    t.card('not-a-card'); // malformed: dropped with a warning, not a decision
    expect(t.relay.writes).toEqual([0]);
    expect(t.controller.snapshot().state).toBe('LOCKED');
    const denied = t.all();
    expect(denied.map((e) => e.type)).toEqual(['access_denied', 'access_denied']);
    expect(denied[0]).toMatchObject({ kind: 'card', hint: '…79', reason: 'user_suspended', holders: [{ email_id: 102, reason: 'user_suspended' }] });
    expect(denied[1]).toMatchObject({ reason: 'unknown_credential', holders: [] });
  });

  it('a PIN sent as a card line never opens, even while the keypad is locked out; a badge number typed as a PIN neither', () => {
    const t = setup({ keypadLockout: { failures: 3, windowSeconds: 60, lockoutSeconds: 30 } });
    for (const wrong of ['9999', '8888', '7777']) t.pin(wrong);
    expect(t.types()).toContain('keypad_locked_out');
    // The attack: a card emulator sends the PIN as a card frame to get round the keypad lockout.
    t.card(ALICE_PIN);
    expect(t.last('access_denied')).toMatchObject({ kind: 'card', reason: 'card_too_short', holders: [] });
    t.time.advance(30_000);
    t.pin(ALICE_CARD); // the reverse: a badge number typed on the keypad
    expect(t.last('access_denied')).toMatchObject({ kind: 'pin', reason: 'unknown_credential', holders: [] });
    expect(t.relay.writes).toEqual([0]);
    t.pin(ALICE_PIN); // each still works the way it was issued
    t.card(ALICE_CARD);
    expect(
      t
        .all()
        .filter((e) => e.type === 'access_granted')
        .map((e) => e.kind),
    ).toEqual(['pin', 'card']);
  });

  it('a PIN stored under the label "Pin code" is a short card: refused card_too_short without a lookup, counted toward the card lockout', () => {
    const directory = exampleSnapshot();
    (directory.details['101'] as { smartcards: unknown[] }).smartcards.push({ number: '4321', label: 'Pin code' });
    const t = setup({ cardLockout: { failures: 3, windowSeconds: 60, lockoutSeconds: 30, quietSeconds: 3 } }, { snapshot: directory });
    t.card('4321'); // a keyboard-wedge or serial reader sends the digits as a card line
    expect(t.last('access_denied')).toMatchObject({ kind: 'card', hint: '…', reason: 'card_too_short', holders: [] });
    t.card('04321'); // leading zeros do not make it longer
    t.card('99999');
    expect(t.types()).toContain('card_locked_out');
    expect(t.relay.writes).toEqual([0]);
    // access.minCardDigits is the operator's: at 4 the same entry is an ordinary card of Alice's.
    const lenient = setup({}, { snapshot: directory, access: 'minCardDigits: 4' });
    lenient.card('4321');
    expect(lenient.last('access_granted')).toMatchObject({ kind: 'card', holders: [{ email_id: 101, reason: null }] });
  });

  it('unknown cards are rate-limited: after `failures` in the window the reader refuses cards, and the flood is counted', () => {
    const t = setup({ cardLockout: { failures: 5, windowSeconds: 60, lockoutSeconds: 30, quietSeconds: 3 } });
    for (let i = 0; i < 5; i++) t.card(String(9_000_000 + i));
    expect(t.types()).toEqual(['access_denied', 'access_denied', 'access_denied', 'access_denied', 'access_denied', 'card_locked_out']);
    expect(t.last('card_locked_out')).toMatchObject({ seconds: 30 });
    // During the lockout even a valid card is refused; 1000 guesses leave one event, then one summary.
    t.card(ALICE_CARD);
    for (let i = 0; i < 1000; i++) t.card(String(8_000_000 + i));
    expect(t.relay.writes).toEqual([0]);
    expect(t.all()).toHaveLength(7);
    expect(t.last('access_denied')).toMatchObject({ kind: 'card', reason: 'card_locked_out' });
    t.time.advance(30_000);
    expect(t.last('access_denied')).toMatchObject({ kind: 'card', reason: 'card_locked_out', count: 1000 });
    t.card(ALICE_CARD);
    expect(t.last('access_granted')).toMatchObject({ kind: 'card' });
    t.pin(ALICE_PIN); // the keypad has a lockout of its own, untouched by the cards
    expect(t.all().filter((e) => e.type === 'access_granted')).toHaveLength(2);
  });

  it('a cache that cannot be read keeps the door locked, records the refusal and says how to rebuild', () => {
    const t = setup();
    t.db.close(); // what a damaged page or an I/O error does to every lookup
    t.card(ALICE_CARD);
    expect(t.relay.writes).toEqual([0]);
    const line = t.logs.map((l) => JSON.parse(l) as { msg: string }).find((l) => l.msg.startsWith('the cache cannot be read'));
    expect(line?.msg).toContain('the door stays locked. Rebuild the cache');
  });

  it('after `failures` wrong PINs the keypad locks out, refusing even the right PIN until lockoutSeconds pass', () => {
    const t = setup({ keypadLockout: { failures: 3, windowSeconds: 60, lockoutSeconds: 30 } });
    for (const wrong of ['9999', '8888', '7777']) t.pin(wrong);
    expect(t.types()).toEqual(['access_denied', 'access_denied', 'keypad_locked_out', 'access_denied']);
    expect(t.last('keypad_locked_out')).toMatchObject({ seconds: 30 });
    t.time.advance(29_999);
    t.pin(ALICE_PIN);
    expect(t.last('access_denied')).toMatchObject({ kind: 'pin', hint: 'PIN', reason: 'keypad_locked_out' });
    expect(t.relay.writes).toEqual([0]);
    t.card(ALICE_CARD); // cards are not locked out
    expect(t.last('access_granted')).toMatchObject({ kind: 'card' });
    t.time.advance(5000);
    t.pin(ALICE_PIN);
    expect(t.last('access_granted')).toMatchObject({ kind: 'pin', hint: 'PIN', holders: [{ email_id: 101, reason: null }] });
    expect(t.relay.writes).toEqual([0, 1, 0, 1]);
    expect(t.types().filter((x) => x === 'keypad_locked_out')).toHaveLength(1);
  });

  it('the exit button unlocks for unlockSeconds with an exit_request event; its release does nothing', () => {
    const t = setup();
    t.runtime.onExitButton(false);
    expect(t.relay.writes).toEqual([0]);
    t.runtime.onExitButton(true);
    expect(t.relay.writes).toEqual([0, 1]);
    expect(t.types()).toEqual(['exit_request', 'unlocked']);
    expect(t.last('unlocked')).toMatchObject({ cause: 'exit button' });
    t.time.advance(5000);
    expect(t.relay.writes).toEqual([0, 1, 0]);
  });
});

describe('DoorRuntime: a card read with its printed form (facility:card)', () => {
  // 123:45678 as an H10301 frame reads as 8106606 under numbering data (123 * 65536 + 45678); the reader hands on both.
  const READ = { kind: 'card' as const, value: '8106606', printed: '123:45678' };
  function directoryWith(...cards: Array<[holder: string, number: string]>) {
    const directory = exampleSnapshot();
    for (const [holder, number] of cards) (directory.details[holder] as { smartcards: unknown[] }).smartcards.push({ number, label: 'badge' });
    return directory;
  }

  it('the number and the printed form held by different users: denied card_ambiguous, no holder named, nothing opens', () => {
    const t = setup({}, { snapshot: directoryWith(['101', '123:45678'], ['105', '8106606']) });
    t.frame(READ);
    expect(t.types()).toEqual(['access_denied']);
    expect(t.last('access_denied')).toMatchObject({ kind: 'card', reason: 'card_ambiguous', holders: [] });
    expect(t.last('access_denied')).not.toHaveProperty('card_matched');
    expect(t.last('access_denied')).not.toHaveProperty('who');
    expect(t.relay.writes).toEqual([0]);
    expect(JSON.stringify(t.all())).not.toContain('45678');
  });

  it('both held by the same user: the number decides (no card_matched); the printed form alone: card_matched printed', () => {
    const same = setup({}, { snapshot: directoryWith(['101', '123:45678'], ['101', '8106606']) });
    same.frame(READ);
    expect(same.last('access_granted')).toMatchObject({ who: 'Alice Adams' });
    expect(same.last('access_granted')).not.toHaveProperty('card_matched');
    const printedOnly = setup({}, { snapshot: directoryWith(['101', '123:45678']) });
    printedOnly.frame(READ);
    expect(printedOnly.last('access_granted')).toMatchObject({ who: 'Alice Adams', hint: '123:…', card_matched: 'printed' });
    expect(printedOnly.relay.writes).toEqual([0, 1]);
  });
});

describe('DoorRuntime card_and_pin', () => {
  it("a card alone does not unlock; the same user's PIN within 10 s does", () => {
    const t = setup({ mode: 'card_and_pin' });
    t.card(ALICE_CARD);
    expect(t.relay.writes).toEqual([0]);
    expect(t.all()).toEqual([]);
    t.time.advance(9_999);
    t.pin(ALICE_PIN);
    expect(t.relay.writes).toEqual([0, 1]);
    expect(t.types()).toEqual(['access_granted', 'unlocked']);
    expect(t.last('access_granted')).toMatchObject({ kind: 'card_and_pin', hint: 'PIN', card_hint: '…78', reason: null });
    t.time.advance(60_000); // the card's wait was used up: no late pin_timeout
    expect(t.types()).toEqual(['access_granted', 'unlocked', 'locked']);
  });

  it("the card's own number typed on the keypad is not its PIN", () => {
    const t = setup({ mode: 'card_and_pin' });
    t.card(ALICE_CARD);
    t.pin(ALICE_CARD.replace(/^0+/, ''));
    expect(t.relay.writes).toEqual([0]);
    expect(t.last('access_denied')).toMatchObject({ factor: 'pin_mismatch' });
  });

  it('after 10 s the card wait ends with pin_timeout and a later PIN is refused', () => {
    const t = setup({ mode: 'card_and_pin' });
    t.card(ALICE_CARD);
    t.time.advance(10_000);
    expect(t.types()).toEqual(['access_denied']);
    expect(t.last('access_denied')).toMatchObject({ kind: 'card', hint: '…78', factor: 'pin_timeout' });
    t.pin(ALICE_PIN);
    expect(t.types()).toEqual(['access_denied', 'access_denied']);
    expect(t.last('access_denied')).toMatchObject({ kind: 'pin', factor: 'card_first' });
    expect(t.relay.writes).toEqual([0]);
  });

  it('a PIN at 10 s is refused even when the wait timer has not fired yet', () => {
    const t = setup({ mode: 'card_and_pin' });
    t.time.lateMs = 50;
    t.card(ALICE_CARD);
    t.time.advance(10_000);
    t.pin(ALICE_PIN);
    expect(t.relay.writes).toEqual([0]);
    expect(t.types()).not.toContain('access_granted');
  });

  it('a PIN with no card first is refused with factor card_first', () => {
    const t = setup({ mode: 'card_and_pin' });
    t.pin(ALICE_PIN);
    expect(t.relay.writes).toEqual([0]);
    expect(t.last('access_denied')).toMatchObject({ factor: 'card_first', reason: 'not_authorized' });
  });

  it('a wrong PIN after the card gives pin_mismatch and counts toward the keypad lockout', () => {
    const t = setup({ mode: 'card_and_pin', keypadLockout: { failures: 2, windowSeconds: 60, lockoutSeconds: 60 } });
    t.card(ALICE_CARD);
    t.pin('9999');
    expect(t.relay.writes).toEqual([0]);
    expect(t.last('access_denied')).toMatchObject({ kind: 'pin', factor: 'pin_mismatch', card_hint: '…78' });
    t.pin(ALICE_PIN); // the card's wait ended with the wrong PIN
    expect(t.last('access_denied')).toMatchObject({ factor: 'card_first' });
    t.card(ALICE_CARD);
    t.pin('8888');
    expect(t.types()).toContain('keypad_locked_out');
    t.card(ALICE_CARD);
    t.pin(ALICE_PIN);
    const refused = t.last('access_denied');
    expect(refused).toMatchObject({ kind: 'pin', reason: 'keypad_locked_out' });
    expect(refused?.factor).not.toBe('pin_mismatch'); // not compared, so not a mismatch
    expect(t.relay.writes).toEqual([0]);
  });

  it('a guest card whose link carries no PIN is refused: no_second_factor (two factors mean two factors)', () => {
    const t = setup({ mode: 'card_and_pin' });
    t.card(GUEST_CARD);
    expect(t.relay.writes).toEqual([0]);
    expect(t.last('access_denied')).toMatchObject({ kind: 'card', reason: 'no_second_factor' });
    expect(t.last('access_denied')?.holders).toEqual(
      expect.arrayContaining([
        { magic_link_id: '501', reason: 'no_second_factor' },
        { email_id: 103, reason: 'not_authorized' },
      ]),
    );
    // Not left waiting for a PIN: any PIN now is refused as typed without a card.
    t.pin(ALICE_PIN);
    expect(t.last('access_denied')).toMatchObject({ kind: 'pin', factor: 'card_first' });
    expect(t.relay.writes).toEqual([0]);
  });

  it('a guest QR token is a first factor too: refused no_second_factor without a PIN on its link, else it waits for that PIN', () => {
    const t = setup({ mode: 'card_and_pin' });
    t.frame({ kind: 'token', value: GUEST_TOKEN });
    expect(t.relay.writes).toEqual([0]);
    expect(t.last('access_denied')).toMatchObject({ kind: 'token', reason: 'no_second_factor' });
    const directory = exampleSnapshot();
    (directory.guest_links![0] as { smartcards: unknown[] }).smartcards.push({ number: '5550', label: 'PIN' });
    const withPin = setup({ mode: 'card_and_pin' }, { snapshot: directory });
    withPin.frame({ kind: 'token', value: GUEST_TOKEN });
    expect(withPin.relay.writes).toEqual([0]);
    withPin.pin('5550');
    expect(withPin.relay.writes).toEqual([0, 1]);
    expect(withPin.last('access_granted')).toMatchObject({ kind: 'card_and_pin', holders: [{ magic_link_id: '501', reason: null }] });
  });

  it('a guest link with a PIN: its card then its PIN within 10 s opens; a wrong PIN, a late PIN or outside its hours does not', () => {
    const directory = exampleSnapshot();
    (directory.guest_links![0] as { smartcards: unknown[] }).smartcards.push({ number: '5550', label: 'pin' });
    const t = setup({ mode: 'card_and_pin' }, { snapshot: directory });
    t.card(GUEST_CARD);
    expect(t.relay.writes).toEqual([0]);
    expect(t.logs.some((l) => l.includes('card accepted, waiting for PIN'))).toBe(true);
    t.pin('5550');
    expect(t.relay.writes).toEqual([0, 1]);
    expect(t.last('access_granted')).toMatchObject({ kind: 'card_and_pin', card_hint: '…01', holders: [{ magic_link_id: '501', reason: null }] });
    t.time.advance(5_000);
    // Its card and Alice's PIN: not its second factor.
    t.card(GUEST_CARD);
    t.pin(ALICE_PIN);
    expect(t.last('access_denied')).toMatchObject({ factor: 'pin_mismatch' });
    // Its PIN 10 s after the card: too late.
    t.card(GUEST_CARD);
    t.time.advance(10_000);
    expect(t.last('access_denied')).toMatchObject({ kind: 'card', factor: 'pin_timeout' });
    t.pin('5550');
    expect(t.last('access_denied')).toMatchObject({ kind: 'pin', factor: 'card_first' });
    // 18:00: outside Mon-Fri 9-17, the card is refused as before.
    t.time.advance(8 * 3600_000);
    t.card(GUEST_CARD);
    expect(t.last('access_denied')?.holders).toContainEqual({ magic_link_id: '501', reason: 'outside_schedule' });
    expect(t.relay.writes).toEqual([0, 1, 0]);
  });
});

describe('DoorRuntime secrets', () => {
  it('no event (wire or stored) and no log line holds a whole card number, a PIN or a token', () => {
    const t = setup({ mode: 'card_and_pin' });
    t.frame({ kind: 'token', value: GUEST_TOKEN });
    t.card(ALICE_CARD);
    t.pin(ALICE_PIN);
    t.card(ALICE_CARD);
    t.time.advance(10_000);
    t.pin(ALICE_PIN);
    t.card(BOB_CARD);
    t.card(GUEST_CARD);
    t.card(ALICE_CARD);
    t.pin('4711');
    t.time.advance(60_000);
    const wire = JSON.stringify(t.all());
    const stored = JSON.stringify(t.state.prepare('SELECT payload FROM events').all());
    expect(
      t
        .all()
        .map((e) => e.hint)
        .filter(Boolean),
    ).toEqual(expect.arrayContaining(['token', '…78', 'PIN', '…79', '…01']));
    expect(t.last('access_granted')).toBeDefined();
    for (const text of [wire, stored, t.logs.join('')]) {
      for (const secret of [ALICE_CARD, ALICE_PIN, '4711', BOB_CARD, GUEST_CARD, GUEST_TOKEN]) expect(text).not.toContain(secret);
    }
  });
});
