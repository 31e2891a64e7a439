import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import type { DoorConfig } from '../../src/config/schema.js';
import type { Level } from '../../src/core/relay.js';
import { AccessChecker } from '../../src/door/accessChecker.js';
import { DoorRuntime } from '../../src/door/doorRuntime.js';
import { LockController } from '../../src/door/lockController.js';
import type { GpioOutput } from '../../src/hardware/gpio.js';
import { importSnapshot } from '../../src/snapshot/importSnapshot.js';
import { CredentialCache } from '../../src/store/credentialCache.js';
import { openDatabase, type Db } from '../../src/store/database.js';
import { DoorStateStore } from '../../src/store/doorState.js';
import { EventLog, type EventType, type WireEvent } from '../../src/store/eventLog.js';
import type { Clock, Timers } from '../../src/util/clock.js';
import { DOOR_UUID, ROOT, tempDir } from '../support/cli.js';

// A Tuesday, 10:00 in Europe/Berlin: inside guest link 501's schedule (Mon-Fri 9-17).
const WALL0 = Date.parse('2026-11-24T10:00:00+01:00');
const SNAPSHOT = join(ROOT, 'examples/snapshot.json');
const ALICE_CARD = '4213578';
const ALICE_PIN = '1234';
const BOB_CARD = '4213579';
const GUEST_CARD = '7700001';
const GUEST_TOKEN = 'guest-token-carol-0001';

/** Manual wall + monotonic clock; timers fire in due order as time is advanced. */
class ManualTime implements Clock, Timers {
  wall = WALL0;
  mono = 1_000;
  private nextId = 1;
  private pending = new Map<number, { due: number; callback: () => void }>();
  wallNow = () => this.wall;
  monoNow = () => this.mono;
  setTimeout(callback: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.pending.set(id, { due: this.mono + Math.max(0, ms), callback });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.pending.delete(handle as number);
  }
  advance(ms: number): void {
    const target = this.mono + ms;
    for (;;) {
      let next: [number, { due: number; callback: () => void }] | undefined;
      for (const entry of this.pending) if (entry[1].due <= target && (!next || entry[1].due < next[1].due)) next = entry;
      if (!next) break;
      this.pending.delete(next[0]);
      this.wall += next[1].due - this.mono;
      this.mono = next[1].due;
      next[1].callback();
    }
    this.wall += target - this.mono;
    this.mono = target;
  }
}

class MemoryRelay implements GpioOutput {
  readonly pin = 17;
  writes: Level[] = [];
  write(level: Level): void {
    this.writes.push(level);
  }
  read(): Level {
    return this.writes.at(-1) ?? 0;
  }
}

const tmp = tempDir('door-agent-runtime-');
afterAll(tmp.cleanup);
let n = 0;
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

function setup(overrides: Partial<DoorConfig> = {}) {
  const base = parseConfig(
    `agent: { id: test-agent, timezone: Europe/Berlin, dataDir: ${tmp.path} }
access: { groups: [Staff], policies: [Night shift] }
doors: [ { uuid: ${DOOR_UUID}, resourceId: 12, relay: { pin: 17 }, unlockSeconds: 5, heldOpenSeconds: 30 } ]`,
    'test',
  );
  const door: DoorConfig = { ...base.doors[0]!, ...overrides };
  const db: Db = openDatabase(join(tmp.path, `cache-${n++}.db`));
  importSnapshot(db, SNAPSHOT, { maxRemovalRatio: null, now: WALL0 });
  const time = new ManualTime();
  const relay = new MemoryRelay();
  const events = new EventLog(db, { agentId: 'test-agent', maxEvents: 1000 });
  const logs: string[] = [];
  const logger = pino({ level: 'debug', base: undefined, timestamp: false }, { write: (line: string) => void logs.push(line) });
  // Wired as src/app.ts does: lock state changes become unlocked/locked events.
  const controller = new LockController(door, relay, {
    clock: time,
    timers: time,
    persistence: new DoorStateStore(db),
    onChange: (snapshot, previous) => {
      if (snapshot.state === previous) return;
      const relockAt = snapshot.relockAt === null ? null : new Date(snapshot.relockAt).toISOString();
      events.append({
        type: snapshot.state === 'UNLOCKED' ? 'unlocked' : 'locked',
        door: door.uuid,
        at: snapshot.changedAt,
        data: snapshot.state === 'UNLOCKED' ? { cause: snapshot.cause, relock_at: relockAt } : { cause: snapshot.cause },
      });
    },
  });
  const runtime = new DoorRuntime(door, {
    controller,
    checker: new AccessChecker(new CredentialCache(db), base),
    events,
    clock: time,
    timers: time,
    logger,
  });
  cleanups.push(() => {
    runtime.stop();
    controller.shutdown();
    db.close();
  });
  const all = (): WireEvent[] => events.since(0);
  const types = (): EventType[] => all().map((e) => e.type);
  const last = (type: EventType): WireEvent | undefined => all().filter((e) => e.type === type).at(-1);
  const card = (value: string) => runtime.onReaderFrame({ kind: 'card', value });
  const pin = (value: string) => runtime.onReaderFrame({ kind: 'pin', value });
  return { door, db, time, relay, events, controller, runtime, logs, all, types, last, card, pin };
}

