import { isClockTrusted } from '../core/decision.js';
import { CredentialCache } from '../store/credentialCache.js';
import { existsSync } from 'node:fs';
import { cachePath, openStateDatabase, statePath } from '../store/database.js';
import { cacheLine, missingCacheWarning, openCacheView } from './cacheView.js';
import { cacheDamageLines, cacheDamageView } from './cacheDamageStatus.js';
import { relayLevel } from '../core/relay.js';
import { readOutputLevel } from '../hardware/createGpio.js';
import { DoorStateStore, doorStateDir } from '../store/doorState.js';
import { EventLog } from '../store/eventLog.js';
import { readMeta } from '../store/meta.js';
import { readRuntimeStatus, readerStatusKey } from '../store/runtimeStatus.js';
import { readHeldRevision, readSyncStatus, type SyncStatus } from '../sync/sync.js';
import { configPath, stringOption, type Command, type CommandContext } from './context.js';
import { loadAgentConfig } from '../config/load.js';
import { fleetStatus, fleetStatusLines } from './fleetStatus.js';
import { describeReader, type ReaderOptions } from '../door/options.js';
import { operationsLines, operationsStatus } from './operationsStatus.js';
import { osdpChannelText, osdpChannelView } from './osdpStatus.js';
import { directoryFindings, directoryLines } from './directoryStatus.js';
import { pinLines, pinStatus } from './pinStatus.js';
import { brokerLines, brokerStatus } from './brokerStatus.js';
import { daemonView, runningText } from './daemonStatus.js';
import { levelLines, levelStatus } from './levelStatus.js';
import { heldBackLines, lastSyncLines, lastSyncView } from './syncStatus.js';
import { offlineLimitLines, offlineLimitStatus, powerLines, powerStatus } from './supervisionStatus.js';
import { systemBootClock } from '../util/bootClock.js';
import { emergencyStatusLines, emergencyView } from './emergencyStatus.js';
import { EMERGENCY_CAUSE } from '../core/emergencyRelease.js';
import { areaLines, areaStatus } from './areaStatus.js';

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function syncView(s: SyncStatus, now: number, warnAfterSeconds: number) {
  const age = s.lastSuccessAt ? (now - Date.parse(s.lastSuccessAt)) / 1000 : null;
  return { ...s, heldBack: s.heldBack ?? null, last: lastSyncView(s), cacheAgeSeconds: age, stale: age === null || age > warnAfterSeconds };
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** `door-agent status [--json]`: door states, relock deadlines, readers, cache counts, outbox depth, clock trust. */
function runStatus(args: { json: boolean; config: string | undefined }, ctx: CommandContext): number {
  const { config, fleet } = loadAgentConfig(configPath(args.config, ctx.env), ctx.env);
  const file = cachePath(config.agent.dataDir);
  const cache = openCacheView(file);
  const db = cache.db;
  // The daemon's state (status, audit log); absent until a daemon or a writing command has created it.
  const state = existsSync(statePath(config.agent.dataDir)) ? openStateDatabase(statePath(config.agent.dataDir), { readonly: true }) : null;
  try {
    const now = ctx.clock.wallNow();
    const runtime = state ? readRuntimeStatus(state) : undefined;
    const daemon = daemonView(config.agent.dataDir, runtime, processAlive);
    const running = daemon.running;
    const states = new DoorStateStore(doorStateDir(config.agent.dataDir));
    const operations = operationsStatus(config, state, now);
    // One pass over the credentials: the directory's findings and the short PINs alike.
    const findings = directoryFindings(config, db);
    // How a Wiegand or OSDP reader numbers a card (docs/hardware.md, "Numbering"), the default too; others: null.
    const cardNumbering = (reader: ReaderOptions) => (reader.type === 'wiegand' || reader.type === 'osdp' ? reader.numbering : null);
    const doors = config.doors.map((door) => {
      const stored = states.load(door.uuid);
      // The relay's own level is the truth; the saved state only explains it (deadline, cause). A saved state
      // that disagrees (a save still being retried) is reported, never shown in place of the relay.
      const level = readOutputLevel(config.gpio, door.relay.pin);
      const relay = level === null ? null : level === relayLevel('LOCKED', door.failMode, door.relay.activeLow) ? 'LOCKED' : 'UNLOCKED';
      const saved = stored?.state ?? 'LOCKED';
      // Without a readable relay: locked if it stopped cleanly (it locks on the way out); after a crash nobody knows.
      const state = relay ?? (running ? saved : runtime === undefined || runtime.stoppedAt ? 'LOCKED' : 'UNKNOWN');
      const explained = state === saved;
      return {
        uuid: door.uuid,
        name: door.name,
        state,
        relay: level === null ? null : { pin: door.relay.pin, level },
        savedState: explained ? null : saved,
        relockAt: running && state === 'UNLOCKED' && explained ? iso(stored?.relockAt ?? null) : null,
        heldOpen: running && state === 'UNLOCKED' && explained && stored?.relockAt === null,
        changedAt: explained ? iso(stored?.changedAt ?? null) : null,
        cause: explained ? (stored?.cause ?? null) : null,
        reader: door.reader
          ? {
              type: door.reader.type,
              path: describeReader(door.reader),
              numbering: cardNumbering(door.reader),
              connected: running ? (runtime?.readers[readerStatusKey(door.uuid, 'entry')] ?? false) : false,
              channel: osdpChannelView(door, runtime, running),
              identity: running ? (runtime?.readerIdentities?.[readerStatusKey(door.uuid, 'entry')] ?? null) : null,
            }
          : null,
        exitReader: door.exitReader
          ? {
              type: door.exitReader.type,
              path: describeReader(door.exitReader),
              numbering: cardNumbering(door.exitReader),
              connected: running ? (runtime?.readers[readerStatusKey(door.uuid, 'exit')] ?? false) : false,
              channel: osdpChannelView(door, runtime, running, 'exit'),
              identity: running ? (runtime?.readerIdentities?.[readerStatusKey(door.uuid, 'exit')] ?? null) : null,
            }
          : null,
        ...operations.doors.get(door.uuid)!,
      };
    });
    const status = {
      agent: config.agent.id,
      cache: file,
      cacheExists: !cache.missing,
      cacheDamage: cacheDamageView(cache.damaged, config.service !== undefined, running, runtime?.cache),
      daemon,
      clock: { now: iso(now), trusted: isClockTrusted(now) },
      doors,
      emergency: emergencyView(config, runtime, running),
      areas: areaStatus(config, state, db, now),
      holidays: operations.holidays,
      levels: levelStatus(config, db, now, new Set(operations.holidays)),
      counts: new CredentialCache(db).counts(),
      directoryFindings: findings,
      pins: pinStatus(config, findings.shortPins?.count ?? 0, state, now),
      lastImport: readMeta<{ at: string; file: string }>(db, 'last_import') ?? null,
      sync: config.service ? syncView(readSyncStatus(db), now, config.service.warnCacheAgeSeconds) : null,
      offlineLimit: offlineLimitStatus(config, db, state, now, systemBootClock),
      power: powerStatus(config, runtime, running),
      directory: config.service
        ? { revision: readHeldRevision(db), push: config.mqtt ? (running ? (runtime?.push ?? null) : null) : null, pushConfigured: config.mqtt !== undefined }
        : null,
      events: state
        ? new EventLog(state, { agentId: config.agent.id, maxEvents: config.agent.maxEvents }).stats()
        : { total: 0, unpublished: 0, evicted: 0, lastSeq: 0 },
      ...brokerStatus(runtime, running),
      fleet: fleetStatus(config, fleet),
    };
    // A door without a cache, or with a damaged one, refuses everyone: a monitoring script sees it in the exit code (docs/operations.md, Commands).
    const refusesEveryone = cache.missing || cache.damaged !== null;
    if (args.json) {
      ctx.stdout.write(`${JSON.stringify(status)}\n`);
      return refusesEveryone ? 1 : 0;
    }
    const lines = [
      `agent ${status.agent}, cache ${status.cache}`,
      status.daemon.running
        ? `daemon: ${runningText(status.daemon)}`
        : runtime?.stoppedAt
          ? `daemon: not running (stopped ${runtime.stoppedAt}); it locked every relay when it stopped`
          : `daemon: not running${runtime ? ' (it did not stop cleanly: run door-agent relock, as systemd ExecStopPost does)' : ''}`,
      `clock: ${status.clock.now} ${status.clock.trusted ? '(trusted)' : '(NOT trusted: before 2024-01-01, guest links are refused)'}`,
      ...fleetStatusLines(status.fleet),
      'doors:',
      ...(doors.length === 0 && status.fleet ? ['  none yet: waiting for its configuration from the service'] : []),
      ...doors.flatMap((d) => {
        const state =
          d.state === 'LOCKED' || d.state === 'UNKNOWN'
            ? d.state
            : d.cause === EMERGENCY_CAUSE
              ? 'UNLOCKED (released by the emergency input)'
              : d.heldOpen
                ? 'UNLOCKED (held open)'
                : d.relockAt
                  ? `UNLOCKED until ${d.relockAt} (relock in ${Math.max(0, Math.ceil((Date.parse(d.relockAt) - now) / 1000))} s)`
                  : 'UNLOCKED';
        const relay = d.relay ? ` (relay GPIO ${d.relay.pin} = ${d.relay.level})` : '';
        const connected = (r: { type: string; connected: boolean }) => (r.connected ? (r.type === 'wiegand' ? 'listening' : 'connected') : 'NOT connected');
        // A reader's own identity (a PN532's firmware) as it last came online.
        const identity = (r: { identity: string | null }) => (r.identity ? ` (${r.identity})` : '');
        const reader =
          (d.reader
            ? `reader ${d.reader.path}${identity(d.reader)} ${connected(d.reader)}${osdpChannelText(d.reader.channel)}`
            : d.exitReader
              ? 'no entry reader'
              : 'no reader') +
          (d.exitReader
            ? `; exit reader ${d.exitReader.path}${identity(d.exitReader)} ${connected(d.exitReader)}${osdpChannelText(d.exitReader.channel)}`
            : '');
        const unsaved = d.savedState ? [`    WARNING: the saved state says ${d.savedState}; the daemon is still retrying to save the relay's state`] : [];
        return [`  ${d.name} (${d.uuid}): ${state}${relay}; ${reader}`, ...unsaved, ...operationsLines(d)];
      }),
      ...emergencyStatusLines(status.emergency, status.daemon.running),
      ...areaLines(status.areas),
      ...levelLines(status.levels, config),
      cacheLine(status.counts, status.lastImport, readSyncStatus(db).lastSuccessAt),
      ...(cache.missing ? [missingCacheWarning(file)] : []),
      ...cacheDamageLines(status.cacheDamage, file),
      ...directoryLines(status.directoryFindings),
      ...pinLines(status.pins),
      ...(status.sync
        ? [
            `sync: last success ${status.sync.lastSuccessAt ?? 'never'}` +
              (status.sync.cacheAgeSeconds !== null ? ` (${Math.round(status.sync.cacheAgeSeconds / 60)} min ago)` : '') +
              (status.sync.lastError ? `; last error: ${status.sync.lastError}` : ''),
            ...lastSyncLines(status.sync.last),
            ...heldBackLines(status.sync.heldBack),
            `directory: revision ${status.directory?.revision ?? 'none (the service offers no GET /directory)'} held; ` +
              (status.directory?.push
                ? `push active (last revision ${status.directory.push.lastRevision ?? 'not understood'} at ${status.directory.push.at})`
                : status.directory?.pushConfigured
                  ? 'push: no revision received yet (periodic sync meanwhile)'
                  : 'push off (no mqtt section): periodic sync only'),
            ...(status.sync.stale ? [`WARNING: the cache is older than ${config.service!.warnCacheAgeSeconds} s: check the service and the network`] : []),
            ...offlineLimitLines(status.offlineLimit),
          ]
        : ['sync: no service configured (offline cache)']),
      ...powerLines(status.power, config),
      `events: ${status.events.total} in the log (last seq ${status.events.lastSeq}), ${status.events.unpublished} not yet published, ${status.events.evicted} evicted`,
      ...brokerLines(
        status.refused,
        state ? new EventLog(state, { agentId: config.agent.id, maxEvents: config.agent.maxEvents }).keptPastWindow() : 0,
        config.agent.maxEvents,
      ),
    ];
    ctx.stdout.write(`${lines.join('\n')}\n`);
    return refusesEveryone ? 1 : 0;
  } finally {
    state?.close();
    cache.close();
  }
}

export const command: Command = (input) => runStatus({ json: input.options.json === true, config: stringOption(input, 'config') }, input.ctx);
