import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { AgentOptions } from './config/options.js';
import { EXIT_INVALID_CONFIG } from './config/schema.js';
import { checkReferencedFiles } from './config/secrets.js';
import { AccessChecker } from './door/accessChecker.js';
import { Door } from './door/door.js';
import { DoorEvents } from './door/doorEvents.js';
import { EmergencyInput } from './door/emergencyInput.js';
import { KeypadGuesses } from './door/keypadGuesses.js';
import { lockoutWarnings } from './config/keypadLockout.js';
import { readKeypadGuesses, writeKeypadGuesses } from './store/keypadGuessState.js';
import type { LockSnapshot } from './door/lockController.js';
import { RelayBank } from './door/relays.js';
import { SiteOperations } from './door/siteOperations.js';
import { createGpioDriver } from './hardware/createGpio.js';
import { OsdpBuses } from './readers/osdp/osdpBuses.js';
import type { GpioDriver } from './hardware/gpio.js';
import type { PortFactory } from './readers/serial/port.js';
import { startInOrder, type Component } from './lifecycle.js';
import { MqttComponent } from './mqtt/mqttComponent.js';
import { AgentStore } from './store/agentStore.js';
import { AuditLogSyslogSource } from './store/syslogSource.js';
import { SyslogSender } from './protocol/syslogSender.js';
import { readerStatusKey } from './store/runtimeStatus.js';
import { cachePath } from './store/database.js';
import { DoorStateStore, doorStateDir } from './store/doorState.js';
import { lastRefreshAt, readHeldRevision, readHeldVersion, type SyncResult } from './sync/sync.js';
import { SyncComponent } from './sync/syncComponent.js';
import { FindingsReporter } from './sync/findingsReporter.js';
import { RefusalRecorder } from './sync/refusalRecorder.js';
import type { CacheRebuild } from './store/cacheAudit.js';
import type { Notify } from './system/sdNotify.js';
import { SystemdWatchdog } from './system/watchdog.js';
import type { Clock, Timers } from './util/clock.js';
import { isClockSynchronized, isClockSynchronizedLater } from './util/clockSync.js';
import { ClockSyncWatch } from './door/clockSyncWatch.js';
import { InputError } from './util/errors.js';
import { PROJECT_URL, VERSION } from './version.js';
import { CLOCK_TRUSTED_FROM, isClockTrusted } from './core/decision.js';
import { directoryRules } from './core/directoryFindings.js';
import { DEFAULT_FUTURE_SKEW_SECONDS } from './protocol/issuedAt.js';
import { ClockMark } from './store/clockMark.js';
import { ForwardClock } from './util/forwardClock.js';
import { readSecret, type Env } from './util/secretFiles.js';
import { systemBootClock, type BootClock } from './util/bootClock.js';
import { BROKER_OUTAGE, LinkWatch, SERVICE_OUTAGE, type LinkName } from './util/linkWatch.js';
import { OfflineLimit } from './door/offlineLimit.js';
import { POWER_EVENT_TYPES, PowerSupervision, type PowerState } from './door/powerSupervision.js';
import { InputFloods } from './door/inputFloods.js';
import { LockAudit } from './door/lockAudit.js';
import { configHash } from './config/configHash.js';
import { recordConfigLoaded } from './store/configChanges.js';
import type { EventType } from './store/eventLog.js';
import type { AgentMetrics } from './metrics/agentMetrics.js';
import { AreaRuntime } from './door/areaRuntime.js';
import { DoorGroups } from './door/doorGroups.js';
import { doorGroupWarnings } from './config/doorGroups.js';
import { controlSocket } from './control/controlSocket.js';
import { checkVersion, type FleetStart } from './config/fleetVersions.js';
import { fleetChecks } from './config/load.js';
import { FleetClient } from './fleet/fleetClient.js';
import { FleetComponent } from './fleet/fleetComponent.js';
import { FleetReporter } from './fleet/fleetReporter.js';
import { ConfigFromService, reportedProblems, type ConfigReport } from './fleet/configFromService.js';
import { applyLiveDoorSettings } from './fleet/liveApply.js';
import { FirmwareTasks } from './fleet/firmwareTasks.js';
import { debianArch } from './fleet/update/boardArch.js';
import { UpdateOffers } from './fleet/updateOffers.js';
import { ed25519FromPem } from './protocol/fleetSigning.js';
import { ReaderFirmware } from './door/readerFirmware.js';

