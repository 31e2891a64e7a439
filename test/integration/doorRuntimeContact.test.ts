import { describe, expect, it } from 'vitest';
import { ALICE_CARD, ALICE_PIN, useDoorRuntime } from './doorRuntimeHarness.js';

// Door contact supervision at work (decisions, keypad and exit button: doorRuntime.test.ts).

const setup = useDoorRuntime();

describe('DoorRuntime door contact', () => {
  it('the initial reading gives no event; opening while LOCKED with no grant is door_opened + door_forced', () => {
    const t = setup();
    t.runtime.initialContact(false);
    expect(t.all()).toEqual([]);
    t.time.advance(1000);
    t.runtime.onContact(true);
    expect(t.types()).toEqual(['door_opened', 'door_forced']);
    t.runtime.onContact(false);
    expect(t.types()).toEqual(['door_opened', 'door_forced', 'door_closed']);
  });

  it('a grant excuses an opening for unlockSeconds (even after an early relock), not after', () => {
    const t = setup({ relockOnClose: false });
    t.runtime.initialContact(false);
    t.card(ALICE_CARD);
    t.time.advance(1000);
    t.controller.lock('remote'); // relocked early: the first opening within the window is still not forced
    t.time.advance(3000);
    t.runtime.onContact(true);
    t.runtime.onContact(false);
    expect(t.types().filter((x) => x.startsWith('door_'))).toEqual(['door_opened', 'door_closed']);
    t.card(ALICE_CARD);
    t.time.advance(6000); // 6 s after the second grant, its door never opened
    t.runtime.onContact(true);
    expect(t.types().slice(-2)).toEqual(['door_opened', 'door_forced']);
  });

  // Issue 32 item 14: one passage per grant, exit request or remote release, however long unlockSeconds is.
  describe('one passage per release (an accessibility door: unlockSeconds 30)', () => {
    const doorEvents = (t: ReturnType<typeof setup>) => t.types().filter((x) => x.startsWith('door_'));

    it.each([
      ['a card grant', (t: ReturnType<typeof setup>) => t.card(ALICE_CARD)],
      ['an exit request', (t: ReturnType<typeof setup>) => t.runtime.onExitButton(true)],
    ])('%s: opened, closed and relocked, a second opening within the 30 s is door_forced', (_what, release) => {
      const t = setup({ unlockSeconds: 30 });
      t.runtime.initialContact(false);
      release(t);
      t.time.advance(2000);
      t.runtime.onContact(true);
      t.time.advance(2000);
      t.runtime.onContact(false);
      expect(t.controller.snapshot()).toMatchObject({ state: 'LOCKED' });
      expect(t.last('locked')).toMatchObject({ cause: 'door closed' });
      t.time.advance(3000); // 7 s after the release
      t.runtime.onContact(true);
      expect(doorEvents(t)).toEqual(['door_opened', 'door_closed', 'door_opened', 'door_forced']);
    });

    it('a second grant allows a second passage', () => {
      const t = setup({ unlockSeconds: 30 });
      t.runtime.initialContact(false);
      t.card(ALICE_CARD);
      t.runtime.onContact(true);
      t.runtime.onContact(false);
      t.card(ALICE_CARD);
      t.runtime.onContact(true);
      t.runtime.onContact(false);
      expect(doorEvents(t)).toEqual(['door_opened', 'door_closed', 'door_opened', 'door_closed']);
    });

    it('a hold-open is not a release: any number of passages, never forced', () => {
      const t = setup({ unlockSeconds: 30 });
      t.runtime.initialContact(false);
      t.controller.unlock(null, 'remote command r2');
      for (let i = 0; i < 3; i++) {
        t.runtime.onContact(true);
        t.runtime.onContact(false);
      }
      expect(t.controller.snapshot()).toMatchObject({ state: 'UNLOCKED', heldOpen: true });
      expect(doorEvents(t)).not.toContain('door_forced');
    });
  });

  it('held open past heldOpenSeconds gives door_held_open exactly once per opening', () => {
    const t = setup();
    t.runtime.initialContact(false);
    t.runtime.onExitButton(true);
    t.runtime.onContact(true);
    t.time.advance(29_999);
    expect(t.types()).not.toContain('door_held_open');
    t.time.advance(1);
    expect(t.last('door_held_open')).toMatchObject({ seconds: 30 });
    t.time.advance(600_000);
    expect(t.types().filter((x) => x === 'door_held_open')).toHaveLength(1);
    t.runtime.onContact(false);
    t.runtime.onContact(true); // forced (locked long ago) and timed again
    t.time.advance(30_000);
    expect(t.types().filter((x) => x === 'door_held_open')).toHaveLength(2);
  });

  it('a door already open at start gives door_held_open after heldOpenSeconds', () => {
    const t = setup();
    t.runtime.initialContact(true);
    expect(t.all()).toEqual([]);
    t.time.advance(30_000);
    expect(t.types()).toEqual(['door_held_open']);
  });

  it('relockOnClose: a door opened and closed during a timed unlock relocks at once', () => {
    const t = setup();
    t.runtime.initialContact(false);
    t.card(ALICE_CARD);
    t.time.advance(1000);
    t.runtime.onContact(true);
    t.time.advance(1000);
    t.runtime.onContact(false);
    expect(t.relay.writes).toEqual([0, 1, 0]);
    expect(t.controller.snapshot().state).toBe('LOCKED');
    expect(t.last('locked')).toMatchObject({ cause: 'door closed' });
    t.time.advance(10_000);
    expect(t.types().filter((x) => x === 'locked')).toHaveLength(1);
  });

  it('relockOnClose does not cut short a remote unlock_time (it was asked for explicitly)', () => {
    const t = setup();
    t.runtime.initialContact(false);
    t.controller.unlock(3600, 'remote command r1');
    t.runtime.onContact(true);
    t.runtime.onContact(false);
    expect(t.controller.snapshot()).toMatchObject({ state: 'UNLOCKED' });
  });

  it('relockOnClose does not end a hold-open', () => {
    const t = setup();
    t.runtime.initialContact(false);
    t.controller.unlock(null, 'OPEN');
    t.runtime.onContact(true);
    t.runtime.onContact(false);
    t.time.advance(3600_000);
    expect(t.controller.snapshot()).toMatchObject({ state: 'UNLOCKED', relockAt: null });
    expect(t.relay.writes).toEqual([0, 1]);
    expect(t.types()).not.toContain('locked');
  });

  it('relockOnClose does not end a hold-open that maxUnlockSeconds caps; the cap does', () => {
    const t = setup({ maxUnlockSeconds: 3600 });
    t.runtime.initialContact(false);
    t.controller.unlock(null, 'OPEN');
    t.runtime.onContact(true);
    t.runtime.onContact(false);
    t.time.advance(3599_000);
    expect(t.controller.snapshot()).toMatchObject({ state: 'UNLOCKED', heldOpen: true });
    t.time.advance(1000);
    expect(t.controller.snapshot()).toMatchObject({ state: 'LOCKED', cause: 'timer' });
  });

  it('relockOnClose does not end a hold-open set while the door stood open during a timed unlock', () => {
    const t = setup();
    t.runtime.initialContact(false);
    t.card(ALICE_CARD);
    t.runtime.onContact(true);
    t.controller.unlock(null, 'OPEN');
    t.time.advance(1000);
    t.runtime.onContact(false);
    t.time.advance(60_000);
    expect(t.controller.snapshot()).toMatchObject({ state: 'UNLOCKED', relockAt: null });
    expect(t.relay.writes).toEqual([0, 1]);
  });

  it('relockOnClose: false keeps the timer after the door closes', () => {
    const t = setup({ relockOnClose: false });
    t.runtime.initialContact(false);
    t.card(ALICE_CARD);
    t.runtime.onContact(true);
    t.time.advance(1000);
    t.runtime.onContact(false);
    expect(t.relay.writes).toEqual([0, 1]);
    t.time.advance(4000);
    expect(t.relay.writes).toEqual([0, 1, 0]);
    expect(t.last('locked')).toMatchObject({ cause: 'timer' });
  });

  // Issue 30 item 3: a grant after which the door was not opened within unlockSeconds.
  describe('granted_not_opened', () => {
    it('a granted card whose door stays shut: one event naming the credential (masked), when the unlock time ends', () => {
      const t = setup();
      t.runtime.initialContact(false);
      t.card(ALICE_CARD);
      t.time.advance(4_999);
      expect(t.types()).not.toContain('granted_not_opened');
      t.time.advance(1);
      expect(t.last('granted_not_opened')).toMatchObject({ kind: 'card', hint: '…78', seconds: 5, door: t.door.uuid });
      expect(JSON.stringify(t.all())).not.toContain(ALICE_CARD);
      t.time.advance(60_000);
      expect(t.types().filter((x) => x === 'granted_not_opened')).toHaveLength(1);
    });

    it('the door opened in time: no event; a PIN (card_and_pin) names both factors as access_granted does', () => {
      const t = setup();
      t.runtime.initialContact(false);
      t.card(ALICE_CARD);
      t.time.advance(2_000);
      t.runtime.onContact(true);
      t.time.advance(60_000);
      expect(t.types()).not.toContain('granted_not_opened');

      const both = setup({ mode: 'card_and_pin' });
      both.runtime.initialContact(false);
      both.card(ALICE_CARD);
      both.pin(ALICE_PIN);
      both.time.advance(5_000);
      expect(both.last('granted_not_opened')).toMatchObject({ kind: 'card_and_pin', hint: 'PIN', card_hint: '…78' });
    });

    it('a door without a contact cannot tell, and an exit request is not a grant: no event', () => {
      const t = setup();
      t.card(ALICE_CARD); // no contact reading ever
      t.time.advance(60_000);
      const u = setup();
      u.runtime.initialContact(false);
      u.runtime.onExitButton(true);
      u.time.advance(60_000);
      expect([...t.types(), ...u.types()]).not.toContain('granted_not_opened');
    });
  });
});
