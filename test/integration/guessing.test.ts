import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { KeypadGuesses } from '../../src/door/keypadGuesses.js';
import { openDatabase, openStateDatabase } from '../../src/store/database.js';
import { readHeldRevision, writeHeldRevision } from '../../src/store/heldRevision.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { readKeypadGuesses, writeKeypadGuesses } from '../../src/store/keypadGuessState.js';
import { PendingWrites } from '../../src/store/pendingWrites.js';
import type { KeypadLockoutPolicy } from '../../src/core/keypad.js';
import { SECOND_DOOR_UUID, tempDir } from '../support/cli.js';
import { exampleSnapshot, writeSnapshot } from '../support/snapshot.js';
import { ALICE_CARD, ALICE_PIN, BOB_CARD, ManualTime, WALL0, useDoorRuntime } from './doorRuntimeHarness.js';

const setup = useDoorRuntime();
const tmp = tempDir('door-agent-guessing-');
afterAll(tmp.cleanup);

// The example organization plus PINs: Erin (Night shift) has 0123 and a 3-digit 987, Bob (suspended) 5555,
// Dave (Contractors: not authorized here) 6666.
const snapshot = (() => {
  const s = exampleSnapshot();
  const details = s.details as Record<string, { smartcards: Array<{ number: string; label: string }> }>;
  details['105']!.smartcards.push({ number: '0123', label: 'PIN' }, { number: '987', label: 'PIN' });
  details['102']!.smartcards.push({ number: '5555', label: 'PIN' });
  details['104']!.smartcards.push({ number: '6666', label: 'PIN' });
  return writeSnapshot(tmp.path, 'pins.json', s);
})();
const DEFAULTS: KeypadLockoutPolicy = { failures: 5, windowSeconds: 900, lockoutSeconds: 60, maxLockoutSeconds: 900 };
const WRONG = ['9001', '9002', '9003', '9004', '9005'];

describe('PINs are strings of digits, with a minimum length', () => {
  it('0123 opens and 123 or 00123 do not: leading zeros count', () => {
    const t = setup({}, { snapshot, access: { minPinLength: 3 } });
    t.pin('0123');
    expect(t.last('access_granted')).toMatchObject({ kind: 'pin', holders: [{ email_id: 105, reason: null }] });
    t.pin('123');
    t.pin('00123');
    expect(
      t
        .all()
        .filter((e) => e.type === 'access_denied')
        .map((e) => e.reason),
    ).toEqual(['unknown_credential', 'unknown_credential']);
  });

  it('a typed PIN under minPinLength is refused as pin_too_short, and a shorter PIN in the directory never opens', () => {
    const t = setup({}, { snapshot });
    t.pin('987'); // Erin's, but 3 digits
    expect(t.last('access_denied')).toMatchObject({ kind: 'pin', reason: 'pin_too_short', holders: [] });
    expect(t.relay.writes).toEqual([0]);
    // The same directory with a minimum of 3: that entry would have opened.
    const three = setup({}, { snapshot, access: { minPinLength: 3 } });
    three.pin('987');
    expect(three.last('access_granted')).toMatchObject({ holders: [{ email_id: 105, reason: null }] });
  });
});