export interface AgentDeps {
  logger: Logger;
  clock: Clock;
  timers: Timers;
  /** Defaults to the driver named in the config. */
  gpio?: GpioDriver;
  openPort?: PortFactory;
  pid?: number;
  /** For secrets given in the environment (DOOR_AGENT_API_KEY, DOOR_AGENT_MQTT_PASSWORD). */
  env?: Env;
  /** Defaults to asking the system (see util/clockSync.ts); asked at start and again while it says no. */
  clockSynchronized?: () => boolean;
  /** sd_notify to systemd (Type=notify), null or absent outside systemd. */
  notify?: Notify | null;
  /** WATCHDOG_USEC for this process, null without WatchdogSec=. */
  watchdogUsec?: number | null;
  /** The monotonic clock since boot and the boot id the offline limit measures with; defaults to the system's. */
  bootClock?: BootClock;
  /**
   * A relay write failed, on whatever path (reader, exit button, timer, MQTT, resume). Every relay has already
   * been driven locked; the caller ends the process with a failure so that systemd restarts the agent.
   */
  onRelayFailure?: (err: unknown) => void;
  /**
   * A board file with a fleet section (config/fleetVersions.ts): the board and the version from the service merged
   * under it at start. Absent: the fleet section is not acted on (no exchange with the service).
   */
  fleetStart?: FleetStart | null;
  /**
   * Stops the agent as SIGTERM does (every relay locked first) and ends the process with 0, so that systemd
   * (Restart=always) starts it again on the configuration version kept. Absent: a version that needs a restart
   * waits for the next one.
   */
  onRestart?: (why: string) => void;
  /** Sets the running logger's level (agent.logLevel changed live); absent: the level stays until a restart. */
  setLogLevel?: (level: AgentOptions['agent']['logLevel']) => void;
}

export interface Agent {
  lockState(doorUuid: string): LockSnapshot | undefined;
  /** HOST:PORT the metrics listen on (the port chosen, for port 0); null without `metrics`. */
  metricsAddress(): string | null;
  /** Graceful stop: every relay locked first, then the components in reverse order of start. */
  stop(): Promise<void>;
  /** Last resort on a fatal error: every relay to its locked level, synchronously, nothing else. */
  lockAllNow(): void;
}

/**
 * The agent's composition root (docs/architecture.md, "Components, start and stop"). Every relay is driven to its locked level
 * before anything else; then the components start in order (store, doors, MQTT, sync, readiness), a failed
 * start stopping what had started. Stop: every relay locked first, then the components in reverse order.
 */
