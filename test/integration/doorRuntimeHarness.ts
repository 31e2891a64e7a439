import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import type { DoorOptions } from '../../src/door/options.js';
import type { Level } from '../../src/core/relay.js';
import { AccessChecker } from '../../src/door/accessChecker.js';
import { DoorRuntime } from '../../src/door/doorRuntime.js';
import { LockController } from '../../src/door/lockController.js';
import type { GpioOutput } from '../../src/hardware/gpio.js';
import { importSnapshot } from '../../src/snapshot/importSnapshot.js';
import { CredentialCache } from '../../src/store/credentialCache.js';
import { openDatabase, openStateDatabase, type Db } from '../../src/store/database.js';
import { DoorStateStore } from '../../src/store/doorState.js';
import { EventLog, type EventType, type WireEvent } from '../../src/store/eventLog.js';
import { ManualTime } from '../support/manualTime.js';
export { ManualTime };
import { DOOR_UUID, ROOT, tempDir } from '../support/cli.js';

export { DOOR_UUID };

// A Tuesday, 10:00 in Europe/Berlin: inside guest link 501's schedule (Mon-Fri 9-17).
export const WALL0 = Date.parse('2026-11-24T10:00:00+01:00');
const SNAPSHOT = join(ROOT, 'examples/snapshot.json');
export const ALICE_CARD = '4213578';
export const ALICE_PIN = '1234';
export const BOB_CARD = '4213579';
export const GUEST_CARD = '7700001';
export const GUEST_TOKEN = 'guest-token-carol-0001';


export class MemoryRelay implements GpioOutput {
  readonly pin = 17;
  writes: Level[] = [];
  write(level: Level): void {
    this.writes.push(level);
  }
  read(): Level {
    return this.writes.at(-1) ?? 0;
  }
}

/**
 * A real DoorRuntime over a real SQLite cache (examples/snapshot.json imported), EventLog, AccessChecker and
 * LockController on an in-memory relay, driven by a manual clock. Call at the top level of a test file.
 */
export function useDoorRuntime() {
  const tmp = tempDir('door-agent-runtime-');
  afterAll(tmp.cleanup);
  let n = 0;
  const cleanups: Array<() => void> = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });
  return (overrides: Partial<DoorOptions> = {}) => setup(tmp.path, `cache-${n++}.db`, overrides, cleanups);
}

function setup(dir: string, name: string, overrides: Partial<DoorOptions>, cleanups: Array<() => void>) {
  const base = parseConfig(
    `agent: { id: test-agent, timezone: Europe/Berlin, dataDir: ${dir} }
access: { groups: [Staff], policies: [Night shift] }
doors: [ { uuid: ${DOOR_UUID}, resourceId: 12, relay: { pin: 17 }, unlockSeconds: 5, heldOpenSeconds: 30 } ]`,
    'test',
  );
  const door: DoorOptions = { ...base.doors[0]!, ...overrides };
  const db: Db = openDatabase(join(dir, name));
  importSnapshot(db, SNAPSHOT, { maxRemovalRatio: null, now: WALL0 });
  const time = new ManualTime({ wall: WALL0, mono: 1_000 });
  const relay = new MemoryRelay();
  const state = openStateDatabase(join(dir, `${name}-state.db`));
  const events = new EventLog(state, { agentId: 'test-agent', maxEvents: 1000 });
  const logs: string[] = [];
  const logger = pino({ level: 'debug', base: undefined, timestamp: false }, { write: (line: string) => void logs.push(line) });
  // Wired as src/app.ts does: lock state changes become unlocked/locked events.
  const controller = new LockController(door, relay, {
    clock: time,
    timers: time,
    persistence: new DoorStateStore(join(dir, `${name}-doors`)),
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
  const alarms: Array<{ type: string; data: Record<string, unknown> }> = [];
  const runtime = new DoorRuntime(door, {
    controller,
    checker: new AccessChecker(new CredentialCache(db), base),
    events,
    clock: time,
    timers: time,
    logger,
    onAlarm: (type, data) => void alarms.push({ type, data }),
  });
  cleanups.push(() => {
    runtime.stop();
    controller.shutdown();
    if (db.open) db.close();
    state.close();
  });
  const all = (): WireEvent[] => events.since(0);
  const types = (): EventType[] => all().map((e) => e.type);
  const last = (type: EventType): WireEvent | undefined => all().filter((e) => e.type === type).at(-1);
  const card = (value: string) => runtime.onReaderFrame({ kind: 'card', value });
  const pin = (value: string) => runtime.onReaderFrame({ kind: 'pin', value });
  return { door, db, state, time, relay, events, controller, runtime, logs, all, types, last, card, pin, alarms };
}
