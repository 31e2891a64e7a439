import type { Logger } from 'pino';
import type { AgentOptions } from './config/options.js';
import type { DoorOptions } from './door/options.js';
import { relayLevel, type Level } from './core/relay.js';
import { AccessChecker } from './door/accessChecker.js';
import { DebouncedInput } from './door/debouncedInput.js';
import { DoorRuntime } from './door/doorRuntime.js';
import { LockController, type LockSnapshot } from './door/lockController.js';
import { createGpioDriver } from './hardware/createGpio.js';
import type { GpioDriver, GpioOutput } from './hardware/gpio.js';
import { SerialReader, type PortFactory } from './hardware/serialReader.js';
import { CredentialCache } from './store/credentialCache.js';
import { cachePath, openDatabase, type Db } from './store/database.js';
import { DoorStateStore, doorStateDir } from './store/doorState.js';
import { isClockSynchronized } from './util/clockSync.js';
import type { Notify } from './system/sdNotify.js';
import { SystemdWatchdog } from './system/watchdog.js';
import { EventLog } from './store/eventLog.js';
import { PendingWrites } from './store/pendingWrites.js';
import { writeRuntimeStatus, type RuntimeStatus } from './store/runtimeStatus.js';
import type { Clock, Timers } from './util/clock.js';
import { checkReferencedFiles, readSecret, type Env } from './config/secrets.js';
import { EXIT_INVALID_CONFIG } from './config/schema.js';
import { InputError } from './util/errors.js';
import { MqttBridge } from './mqtt/bridge.js';
import { connectBroker } from './protocol/connection.js';
import { Topics } from './protocol/topics.js';
import { GuestLinkStore } from './store/guestLinkStore.js';
import { ReplayCache } from './store/replayCache.js';
import { VERSION } from './version.js';
import { SyncScheduler } from './sync/scheduler.js';
import { ServiceClient } from './sync/serviceClient.js';
import { syncOnce } from './sync/sync.js';

export interface AgentDeps {
  logger: Logger;
  clock: Clock;
  timers: Timers;
  /** Defaults to the driver named in the config. */
  gpio?: GpioDriver;
  openPort?: PortFactory;
  pid?: number;
  /** For secrets given in the environment (DOOR_AGENT_MQTT_PASSWORD). */
  env?: Env;
  /** Defaults to asking the system (see util/clockSync.ts). */
  clockSynchronized?: () => boolean;
  /** sd_notify to systemd (Type=notify), null or absent outside systemd. */
  notify?: Notify | null;
  /** WATCHDOG_USEC for this process, null without WatchdogSec=. */
  watchdogUsec?: number | null;
  /**
   * A relay write failed, on whatever path (reader, exit button, timer, MQTT, resume). Every relay has already
   * been driven locked; the caller ends the process with a failure so that systemd restarts the agent.
   */
  onRelayFailure?: (err: unknown) => void;
}

interface DoorParts {
  door: DoorOptions;
  /** The relay as the door uses it (a failed write triggers the error policy). */
  relay: GpioOutput;
  /** The bare output, for locking on every path (never re-enters the policy). */
  rawRelay: GpioOutput;
  controller?: LockController;
  runtime?: DoorRuntime;
  inputs: DebouncedInput[];
  reader?: SerialReader;
}

export interface Agent {
  readonly db: Db;
  lockState(doorUuid: string): LockSnapshot | undefined;
  /** Graceful stop, in reverse order of start: readers, inputs, relays locked, database closed. */
  stop(): Promise<void>;
  /** Last resort on a fatal error: every relay to its locked level, synchronously, nothing else. */
  lockAllNow(): void;
}

/** How long the daemon's connection waits for another process's write lock before queueing the write. */
const DAEMON_BUSY_TIMEOUT_MS = 20;

const lockedLevel = (door: DoorOptions): Level => relayLevel('LOCKED', door.failMode, door.relay.activeLow);

/**
 * The composition root. Start order (design section 7): every relay driven to its locked level first, then the
 * store, the lock controllers (resuming persisted unlocks), the inputs, the readers. Any failure during start
 * leaves every relay locked and what was opened closed.
 */