describe('DoorRuntime decisions (card_or_pin)', () => {
  it('a granted card unlocks for unlockSeconds: access_granted, unlocked, then locked by the timer', () => {
    const t = setup();
    t.card(`000${ALICE_CARD}`); // leading zeros are the same card
    expect(t.relay.writes).toEqual([0, 1]);
    expect(t.types()).toEqual(['access_granted', 'unlocked']);
    expect(t.last('access_granted')).toMatchObject({
      id: 'test-agent-1',
      door: DOOR_UUID,
      at: new Date(WALL0).toISOString(),
      kind: 'card',
      hint: '…78',
      reason: null,
      holders: [{ email_id: 101, reason: null }],
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
    expect(t.last('access_denied')).toMatchObject({ reason: 'keypad_locked_out' });
    expect(t.relay.writes).toEqual([0]);
  });

  it('a guest card is granted without a PIN inside its schedule, and refused outside it', () => {
    const t = setup({ mode: 'card_and_pin' });
    t.card(GUEST_CARD);
    expect(t.relay.writes).toEqual([0, 1]);
    expect(t.last('access_granted')?.holders).toEqual(
      expect.arrayContaining([{ magic_link_id: '501', reason: null }, { email_id: 103, reason: 'not_authorized' }]),
    );
    t.time.advance(8 * 3600_000); // 18:00: outside Mon-Fri 9-17
    t.card(GUEST_CARD);
    expect(t.last('access_denied')?.holders).toContainEqual({ magic_link_id: '501', reason: 'outside_schedule' });
    expect(t.relay.writes).toEqual([0, 1, 0]);
  });
});

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
    t.runtime.onContact(true);
    t.runtime.onContact(false);
    t.controller.lock('remote'); // relocked early: an opening within the window is still not forced
    t.time.advance(3000);
    t.runtime.onContact(true);
    t.runtime.onContact(false);
    expect(t.types().filter((x) => x.startsWith('door_'))).toEqual(['door_opened', 'door_closed', 'door_opened', 'door_closed']);
    t.time.advance(2000); // 6 s after the grant
    t.runtime.onContact(true);
    expect(t.types().slice(-2)).toEqual(['door_opened', 'door_forced']);
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
});

describe('DoorRuntime secrets', () => {
  it('no event (wire or stored) and no log line holds a whole card number, a PIN or a token', () => {
    const t = setup({ mode: 'card_and_pin' });
    t.runtime.onReaderFrame({ kind: 'token', value: GUEST_TOKEN });
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
    const stored = JSON.stringify(t.db.prepare('SELECT payload FROM events').all());
    expect(t.all().map((e) => e.hint).filter(Boolean)).toEqual(expect.arrayContaining(['token', '…78', 'PIN', '…79', '…01']));
    expect(t.last('access_granted')).toBeDefined();
    for (const text of [wire, stored, t.logs.join('')]) {
      for (const secret of [ALICE_CARD, ALICE_PIN, '4711', BOB_CARD, GUEST_CARD, GUEST_TOKEN]) expect(text).not.toContain(secret);
    }
  });
});