export async function startAgent(config: AgentOptions, deps: AgentDeps): Promise<Agent> {
  const { logger, timers } = deps;
  // Decisions, replay windows and audit times use a wall clock that never steps back (util/forwardClock.ts).
  const clock = new ForwardClock(deps.clock, {
    skewMs: (config.mqtt?.futureSkewSeconds ?? DEFAULT_FUTURE_SKEW_SECONDS) * 1000,
    trustedFrom: CLOCK_TRUSTED_FROM,
  });
  const env = deps.env ?? {};
  const gpio = deps.gpio ?? createGpioDriver(config.gpio);
  const relays = new RelayBank(gpio, logger, (err) => deps.onRelayFailure?.(err));
  const doors: Door[] = [];
  const persistence = new DoorStateStore(doorStateDir(config.agent.dataDir));
  let stopComponents: () => Promise<void> = async () => undefined;
  let metrics: AgentMetrics | null = null;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    // The doors first: nothing after this (a dead broker, a stuck reader) may keep a door unlocked.
    relays.lockAll();
    for (const door of doors) {
      try {
        door.halt();
      } catch (err) {
        logger.error({ err, door: door.options.uuid }, 'error while stopping a door; its relay is driven locked next');
      }
    }
    try {
      await stopComponents();
    } finally {
      relays.lockAll();
      gpio.close();
      // The lock states saved last are synced on the thread pool: on disk before the process ends.
      await persistence.settled();
      persistence.close();
    }
  };

  try {
    relays.open(config.doors);
    logger.info({ doors: config.doors.length, driver: gpio.name }, 'relays locked');

    // Secrets and certificates are checked before anything can move a relay: a missing file is a
    // configuration error (exit 78, no restart loop), never a brief unlock followed by a crash.
    const missing = checkReferencedFiles(config, env);
    if (missing.length > 0) throw new InputError('the configuration names files that cannot be used', missing, EXIT_INVALID_CONFIG);

    // Who rebuilds a damaged cache: the daemon from the service, or the operator without one (the log, the health).
    const cacheRebuild: CacheRebuild = config.service ? 'automatic' : 'manual';
    const store = new AgentStore({
      dataDir: config.agent.dataDir,
      agentId: config.agent.id,
      maxEvents: config.agent.maxEvents,
      keepUnpublished: config.mqtt !== undefined,
      resourceIds: new Set(config.doors.map((d) => d.resourceId)),
      maxGuestLinks: config.mqtt?.maxGuestLinks ?? 0,
      pid: deps.pid ?? process.pid,
      wallNow: () => clock.wallNow(),
      timers,
      logger: logger.child({ component: 'store' }),
      cacheRebuild,
      syslogExport: config.syslog !== undefined,
    });
    const doorEvents = new DoorEvents((err, event) => logger.error({ err, event }, 'a door event listener failed'));
    const lockAudit = new LockAudit({ doorEvents, append: (event) => store.events.append(event), clock, timers, logger });
    let checker: AccessChecker | null = null;
    // The cache at each decision (a rebuilt one replaces a damaged one); a failed read may be damage (store/cacheConnection.ts).
    const getChecker = () =>
      (checker ??= new AccessChecker(
        () => store.credentials(),
        config,
        (err) => store.cache.failed(err),
      ));
    const keypad = keypadGuesses(config, store, clock, logger);
    const operations = new SiteOperations({ store, doors, checker: getChecker, clock, logger });
    const probe = deps.clockSynchronized;
    const clockWatch = new ClockSyncWatch({
      probeNow: probe ?? (() => isClockSynchronized({ rtc: config.agent.rtc })),
      probeLater: probe ? async () => probe() : () => isClockSynchronizedLater({ rtc: config.agent.rtc }),
      timers,
      logger: logger.child({ component: 'clock' }),
    });
    const clockSynchronized = () => clockWatch.synchronized();
    const offlineLimit =
      config.access.maxCacheAgeHours === undefined
        ? null
        : new OfflineLimit({
            limitHours: config.access.maxCacheAgeHours,
            store,
            clock,
            boot: deps.bootClock ?? systemBootClock,
            timers,
            logger: logger.child({ component: 'offline limit' }),
          });
    const supervision = agentSupervision(config, store, clock, timers, gpio, logger);
    // Loaded only when configured: an agent without metrics never loads prom-client.
    metrics = config.metrics
      ? new (await import('./metrics/agentMetrics.js')).AgentMetrics({
          options: config.metrics,
          version: VERSION,
          doors,
          store,
          outbox: config.mqtt !== undefined,
          syncs: config.service !== undefined,
          clock,
          logger: logger.child({ component: 'metrics' }),
        })
      : null;
    // One per RS-485 line, shared by the doors whose OSDP readers are on it.
    const osdp = new OsdpBuses({ clock, timers, logger: logger.child({ component: 'osdp' }), openPort: deps.openPort });
    const { areas, groups } = doorGroups(config, store, doors, doorEvents, clock, timers, logger);
    for (const options of config.doors) {
      doors.push(
        new Door(options, {
          gpio,
          relay: relays.relayOf(options.uuid),
          persistence,
          events: () => store.events,
          checker: getChecker,
          keypad,
          doorEvents,
          clock,
          timers,
          clockSynchronized,
          onClockSynchronized: (listener) => clockWatch.onSynchronized(listener),
          logger: logger.child({ door: options.uuid, name: options.name }),
          openPort: deps.openPort,
          osdp,
          onReaderConnection: (connected, direction) => store.setReaderConnected(readerStatusKey(options.uuid, direction), connected),
          onReaderChannel: (channel, direction) => store.setReaderChannel(readerStatusKey(options.uuid, direction), channel),
          onReaderIdentity: (text, direction) => store.setReaderIdentity(readerStatusKey(options.uuid, direction), text),
          lockdown: () => operations.isLockedDown(options.uuid),
          ...(offlineLimit ? { cacheTooOld: () => offlineLimit.tooOld() } : {}),
          holidays: () => getChecker().holidays,
          timezone: config.agent.timezone,
          scheduleMemory: operations.scheduleMemory(options.uuid),
          metrics: metrics?.forDoor(options),
          gate: groups?.gate(options) ?? null,
        }),
      );
    }
    // Reader firmware over OSDP, one reader at a time (the control socket's reader-firmware, the fleet's tasks).
    const readerFirmware = new ReaderFirmware({
      doors,
      append: (event) => store.events.append(event),
      clock,
      logger: logger.child({ component: 'reader-firmware' }),
    });
    const findings = new FindingsReporter({ store, wallNow: () => clock.wallNow(), logger: logger.child({ component: 'sync' }) });
    const refusals = new RefusalRecorder({
      append: (event) => void store.events.append(event),
      wallNow: () => clock.wallNow(),
      logger: logger.child({ component: 'sync' }),
    });
    /** After a sync, or a refused one's restrictions: the access levels compiled again when the cache's changed. */
    const reloadLevels = () => {
      const checker = getChecker();
      try {
        if (!checker.reloadLevels()) return;
      } catch (err) {
        // The cache cannot be read: every decision refuses until it can (and says so); the levels stay as they were.
        logger.error({ err }, 'cannot read the access levels the sync stored');
        return;
      }
      const { index, shadowed, unknownResourceGroups } = checker.levels;
      logger.info({ levels: index.levels.map((l) => l.name), shadowed, unknownResourceGroups }, 'access levels changed: compiled again');
    };
    const sync = config.service
      ? new SyncComponent({
          options: config.service,
          dataDir: config.agent.dataDir,
          env,
          timers,
          logger: logger.child({ component: 'sync' }),
          heldVersion: () => readHeldVersion(store.db),
          onPush: (revision) => store.setDirectoryPush(revision),
          // Found in the sync worker (short PINs too): a scan of every credential, never on the door's thread.
          rules: directoryRules(config.access, config.doors),
          onFindings: (found) => findings.report(found),
          link: supervision.links.service,
          cache: store.cache,
          onRebuildFailed: (err) => store.setCacheRebuildFailed(err instanceof Error ? err.message : String(err)),
          onRefused: (err) => {
            refusals.refused(err);
            // Its restrictive part may have narrowed the service's levels: compiled again at once.
            if ((err.restricted?.levelsNarrowed ?? 0) > 0) reloadLevels();
          },
          onSynced: afterSync(
            (result: SyncResult) => {
              metrics?.synced(result.durationMs);
              refusals.synced();
            },
            () => {
              offlineLimit?.synced();
              reloadLevels();
            },
          ),
        })
      : null;
    const mqtt = config.mqtt
      ? new MqttComponent({
          options: config.mqtt,
          agentId: config.agent.id,
          doors,
          store,
          doorEvents,
          env,
          clock,
          timers,
          logger: logger.child({ component: 'mqtt' }),
          version: VERSION,
          projectUrl: PROJECT_URL,
          serviceUrl: config.service?.baseUrl ?? null,
          health: {
            cache: () => cacheFreshness(store, logger),
            onCacheChange: (listener) => store.cache.onChange(() => listener()),
            cacheRebuild,
            clockTrusted: () => clockSynchronized() && isClockTrusted(clock.wallNow()),
            onClockChange: (listener) => clockWatch.onSynchronized(listener),
          },
          onSyncRequest: sync ? () => sync.trigger() : undefined,
          onDirectoryRevision: sync ? (payload) => sync.onRevision(payload) : undefined,
          lockdowns: () => operations.lockdowns,
          onHolidays: (dates, issuedAt) => operations.applyPublishedHolidays(dates, issuedAt),
          heldHolidaysIssuedAt: () => operations.heldHolidaysIssuedAt,
          forgetHolidaysIssuedAt: () => operations.forgetHolidaysIssuedAt(),
          areas,
          brokerLink: supervision.links.broker,
        })
      : null;
    // A damaged cache is rebuilt at once (sync); a rebuilt one is given the retained guest links again (MQTT).
    store.cache.onChange((change) => (change.kind === 'damaged' ? sync?.trigger() : mqtt?.cacheReplaced()));
    const watchdog = deps.notify ? new SystemdWatchdog({ notify: deps.notify, watchdogUsec: deps.watchdogUsec ?? null, logger }) : null;
    const readiness: Component = {
      name: 'readiness',
      start: () => {
        // Levels are compiled now, not on the first tap (1,000 levels take tens of milliseconds).
        const { index, shadowed, unknownResourceGroups } = getChecker().levels;
        if (shadowed.length > 0) logger.warn({ shadowed }, 'levels from the service with the name of a config level are ignored: the config wins');
        if (unknownResourceGroups.length > 0)
          logger.warn({ unknownResourceGroups }, 'levels name resource groups the service does not list: they cover only the doors they list');
        logger.info({ doors: config.doors.map((d) => d.uuid), cache: cachePath(config.agent.dataDir), levels: index.levels.length }, 'door-agent ready');
        watchdog?.ready();
      },
      stop: () => watchdog?.stopping(),
    };
    const clockMark = new ClockMark({ clock, store, timers, logger: logger.child({ component: 'clock' }) });
    const configAudit: Component = {
      name: 'config audit',
      start: () => {
        try {
          recordConfigLoaded(store, config.agent.dataDir, configHash(config), clock.wallNow());
        } catch (err) {
          logger.error({ err }, 'cannot record config_changed');
        }
      },
      stop: () => undefined,
    };
    // After the doors (their relays locked, their inputs and schedules set up): an agent started during a fire
    // releases its doors as soon as it reads the input.
    const emergency = config.emergency
      ? new EmergencyInput({
          options: config.emergency,
          gpio,
          doors: doors.filter((d) => d.options.emergencyRelease),
          clock,
          timers,
          logger: logger.child({ component: 'emergency' }),
          onStatus: (status) => store.setEmergency(status),
        })
      : null;
    // After the doors (a version applied live changes their options) and the sync.
    const fleet = fleetAgent(config, deps, { doors, firmware: readerFirmware, clock }, env, timers, logger);
    // The metrics listener before the doors: an address in use stops the start before any reader opens.
    const components = [
      store,
      lockAudit,
      clockMark,
      metrics,
      configAudit,
      offlineLimit,
      supervision.component,
      supervision.power,
      operations,
      areas,
      clockWatch,
      ...doors,
      emergency,
      mqtt,
      syslogExport(config, store, clock, timers, logger),
      sync,
      fleet,
      controlSocket(config.agent.controlSocket, {
        doors,
        links: supervision.links,
        version: VERSION,
        firmware: readerFirmware,
        append: (event) => store.events.append(event),
        clock,
        timers,
        logger,
      }),
      readiness,
    ].filter((c): c is Component => c !== null);
    stopComponents = await startInOrder(components, logger);
  } catch (err) {
    await stop().catch((stopErr: unknown) => logger.error({ err: stopErr }, 'error while cleaning up a failed start'));
    throw err;
  }

  return {
    lockState: (uuid) => doors.find((d) => d.options.uuid === uuid)?.lockState(),
    metricsAddress: () => metrics?.address ?? null,
    stop,
    lockAllNow: () => relays.lockAll(),
  };
}

