import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { readerCardFormat, type AccessOptions, type DoorOptions } from '../../src/door/options.js';
import { keypadPolicy } from '../../src/config/keypadLockout.js';
import { KeypadGuesses } from '../../src/door/keypadGuesses.js';
import type { Level } from '../../src/core/relay.js';
import { AccessChecker } from '../../src/door/accessChecker.js';
import { DoorRuntime, type AlarmType } from '../../src/door/doorRuntime.js';
import type { DecisionMetrics } from '../../src/door/credentialFlow.js';
import { LockController } from '../../src/door/lockController.js';
import { credentialsFrom } from '../../src/readers/reader.js';
import type { ReaderFrame } from '../../src/readers/readerFrames.js';
import type { GpioOutput } from '../../src/hardware/gpio.js';
import { importSnapshot } from '../../src/snapshot/importSnapshot.js';
import { CredentialCache } from '../../src/store/credentialCache.js';
import { openDatabase, openStateDatabase, type Db } from '../../src/store/database.js';
import { DoorStateStore } from '../../src/store/doorState.js';
import { EventLog, type EventType, type WireEvent } from '../../src/store/eventLog.js';
import { ManualTime } from '../support/manualTime.js';
export { ManualTime };
import { DOOR_UUID, ROOT, tempDir } from '../support/cli.js';
import { writeSnapshot, type Snapshot } from '../support/snapshot.js';

export { DOOR_UUID };

// A Tuesday, 10:00 in Europe/Berlin: inside guest link 501's schedule (Mon-Fri 9-17).
export const WALL0 = Date.parse('2026-11-24T10:00:00+01:00');
const SNAPSHOT = join(ROOT, 'examples/snapshot.json');
export const ALICE_CARD = '4213578';
export const ALICE_PIN = '1234';
export const BOB_CARD = '4213579';
export const GUEST_CARD = '7700001';
export const GUEST_TOKEN = 'guest-token-carol-0001';

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
  return (overrides: Partial<DoorOptions> = {}, more: SetupMore = {}) => setup(tmp.path, `cache-${n++}.db`, overrides, cleanups, more);
}

export interface SetupMore {
  /**
   * More keys of the access section: YAML flow style without braces (`duressPin: lastDigitPlusOne`), parsed with
   * the configuration, or option values laid over the parsed section (minPinLength, keypadLockout).
   */
  access?: string | Partial<AccessOptions>;
  /** Another door of the same agent: shares its clock, cache and keypad lockout (as src/app.ts wires them). */
  sameAgentAs?: { time: ManualTime; keypad: KeypadGuesses; db: Db };
  /** The agent's keypad lockout (e.g. one restored from a state.db); default: a fresh one from the policy. */
  keypad?: KeypadGuesses;
  /** The directory imported instead of examples/snapshot.json: a snapshot, or a snapshot file's path. */
  snapshot?: Snapshot | string;
  /** Whether the door is in lockdown (asked at each decision, as the daemon's Lockdowns answer). */
  lockdown?: () => boolean;
  /** What the agent's metrics are told of each decision. */
  metrics?: DecisionMetrics;
}

function setup(dir: string, name: string, overrides: Partial<DoorOptions>, cleanups: Array<() => void>, more: SetupMore) {
  const accessYaml = typeof more.access === 'string' ? more.access : '';
  const accessValues = typeof more.access === 'object' ? more.access : {};
  const base = parseConfig(
    `agent: { id: test-agent, timezone: Europe/Berlin, dataDir: ${dir} }
access: { groups: [Staff], policies: [Night shift]${accessYaml ? `, ${accessYaml}` : ''} }
doors: [ { uuid: ${DOOR_UUID}, resourceId: 12, relay: { pin: 17 }, unlockSeconds: 5, heldOpenSeconds: 30 } ]`,
    'test',
  );
  const door: DoorOptions = { ...base.doors[0]!, ...overrides };
  // A door-level keypadLockout (the old key) is merged into the agent's policy as the loader does.
  const access: AccessOptions = { ...base.access, keypadLockout: keypadPolicy(accessValues.keypadLockout, [door.keypadLockout]), ...accessValues };
  const config = { ...base, access };
  const db: Db = more.sameAgentAs?.db ?? openDatabase(join(dir, name));
  const snapshotFile =
    more.snapshot === undefined ? SNAPSHOT : typeof more.snapshot === 'string' ? more.snapshot : writeSnapshot(dir, `${name}-snapshot.json`, more.snapshot);
  if (!more.sameAgentAs) importSnapshot(db, snapshotFile, { maxRemovalRatio: null, now: WALL0 });
  const time = more.sameAgentAs?.time ?? new ManualTime({ wall: WALL0, mono: 1_000 });
  const keypad = more.sameAgentAs?.keypad ?? more.keypad ?? new KeypadGuesses({ policy: access.keypadLockout, clock: time });
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
  // The alarms as the MQTT side would get them (published at once, beside the outbox).
  const alarms: Array<{ type: AlarmType; data: Record<string, unknown> }> = [];
  const runtime = new DoorRuntime(door, {
    controller,
    checker: new AccessChecker(new CredentialCache(db), config),
    keypad,
    events,
    lockdown: more.lockdown,
    metrics: more.metrics,
    clock: time,
    timers: time,
    logger,
    onAlarm: (type, data) => alarms.push({ type, data }),
  });
  cleanups.push(() => {
    runtime.stop();
    controller.shutdown();
    if (db.open) db.close();
    state.close();
  });
  // The door's own events: not the audit chain's first record, which the first append writes before them.
  const all = (): WireEvent[] => events.since(0).filter((e) => e.type !== 'audit_chain_started');
  const types = (): EventType[] => all().map((e) => e.type);
  const last = (type: EventType): WireEvent | undefined =>
    all()
      .filter((e) => e.type === type)
      .at(-1);
  // The door's reader, as src/readers hands its frames on: normalized once (the door reader's card format).
  const frame: (frame: ReaderFrame) => void = credentialsFrom(readerCardFormat(door), {
    logger,
    events: { credential: (credential) => runtime.onCredential(credential), connection: () => {} },
  });
  const card = (value: string) => frame({ kind: 'card', value });
  const pin = (value: string) => frame({ kind: 'pin', value });
  return { door, db, state, time, relay, events, controller, runtime, logs, alarms, all, types, last, card, pin, frame, keypad };
}
