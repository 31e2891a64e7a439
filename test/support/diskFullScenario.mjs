// Runs inside `unshare -m` with a small tmpfs mounted at argv[2] (see test/integration/diskFull.test.ts):
// a door held open, the disk filled, then LOCK, a restart, and the events of that period. Prints JSON.
import { closeSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { parseConfig } from '../../dist/src/config/load.js';
import { LockController } from '../../dist/src/door/lockController.js';
import { SimulatedGpio } from '../../dist/src/hardware/simulatedGpio.js';
import { openStateDatabase } from '../../dist/src/store/database.js';
import { DoorStateStore } from '../../dist/src/store/doorState.js';
import { EventLog } from '../../dist/src/store/eventLog.js';
import { PendingWrites } from '../../dist/src/store/pendingWrites.js';
import { systemClock, systemTimers } from '../../dist/src/util/clock.js';

const [dataDir, gpioDir, uuid] = process.argv.slice(2);
const door = parseConfig(`agent: { id: t }\naccess: { groups: [Staff] }\ndoors: [ { uuid: ${uuid}, resourceId: 12, relay: { pin: 17 } } ]`, 'test').doors[0];
const logger = pino({ level: process.env.SCENARIO_LOG ?? 'silent' }, pino.destination(2));
const result = { persistErrors: 0 };

function fillDisk() {
  const fd = openSync(join(dataDir, 'filler'), 'w');
  const chunk = Buffer.alloc(4096);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (err) {
    result.fillError = err.code;
  } finally {
    closeSync(fd);
  }
}

function start() {
  const gpio = new SimulatedGpio(gpioDir);
  const relay = gpio.openOutput(17, 0);
  const persistence = new DoorStateStore(join(dataDir, 'doors'));
  const controller = new LockController(door, relay, {
    clock: systemClock,
    timers: systemTimers,
    persistence,
    clockSynchronized: () => true,
    onPersistError: () => void result.persistErrors++,
  });
  return { gpio, relay, controller, persistence, resumed: controller.resume() };
}

const db = openStateDatabase(join(dataDir, 'state.db'), { busyTimeoutMs: 20 });
const writes = new PendingWrites({ timers: systemTimers, logger });
const log = new EventLog(db, { agentId: 't', maxEvents: 100_000, writes });
const first = start();
first.controller.unlock(null, 'UNLOCK');
log.append({ type: 'unlocked', door: uuid, at: Date.now(), data: { cause: 'UNLOCK' } });
// The hold-open is written behind, on the thread pool: on disk before the disk fills (else the lock has nothing to undo).
await first.persistence.settled();
result.savedBeforeFull = first.persistence.load(uuid)?.state ?? null;
fillDisk();
first.controller.lock('LOCK');
result.relayAfterLock = first.relay.read();
for (let i = 0; i < 200; i++) log.append({ type: 'access_denied', door: uuid, at: Date.now(), data: { i } });
log.append({ type: 'locked', door: uuid, at: Date.now(), data: { cause: 'LOCK' } });
result.pendingWhileFull = writes.pending;
first.controller.shutdown();
first.gpio.close();

// The process dies here and systemd starts it again, the disk still full.
const second = start();
result.resumedState = second.resumed.state;
result.relayAfterRestart = second.relay.read();
second.controller.shutdown();
second.gpio.close();

rmSync(join(dataDir, 'filler'));
result.flushed = writes.flush();
result.events = log.since(0, 1000).map((e) => e.type);
writes.stop();
db.close();
process.stdout.write(`${JSON.stringify(result)}\n`);