/**
 * The agent's own syslog export (docs/audit.md, "SIEM export: syslog"), for a site without a service: every event
 * of state.db after the cursor kept there, HOSTNAME the agent's id unless `syslog.hostname` says otherwise.
 */
function syslogExport(config: AgentOptions, store: AgentStore, clock: Clock, timers: Timers, logger: Logger): SyslogSender | null {
  if (!config.syslog) return null;
  const sender = new SyslogSender({
    syslog: config.syslog,
    defaultHostname: config.agent.id,
    source: new AuditLogSyslogSource({ events: () => store.events, cursor: () => store.syslogCursor, agentId: config.agent.id }),
    clock,
    timers,
    logger: logger.child({ component: 'syslog' }),
  });
  // An alarm reaches the SIEM as soon as it is durable, not at the next look a second later.
  store.onEventsDurable(() => sender.notify());
  return sender;
}

/**
 * The agent in the fleet (docs/fleet.md), with a fleet section: every fleet.pollSeconds it reports and asks the
 * service what it has for it; each part of the answer has its handler (its configuration: configFromService.ts).
 * Logs what the start took: the version merged under the board file, the versions passed over, no doors yet.
 */
function fleetAgent(
  config: AgentOptions,
  deps: AgentDeps,
  on: { doors: readonly Door[]; firmware: ReaderFirmware; clock: Clock },
  env: Env,
  timers: Timers,
  logger: Logger,
): FleetComponent | null {
  const { doors, firmware, clock } = on;
  const options = config.fleet;
  if (!options) return null;
  const log = logger.child({ component: 'fleet' });
  const start = deps.fleetStart;
  const service = config.service;
  if (!start || !service) {
    log.warn(
      service
        ? 'the fleet section is not acted on: the agent was started without its board file'
        : 'the fleet section needs a service section: no exchange with the service',
    );
    return null;
  }
  const refusedAtStart = fleetStartLog(start, config, log);
  const client = new FleetClient({
    baseUrl: service.baseUrl,
    apiKeyIn: service.apiKeyIn,
    timeoutMs: service.timeoutSeconds * 1000,
    apiKey: () => readSecret('service.apiKeyFile', service.apiKeyFile, env, 'DOOR_AGENT_API_KEY') ?? '',
  });
  const reporter = new FleetReporter({ client, version: VERSION, logger: log });
  const checks = fleetChecks(env);
  const configuration = new ConfigFromService<AgentOptions>({
    dataDir: config.agent.dataDir,
    running: config,
    kept: start.kept,
    atStart: { applied: start.version, refused: refusedAtStart, how: start.version === null ? null : 'restart' },
    check: (version) => checkVersion(start, version, checks),
    applyLive: (next) => {
      applyLiveDoorSettings(doors, next.doors);
      if (config.agent.logLevel !== next.agent.logLevel) {
        config.agent.logLevel = next.agent.logLevel;
        deps.setLogLevel?.(next.agent.logLevel);
      }
    },
    restart: (why) => (deps.onRestart ? deps.onRestart(why) : log.error(`${why}: no restart is possible here; the version is applied at the next start`)),
    reporter,
    logger: log,
  });
  const open = (path: string) => client.open(path);
  const releaseKeyFile = options.releasePublicKeyFile;
  const update = new UpdateOffers({
    dataDir: config.agent.dataDir,
    open,
    reporter,
    releaseKey: () => (releaseKeyFile === undefined ? null : ed25519FromPem(readFileSync(releaseKeyFile, 'utf8'), 'public')),
    board: () => ({ arch: debianArch(), installedVersion: VERSION }),
    wallNow: () => clock.wallNow(),
    logger: log,
  });
  const tasks = new FirmwareTasks({ dataDir: config.agent.dataDir, open, reporter, firmware, logger: log });
  return new FleetComponent({
    client,
    reporter,
    handlers: [configuration, update, tasks],
    agentId: config.agent.id,
    heldVersion: () => configuration.heldVersion(),
    pollSeconds: options.pollSeconds,
    timers,
    logger: log,
  });
}