describe('one wrong-PIN counter per agent, growing, across doors and restarts', () => {
  it('wrong PINs at two doors add up: the lockout then holds at both', () => {
    const a = setup({}, { snapshot });
    const b = setup({ uuid: SECOND_DOOR_UUID }, { sameAgentAs: a });
    for (const pin of WRONG.slice(0, 3)) a.pin(pin);
    for (const pin of WRONG.slice(3)) b.pin(pin);
    expect(b.last('keypad_locked_out')).toMatchObject({ seconds: 60, scope: 'agent' });
    a.pin(ALICE_PIN);
    b.pin(ALICE_PIN);
    expect(a.last('access_denied')).toMatchObject({ reason: 'keypad_locked_out' });
    expect(b.last('access_denied')).toMatchObject({ reason: 'keypad_locked_out' });
    expect(a.relay.writes).toEqual([0]);
    a.card(ALICE_CARD); // cards are not affected
    expect(a.last('access_granted')).toMatchObject({ kind: 'card' });
  });

  it('each lockout in a row doubles; attempts refused during one do not extend it', () => {
    const t = setup({}, { snapshot });
    for (const pin of WRONG) t.pin(pin);
    expect(t.last('keypad_locked_out')).toMatchObject({ seconds: 60 });
    for (let i = 0; i < 100; i++) t.pin('4444');
    t.time.advance(60_000);
    t.pin(ALICE_PIN);
    expect(t.last('access_granted')).toMatchObject({ kind: 'pin' });
    for (const pin of WRONG) t.pin(pin);
    expect(t.last('keypad_locked_out')).toMatchObject({ seconds: 120 });
    t.time.advance(119_000);
    t.pin(ALICE_PIN);
    expect(t.last('access_denied')).toMatchObject({ reason: 'keypad_locked_out' });
    t.time.advance(1_000);
    for (const pin of WRONG) t.pin(pin);
    expect(t.last('keypad_locked_out')).toMatchObject({ seconds: 240 });
    expect(
      t
        .all()
        .filter((e) => e.type === 'keypad_locked_out')
        .map((e) => e.seconds),
    ).toEqual([60, 120, 240]);
  });

  it('a restart (state.db reopened) gives no fresh tries and restarts a lockout in progress in full', async () => {
    const file = join(tmp.path, 'restart-state.db');
    const logger = pino({ level: 'silent' });
    const open = (time: ManualTime) => {
      const db = openStateDatabase(file);
      const writes = new PendingWrites({ timers: time, logger });
      const keypad = new KeypadGuesses({
        policy: DEFAULTS,
        clock: time,
        load: () => readKeypadGuesses(db),
        save: (state) => writes.run('keypad_guesses', () => writeKeypadGuesses(db, state)),
      });
      return { db, keypad };
    };
    const time1 = new ManualTime({ wall: WALL0, mono: 1_000 });
    const first = open(time1);
    const before = setup({}, { snapshot, keypad: first.keypad });
    for (const pin of WRONG) before.pin(pin);
    expect(before.last('keypad_locked_out')).toMatchObject({ seconds: 60 });
    await Promise.resolve(); // the save runs after the decision, in a microtask
    first.db.close();

    // The process restarts 50 s later: its monotonic clock starts again from anything.
    const time2 = new ManualTime({ wall: WALL0 + 50_000, mono: 7 });
    const second = open(time2);
    const after = setup({}, { snapshot, keypad: second.keypad });
    after.time.advance(0);
    expect(second.keypad.isLockedOut()).toBe(true);
    time2.advance(59_999); // the lockout starts again in full
    expect(second.keypad.isLockedOut()).toBe(true);
    time2.advance(1);
    expect(second.keypad.isLockedOut()).toBe(false);
    // The doubling survived too: the next lockout is 120 s.
    for (let i = 0; i < 5; i++) second.keypad.failed();
    expect(second.keypad.lockedUntil()).toBe(time2.monoNow() + 120_000);
    second.db.close();

    // Four wrong PINs, a restart: the fifth locks.
    const file4 = join(tmp.path, 'four-state.db');
    const db4 = openStateDatabase(file4);
    const k4 = new KeypadGuesses({ policy: DEFAULTS, clock: time1, save: (s) => writeKeypadGuesses(db4, s) });
    for (let i = 0; i < 4; i++) expect(k4.failed()).toBeNull();
    await Promise.resolve();
    const k4b = new KeypadGuesses({ policy: DEFAULTS, clock: time2, load: () => readKeypadGuesses(db4) });
    expect(k4b.failed()).toBe(60);
    db4.close();
  });
});

describe('the default window keeps a patient guesser from staying under the threshold', () => {
  it('five wrong PINs two minutes apart lock the keypads out (a one-minute window never would)', () => {
    const t = setup({}, { snapshot }); // access.keypadLockout at its defaults
    for (const pin of WRONG) {
      t.pin(pin);
      t.time.advance(2 * 60_000);
    }
    expect(t.last('keypad_locked_out')).toMatchObject({ seconds: 60, scope: 'agent' });
  });
});

describe('refused known credentials count like unknown ones', () => {
  it("a suspended user's card, tapped again and again, locks the reader", () => {
    const t = setup({}, { snapshot });
    for (let i = 0; i < 10; i++) {
      t.card(BOB_CARD);
      t.time.advance(500);
    }
    expect(t.types()).toContain('card_locked_out');
  });

  it("a suspended user's PIN and an unauthorized user's PIN count toward the keypad lockout", () => {
    const t = setup({}, { snapshot });
    for (const pin of ['5555', '5555', '6666', '6666', '5555']) t.pin(pin);
    expect(t.last('keypad_locked_out')).toMatchObject({ seconds: 60 });
  });

  it('a known PIN refused for the lockdown does not count; an unknown one still does', () => {
    let lockdown = true;
    const t = setup({}, { snapshot, lockdown: () => lockdown });
    for (let i = 0; i < 10; i++) t.pin(ALICE_PIN);
    expect(t.types()).not.toContain('keypad_locked_out');
    expect(t.last('access_denied')).toMatchObject({ reason: 'lockdown' });
    for (const pin of WRONG) t.pin(pin);
    expect(t.types()).toContain('keypad_locked_out');
    lockdown = false;
  });
});