export async function startAgent(config: AgentOptions, deps: AgentDeps): Promise<Agent> {
  const { logger, clock, timers } = deps;
  const gpio = deps.gpio ?? createGpioDriver(config.gpio);
  const parts: DoorParts[] = [];
  let db: Db | undefined;
  const writes = new PendingWrites({ timers, logger: logger.child({ component: 'store' }) });
  const runtime: RuntimeStatus = { pid: deps.pid ?? process.pid, startedAt: new Date(clock.wallNow()).toISOString(), stoppedAt: null, readers: {} };
  const saveRuntime = () => {
    const snapshot = structuredClone(runtime);
    writes.run('runtime', () => {
      if (db?.open) writeRuntimeStatus(db, snapshot);
    });
  };

  const lockAllNow = () => {
    for (const part of parts) {
      try {
        part.rawRelay.write(lockedLevel(part.door));
      } catch (err) {
        logger.error({ err, door: part.door.uuid }, 'cannot drive relay to locked');
      }
    }
  };

  let bridge: MqttBridge | undefined;
  let scheduler: SyncScheduler | undefined;
  let stopped = false;
  const watchdog = deps.notify ? new SystemdWatchdog({ notify: deps.notify, watchdogUsec: deps.watchdogUsec ?? null, logger }) : null;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    // The doors first: nothing after this (a dead broker, a stuck reader) may keep a door unlocked.
    for (const part of parts) {
      try {
        part.runtime?.stop();
        part.controller?.shutdown();
      } catch (err) {
        logger.error({ err, door: part.door.uuid }, 'error while stopping a door; its relay is driven locked next');
      }
    }
    lockAllNow();
    watchdog?.stopping();
    try {
      scheduler?.stop();
      await bridge?.stop();
      for (const part of parts) await part.reader?.stop();
      for (const part of parts) for (const input of part.inputs) input.close();
    } finally {
      lockAllNow();
      runtime.stoppedAt = new Date(clock.wallNow()).toISOString();
      saveRuntime();
      writes.flush();
      writes.stop();
      db?.close();
      gpio.close();
    }
  };

  // One error policy for the relay: a write that fails anywhere locks every relay and ends the agent.
  const guard = (door: DoorOptions, relay: GpioOutput): GpioOutput => ({
    pin: relay.pin,
    read: () => relay.read(),
    write: (level) => {
      try {
        relay.write(level);
      } catch (err) {
        logger.fatal({ err, door: door.uuid, pin: relay.pin }, 'relay write failed: locking every relay and stopping the agent');
        lockAllNow();
        deps.onRelayFailure?.(err);
        throw err;
      }
    },
  });

  try {
    for (const door of config.doors) {
      const rawRelay = gpio.openOutput(door.relay.pin, lockedLevel(door));
      parts.push({ door, relay: guard(door, rawRelay), rawRelay, inputs: [] });
    }
    logger.info({ doors: parts.length, driver: gpio.name }, 'relays locked');

    // Secrets and certificates are checked before anything can move a relay: a missing file is a
    // configuration error (exit 78, no restart loop), never a brief unlock followed by a crash.
    const missing = checkReferencedFiles(config, deps.env ?? {});
    if (missing.length > 0) throw new InputError('the configuration names files that cannot be used', missing, EXIT_INVALID_CONFIG);

    // A short busy timeout: while another process (door-agent import, sync) holds the write lock, a write
    // fails at once and waits in `writes` instead of freezing the event loop with a relay energized.
    db = openDatabase(cachePath(config.agent.dataDir), { busyTimeoutMs: DAEMON_BUSY_TIMEOUT_MS });
    const events = new EventLog(db, {
      agentId: config.agent.id,
      maxEvents: config.agent.maxEvents,
      onAppend: () => bridge?.eventAppended(),
      writes,
      keepUnpublished: config.mqtt !== undefined,
    });
    const checker = new AccessChecker(new CredentialCache(db), config);
    const persistence = new DoorStateStore(doorStateDir(config.agent.dataDir));
    const clockSynchronized = deps.clockSynchronized ?? (() => isClockSynchronized({ rtc: config.agent.rtc }));

    for (const part of parts) {
      const { door } = part;
      const doorLog = logger.child({ door: door.uuid, name: door.name });
      part.controller = new LockController(door, part.relay, {
        clock,
        timers,
        persistence,
        clockSynchronized,
        onPersistError: (err) => doorLog.error({ err }, 'cannot save the lock state: retrying (the relay has moved)'),
        onPersistRecovered: () => doorLog.info('lock state saved again'),
        onChange: (snapshot, previous) => {
          bridge?.publishState(door.uuid);
          if (snapshot.state === previous) return;
          const relockAt = snapshot.relockAt === null ? null : new Date(snapshot.relockAt).toISOString();
          try {
            events.append({
              type: snapshot.state === 'UNLOCKED' ? 'unlocked' : 'locked',
              door: door.uuid,
              at: snapshot.changedAt,
              data: snapshot.state === 'UNLOCKED' ? { cause: snapshot.cause, relock_at: relockAt } : { cause: snapshot.cause },
            });
          } catch (err) {
            doorLog.error({ err }, 'cannot record lock event');
          }
          doorLog.info({ state: snapshot.state, cause: snapshot.cause, relockAt }, snapshot.state === 'UNLOCKED' ? 'unlocked' : 'locked');
        },
      });
      const resumed = part.controller.resume();
      if (resumed.state === 'UNLOCKED') doorLog.info({ relockAt: resumed.relockAt }, 'resumed an unlock from before the restart');
      part.runtime = new DoorRuntime(door, {
        controller: part.controller,
        checker,
        events,
        clock,
        timers,
        logger: doorLog,
        onDoorChange: () => bridge?.publishState(door.uuid),
      });
    }

    for (const part of parts) {
      const { door, runtime: doorRuntime } = part;
      if (door.contact) {
        const { openLevel, pin, debounceMs } = door.contact;
        const contact = new DebouncedInput(gpio, {
          pin,
          debounceMs,
          timers,
          idleLevel: openLevel === 1 ? 0 : 1,
          onLevel: (level) => doorRuntime!.onContact(level === openLevel),
        });
        part.inputs.push(contact);
        doorRuntime!.initialContact(contact.level === openLevel);
      }
      if (door.exitButton) {
        const { activeLevel, pin, debounceMs } = door.exitButton;
        part.inputs.push(
          new DebouncedInput(gpio, {
            pin,
            debounceMs,
            timers,
            idleLevel: activeLevel === 1 ? 0 : 1,
            onLevel: (level) => doorRuntime!.onExitButton(level === activeLevel),
          }),
        );
      }
    }

    for (const part of parts) {
      const { door } = part;
      if (!door.reader) continue;
      runtime.readers[door.uuid] = false;
      part.reader = new SerialReader({
        ...door.reader,
        logger: logger.child({ door: door.uuid }),
        clock,
        timers,
        openPort: deps.openPort,
        onFrame: (frame) => part.runtime!.onReaderFrame(frame),
        onConnectionChange: (connected) => {
          runtime.readers[door.uuid] = connected;
          saveRuntime();
        },
      });
      part.reader.start();
    }

    if (config.mqtt) {
      const mqtt = config.mqtt;
      const topics = new Topics(mqtt.topicPrefix, config.agent.id);
      const replay = new ReplayCache(db, writes);
      replay.prune(clock.wallNow() - 2 * mqtt.commandMaxAgeSeconds * 1000);
      bridge = new MqttBridge({
        client: connectBroker(mqtt, topics, deps.env ?? {}, logger.child({ component: 'mqtt' })),
        topics,
        doors: parts.map((p) => ({ door: p.door, controller: p.controller!, contact: () => p.runtime!.contactState() })),
        events,
        guestLinks: new GuestLinkStore(db, new Set(config.doors.map((d) => d.resourceId)), mqtt.maxGuestLinks),
        replay,
        writes,
        secret: readSecret('mqtt.commandSecretFile', mqtt.commandSecretFile, {}) ?? null,
        maxAgeSeconds: mqtt.commandMaxAgeSeconds,
        homeAssistant: mqtt.homeAssistant,
        version: VERSION,
        clock,
        timers,
        logger: logger.child({ component: 'mqtt' }),
        onSyncRequest: config.service ? () => scheduler?.trigger() : undefined,
      });
    }

    if (config.service) {
      const service = config.service;
      const client = new ServiceClient({
        baseUrl: service.baseUrl,
        apiKey: readSecret('service.apiKeyFile', service.apiKeyFile, deps.env ?? {}, 'DOOR_AGENT_API_KEY') ?? '',
        apiKeyIn: service.apiKeyIn,
        timeoutMs: service.timeoutSeconds * 1000,
      });
      const syncDb = db;
      scheduler = new SyncScheduler({
        run: () => syncOnce(syncDb, client, { concurrency: service.concurrency, maxRemovalRatio: service.maxRemovalRatio, now: () => clock.wallNow() }),
        intervalMs: service.syncIntervalSeconds * 1000,
        timers,
        logger: logger.child({ component: 'sync' }),
      });
      scheduler.start();
    }
    saveRuntime();
  } catch (err) {
    await stop().catch((stopErr: unknown) => logger.error({ err: stopErr }, 'error while cleaning up a failed start'));
    throw err;
  }

  const openDb = db;
  logger.info(
    { doors: config.doors.map((d) => d.uuid), cache: cachePath(config.agent.dataDir) },
    'door-agent ready',
  );
  watchdog?.ready();
  return {
    db: openDb,
    lockState: (uuid) => parts.find((p) => p.door.uuid === uuid)?.controller?.snapshot(),
    stop,
    lockAllNow,
  };
}