/** The start's choice of version, logged; the version passed over first, as the first report's refusal (null: none). */
function fleetStartLog(start: FleetStart, config: AgentOptions, log: Logger): ConfigReport['refused'] {
  const versions = start.passedOver.map((p) => (p.version === null ? p.file : `version ${p.version}`));
  if (start.version !== null)
    log.info({ version: start.version, board: start.boardPath }, `configuration version ${start.version} from the service merged under the board file`);
  if (start.passedOver.length > 0) {
    const problems = start.passedOver.map((p) => ({ file: p.file, version: p.version, problems: p.problems.slice(0, 20) }));
    const fail = versions.length > 1 ? 'fail their check' : 'fails its check';
    if (start.version === null) log.error({ passedOver: problems }, `${versions.join(' and ')} from the service ${fail}: running on the board file alone`);
    else log.warn({ passedOver: problems }, `${versions.join(' and ')} from the service ${fail}: running version ${start.version} (the one before)`);
  }
  if (config.doors.length === 0) log.info('no doors yet: waiting for its configuration from the service');
  const first = start.passedOver.find((p) => p.version !== null);
  return first ? { version: first.version!, problems: reportedProblems(first.problems) } : null;
}

/**
 * Doors that work together (docs/areas.md): the areas (their state replayed from the audit log when they start,
 * before the doors) and the site's door groups, whose gates the doors ask; null parts when nothing is configured.
 */