describe('a card lockout never keeps a valid card out long (issue 32 item 3)', () => {
  it('after a stream of unknown cards stops, the next valid card is granted within 5 s, even tapped every second', () => {
    const t = setup({}, { snapshot });
    for (let i = 0; i < 40; i++) {
      t.card(String(9_100_000 + i));
      t.time.advance(200); // 5 cards a second
    }
    expect(t.types()).toContain('card_locked_out');
    const stopped = t.time.monoNow() - 200;
    let granted: number | null = null;
    for (let i = 0; i < 6 && granted === null; i++) {
      t.time.advance(1_000);
      t.card(ALICE_CARD); // the valid user's own taps do not prolong the lockout
      if (t.last('access_granted')) granted = t.time.monoNow();
    }
    expect(granted).not.toBeNull();
    expect(granted! - stopped).toBeLessThanOrEqual(5_000);
  });

  it('a continuous stream at 5 cards/s: a valid card tapped every 2 s is refused for at most 30 s', () => {
    const t = setup({}, { snapshot });
    const refusedSince: number[] = [];
    const grants: number[] = [];
    const start = t.time.monoNow();
    for (let ms = 0; ms <= 180_000; ms += 200) {
      t.card(String(9_200_000 + (ms % 100_000)));
      if (ms % 2_000 === 1_000) {
        const before = t.last('access_granted')?.id; // (the audit log keeps its last 1000 events)
        t.card(ALICE_CARD);
        if (t.last('access_granted')?.id !== before) {
          // Granted at most 30 s after the first tap refused since the last grant.
          if (refusedSince.length > 0) expect(t.time.monoNow() - refusedSince[0]!).toBeLessThanOrEqual(30_000);
          grants.push(t.time.monoNow());
          refusedSince.length = 0;
        } else refusedSince.push(t.time.monoNow());
        if (refusedSince.length > 0) expect(t.time.monoNow() - refusedSince[0]!).toBeLessThan(30_000);
      }
      t.time.advance(200);
    }
    expect(t.types()).toContain('card_locked_out');
    expect(grants.length).toBeGreaterThanOrEqual(5);
    expect(grants[0]! - start).toBeLessThanOrEqual(30_000);
    // The stream keeps starting lockouts, each over within 30 s.
    const lockouts = t.all().filter((e) => e.type === 'card_locked_out').length;
    expect(lockouts).toBeGreaterThanOrEqual(5);
  });

  it('a flood at one reader never refuses a valid card at another door of the agent', () => {
    const a = setup({}, { snapshot });
    const b = setup({ uuid: SECOND_DOOR_UUID }, { sameAgentAs: a });
    for (let i = 0; i < 50; i++) {
      a.card(String(9_300_000 + i));
      a.time.advance(100);
    }
    expect(a.types()).toContain('card_locked_out');
    a.card(ALICE_CARD);
    expect(a.last('access_denied')).toMatchObject({ reason: 'card_locked_out' });
    b.card(ALICE_CARD);
    expect(b.last('access_granted')).toMatchObject({ kind: 'card' });
  });
});

describe('upgrade: a cache from before PINs kept their zeros', () => {
  it('gets the digits column, and its revision held is forgotten so the next sync is a full one', () => {
    const file = join(tmp.path, 'old-cache.db');
    const db = openDatabase(file);
    writeHeldRevision(db, { revision: 41, history: null, tag: null });
    // The cache as it was before the digits migration (the columns of later migrations dropped too).
    const digitsStep = MIGRATIONS.findIndex((m) => typeof m === 'string' && m.includes('ADD COLUMN digits'));
    const later = MIGRATIONS.slice(digitsStep + 1).flatMap((m) =>
      typeof m === 'string' ? [...m.matchAll(/ALTER TABLE credentials ADD COLUMN (\w+)/g)].map((x) => x[1]) : [],
    );
    db.exec(`${[...later, 'digits'].map((c) => `ALTER TABLE credentials DROP COLUMN ${c};`).join(' ')} PRAGMA user_version = ${digitsStep}`);
    db.close();
    const upgraded = openDatabase(file);
    expect(readHeldRevision(upgraded)).toBeNull();
    expect(upgraded.prepare("SELECT count(*) FROM pragma_table_info('credentials') WHERE name = 'digits'").pluck().get()).toBe(1);
    upgraded.close();
  });
});