function doorGroups(
  config: AgentOptions,
  store: AgentStore,
  doors: readonly Door[],
  doorEvents: DoorEvents,
  clock: Clock,
  timers: Timers,
  logger: Logger,
): { areas: AreaRuntime | null; groups: DoorGroups | null } {
  for (const warning of doorGroupWarnings(config)) logger.warn(warning);
  const configured = config.areas ?? [];
  const areas =
    configured.length > 0
      ? new AreaRuntime({
          areas: configured,
          timezone: config.agent.timezone,
          maxEvents: config.agent.maxEvents,
          state: () => store.state,
          append: (event) => store.events.append(event),
          clock,
          timers,
          logger: logger.child({ component: 'areas' }),
        })
      : null;
  const interlocks = config.interlocks ?? [];
  if (!areas && interlocks.length === 0 && !config.doors.some((d) => d.twoPerson)) return { areas: null, groups: null };
  if (areas) store.onEventWritten((event) => areas.onEventWritten(event));
  const byUuid = (uuid: string) => doors.find((d) => d.options.uuid === uuid);
  const groups = new DoorGroups({
    interlocks,
    areas,
    doorState: (uuid) => {
      const door = byUuid(uuid);
      const lock = door?.lockState();
      return door && lock ? { unlocked: lock.state === 'UNLOCKED', open: door.contactState() === 'OPEN' } : undefined;
    },
    released: (uuid) => byUuid(uuid)?.emergencyReleased() ?? false,
    clock,
  });
  // A grant whose door locked again before it opened is no passage. A door that locked or closed may let the
  // others of its interlock unlock: what waits there for the gate (an unlock schedule) looks again.
  doorEvents.on('lock', (uuid, snapshot) => {
    if (snapshot.state === 'LOCKED') groups.relocked(uuid);
    groups.changed(uuid);
  });
  doorEvents.on('position', (uuid) => groups.changed(uuid));
  return { areas, groups };
}

/**
 * The agent's keypad lockout, shared by the doors: read from state.db when the first door starts (the store has
 * started by then), saved through the pending writes after each decision that changed it.
 */
function keypadGuesses(config: AgentOptions, store: AgentStore, clock: Clock, logger: Logger): () => KeypadGuesses {
  let keypad: KeypadGuesses | null = null;
  return () => {
    if (keypad) return keypad;
    for (const warning of lockoutWarnings(config.doors, config.access.keypadLockout)) logger.warn(warning);
    keypad = new KeypadGuesses({
      policy: config.access.keypadLockout,
      clock,
      load: () => readKeypadGuesses(store.state),
      save: (state) => store.writes.run('keypad_guesses', () => writeKeypadGuesses(store.state, state)),
    });
    return keypad;
  };
}

/**
 * What the agent supervises beside its doors, each change an agent-level audit event: its power inputs, and its
 * links to the broker and the service (outages, once each). Built before the store starts; they record once it has.
 */
function agentSupervision(config: AgentOptions, store: AgentStore, clock: Clock, timers: Timers, gpio: GpioDriver, logger: Logger) {
  const record = (type: EventType, data: Record<string, unknown>) => {
    try {
      store.events.append({ type, door: null, at: clock.wallNow(), data });
    } catch (err) {
      logger.error({ err, type }, 'cannot record event');
    }
  };
  const watch = (link: LinkName, present: boolean) =>
    present
      ? new LinkWatch({
          link,
          policy: link === 'broker' ? BROKER_OUTAGE : SERVICE_OUTAGE,
          clock,
          timers,
          record,
          logger: logger.child({ component: link === 'broker' ? 'mqtt' : 'sync' }),
        })
      : undefined;
  const links = { broker: watch('broker', config.mqtt !== undefined), service: watch('service', config.service !== undefined) };
  // The power inputs can be switched at will (a breaker, a wire): they declare themselves to the agent's flood guard.
  let powerState: PowerState = { mains: null, battery: null };
  const floods = new InputFloods({ clock, timers, record, current: () => ({ mains: powerState.mains, battery: powerState.battery }) });
  const power = config.power
    ? new PowerSupervision(config.power, {
        gpio,
        timers,
        logger: logger.child({ component: 'power' }),
        record: floods.input('power inputs', POWER_EVENT_TYPES),
        onState: (state) => {
          powerState = state;
          store.setPower(state);
        },
      })
    : null;
  // The links' grace timers end with the agent (the connections themselves are MQTT's and sync's); stopped after
  // the power inputs, so their last summaries are recorded.
  const component: Component = {
    name: 'agent supervision',
    start: () => undefined,
    stop: () => {
      links.broker?.stop();
      links.service?.stop();
      floods.flush();
    },
  };
  return { links, power, component };
}

/**
 * The health message's cache: the directory revision held and when the cache was last refreshed (a sync, an
 * import); while it is damaged, since when and why.
 */
function cacheFreshness(
  store: AgentStore,
  logger: Logger,
): { revision: number | null; refreshedAt: number | null; damaged: { since: number; error: string } | null } {
  const damaged = store.cache.damage;
  if (damaged) return { revision: null, refreshedAt: null, damaged };
  try {
    return { revision: readHeldRevision(store.db), refreshedAt: lastRefreshAt(store.db), damaged: null };
  } catch (err) {
    if (store.cache.failed(err)) return { revision: null, refreshedAt: null, damaged: store.cache.damage };
    logger.debug({ err }, 'cannot read the cache for the health message');
    return { revision: null, refreshedAt: null, damaged: null };
  }
}

/** Runs both after each sync. */
function afterSync<T>(first: (result: T) => void, then: () => void): (result: T) => void {
  return (result) => {
    first(result);
    then();
  };
}
