import { doorsParsedAlone, readRawConfig } from '../config/lenient.js';
import { EXIT_INVALID_CONFIG } from '../config/schema.js';
import { InputError } from '../util/errors.js';
import { redactUrl } from '../util/redact.js';
import { configPath, stringOption, type Command, type CommandContext } from './context.js';
import { loadCheckedConfig, loadServiceConfig } from '../config/load.js';
import type { FleetStart } from '../config/fleetVersions.js';
import { existsSync, readFileSync } from 'node:fs';
import type { AgentOptions } from '../config/options.js';
import { cachePath, openDatabase } from '../store/database.js';
import { directoryFindings, directoryLines } from './directoryStatus.js';
import { describeReader } from '../door/options.js';
import { loadChardevBinding } from '../hardware/chardev/binding.js';
import { checkChardevPins, probeGpio } from '../hardware/gpioProbe.js';
import { parse as parseYaml } from 'yaml';
import { plainOsdpWarnings } from '../config/osdpSecurity.js';
import { lockoutWarnings } from '../config/keypadLockout.js';
import { ambiguousFormatWarnings } from '../config/wiegandFormats.js';
import { dataDirProblems, readerDeviceWarnings, readerDevices } from '../config/hostChecks.js';
import { levelLines, levelStatus } from './levelStatus.js';
import { emergencyConfigLines, emergencyView } from './emergencyStatus.js';
import { readersOf } from '../config/doorReaders.js';
import { doorGroupWarnings } from '../config/doorGroups.js';
import { doorGroupLines } from './areaStatus.js';
import { publicUrlWarnings } from '../config/publicUrl.js';
import type { ServerOptions } from '../service/options.js';
import { loadFleetKeys } from '../service/fleet/identityKey.js';

function loadServiceConfigIfServiceOnly(path: string) {
  let data: unknown;
  try {
    data = parseYaml(readFileSync(path, 'utf8'));
  } catch {
    return undefined; // the agent loader reports unreadable or broken files
  }
  // A server section and no door: the service's file, also when it carries an agent section (one file can serve both).
  if (typeof data !== 'object' || data === null || !('server' in data) || 'doors' in data) return undefined;
  return loadServiceConfig(path);
}

/** `door-agent config check`: validates the file and every file it names; prints each problem with its key path. */
function runConfigCheck(args: { config: string | undefined }, ctx: CommandContext): number {
  const path = configPath(args.config, ctx.env);
  // A file for the reference service alone (a server section, no door): checked as the service reads it.
  const service = loadServiceConfigIfServiceOnly(path);
  if (service) {
    ctx.stdout.write(
      `${path}: ok (reference service)\n` +
        `  listen ${service.server.listen}, data in ${service.server.dataDir}, ${service.server.resources.length} resource(s)\n` +
        `  database ${service.server.database ? `PostgreSQL ${redactUrl(service.server.database.url)} (the history mark in the data directory)` : `SQLite ${service.server.dataDir}/service.db`}\n` +
        (service.server.metrics ? `  metrics: GET http://${service.server.metrics.listen}/metrics\n` : '') +
        `  mqtt ${service.mqtt ? redactUrl(service.mqtt.url) : 'not configured (POST /setlockstatus answers 503)'}; ` +
        `smtp ${service.server.smtp ? redactUrl(service.server.smtp.url) : 'not configured (mail waits in the outbox)'}\n` +
        consoleLines(service.server) +
        fleetLines(service.server),
    );
    return 0;
  }
  let config;
  let fleet;
  try {
    // Every problem at once (load.ts checkConfigData, also what the agent checks each version from the service
    // with): the file's own (the checks across keys too), the files it names and the data directory.
    ({ config, fleet } = loadCheckedConfig(path, ctx.env));
  } catch (err) {
    if (!(err instanceof InputError) || err.exitCode !== EXIT_INVALID_CONFIG) throw err;
    const raw = readRawConfig(path);
    writeWarnings(ctx, readerDeviceWarnings(readerDevices(doorsParsedAlone(raw).flatMap(({ index, door }) => readersOf(door).map((r) => ({ index, ...r }))))));
    throw err;
  }
  const dataDir = dataDirProblems(config.agent.dataDir);
  const deviceWarnings = readerDeviceWarnings(
    readerDevices(
      config.doors.flatMap((door, index) => [
        { index, reader: door.reader },
        { index, key: ['readers', 'exit'], reader: door.exitReader },
      ]),
    ),
  );
  // One file for a door that also runs the reference service: its server section is checked as the service reads it.
  const raw = readRawConfig(path);
  const sharedService = raw && 'server' in raw ? loadServiceConfig(path) : undefined;
  const doors = config.doors.map(
    (d) =>
      `${d.name} (GPIO ${d.relay.pin}${d.reader ? `, reader ${describeReader(d.reader)}` : ''}${d.exitReader ? `, exit reader ${describeReader(d.exitReader)}` : ''})`,
  );
  const probe = probeGpio({ binding: loadChardevBinding });
  const chosen = probe.drivers.find((d) => d.driver === config.gpio.driver)!;
  const suggested = probe.drivers.find((d) => d.driver === probe.suggested)!;
  const pinProblems =
    config.gpio.driver === 'chardev' && chosen.supported ? checkChardevPins(loadChardevBinding(), config.gpio.chip, configuredPins(config)) : [];
  const gpioLines =
    `  gpio drivers on this machine (suggested: ${probe.suggested}):\n` +
    probe.drivers.map((d) => `    ${d.driver}: ${d.supported ? 'yes' : 'no'} - ${d.detail}\n`).join('') +
    (chosen.supported
      ? ''
      : `  WARNING: gpio.driver ${config.gpio.driver} does not work on this machine (${chosen.detail}); ` +
        (suggested.supported ? `${probe.suggested} does\n` : `fix that first\n`)) +
    pinProblems.map((p) => `  WARNING: ${p}\n`).join('') +
    plainOsdpWarnings(config.doors)
      .map((w) => `  WARNING: ${w}\n`)
      .join('') +
    lockoutWarnings(config.doors, config.access.keypadLockout)
      .map((w) => `  WARNING: ${w}\n`)
      .join('') +
    ambiguousFormatWarnings(config.doors)
      .map((w) => `  WARNING: ${w}\n`)
      .join('') +
    doorGroupWarnings(config)
      .map((w) => `  WARNING: ${w}\n`)
      .join('');
  ctx.stdout.write(
    `${path}: ok\n` +
      fleetCheckLines(fleet, config) +
      `  agent ${config.agent.id}, time zone ${config.agent.timezone}, data in ${config.agent.dataDir}\n` +
      (config.doors.length === 0 && config.fleet
        ? `  gpio driver ${config.gpio.driver}; no doors yet: this agent takes its configuration from the service (docs/fleet.md)\n`
        : `  gpio driver ${config.gpio.driver}; ${config.doors.length} door(s): ${doors.join(', ')}\n`) +
      emergencyConfigLines(emergencyView(config, undefined, false))
        .map((l) => `${l}\n`)
        .join('') +
      doorGroupLines(config)
        .map((l) => `${l}\n`)
        .join('') +
      `  service ${config.service ? redactUrl(config.service.baseUrl) : 'not configured (offline)'}; ` +
      `mqtt ${config.mqtt ? redactUrl(config.mqtt.url) : 'not configured'}\n` +
      (config.access.maxCacheAgeHours !== undefined
        ? `  offline limit: ${config.access.maxCacheAgeHours} h without a successful sync, then only responders (access.maxCacheAgeHours)\n`
        : '') +
      (config.power
        ? `  power inputs: ${[config.power.mainsPin === undefined ? null : `mains GPIO ${config.power.mainsPin}`, config.power.batteryLowPin === undefined ? null : `battery low GPIO ${config.power.batteryLowPin}`].filter(Boolean).join(', ')}\n`
        : '') +
      (config.metrics ? `  metrics: GET http://${config.metrics.listen}/metrics\n` : '') +
      (sharedService
        ? `  reference service: listen ${sharedService.server.listen}, ${sharedService.server.resources.length} resource(s)\n${consoleLines(sharedService.server)}`
        : '') +
      dataDir.line +
      gpioLines +
      deviceWarnings.map((w) => `  WARNING: ${w}\n`).join('') +
      cacheLines(config, ctx.clock.wallNow()),
  );
  return 0;
}

/** A board file with a fleet section: the version from the service merged under it, and the ones passed over. */
function fleetCheckLines(fleet: FleetStart | null, config: AgentOptions): string {
  if (fleet === null) return '';
  const merged =
    fleet.version === null
      ? `  fleet: no configuration version from the service merged: this file alone${config.doors.length === 0 ? ' (it waits for its configuration from the service)' : ''}\n`
      : `  fleet: configuration version ${fleet.version} from the service merged under this file (this file wins for every key it sets)\n`;
  const passedOver = fleet.passedOver.map(
    (p) =>
      `  WARNING: ${p.version === null ? p.file : `configuration version ${p.version} (${p.file})`} fails its check, not used:\n${p.problems.map((line) => `    ${line}\n`).join('')}`,
  );
  return merged + passedOver.join('');
}

/** The reference service's console: where it is opened (server.publicUrl, else its listen address), and the warnings. */
function consoleLines(server: ServerOptions): string {
  if (!server.console?.enabled) return '';
  const at = server.publicUrl === undefined ? `http://${server.listen} (server.listen; no server.publicUrl)` : `${server.publicUrl} (server.publicUrl)`;
  return `  console at ${at}\n${publicUrlWarnings(server)
    .map((w) => `  WARNING: ${w}\n`)
    .join('')}`;
}

/** The fleet (server.fleet): its key files read as the service reads them (a problem: exit 78), and what it hands agents. */
function fleetLines(server: ServerOptions): string {
  if (!server.fleet) return '';
  const keys = loadFleetKeys(server.fleet);
  const mqtt = server.fleet.agentMqtt;
  return (
    `  fleet: enrolment codes good for ${server.fleet.enrolCodeHours} h, identity key fingerprint ${keys.fingerprint}; ` +
    `release key ${keys.releaseRaw === null ? 'not configured (grants carry none)' : 'configured'}; ` +
    `agents' MQTT logins ${mqtt ? `at ${redactUrl(mqtt.url)} (role ${mqtt.role})` : 'not made (configure the broker by hand)'}\n`
  );
}

function writeWarnings(ctx: CommandContext, warnings: string[]): void {
  for (const w of warnings) ctx.stdout.write(`WARNING: ${w}\n`);
}

/**
 * The access levels of each door (the service's too, from the cache when there is one), and what in the cache's
 * directory weakens the doors (short cards, duress collisions).
 */
function cacheLines(config: AgentOptions, now: number): string {
  const file = cachePath(config.agent.dataDir);
  let db;
  try {
    db = existsSync(file) ? openDatabase(file, { readonly: true }) : null;
  } catch {
    db = null; // status and check say what is wrong with the cache
  }
  try {
    const levels = levelLines(levelStatus(config, db, now, new Set(config.access.holidays)), config, '  ');
    return [...levels, ...(db ? directoryLines(directoryFindings(config, db), '  ') : [])].map((l) => `${l}\n`).join('');
  } finally {
    db?.close();
  }
}

/** Every GPIO line the doors and the emergency input use, with the key that names it. */
function configuredPins(config: AgentOptions): Array<{ where: string; pin: number }> {
  const emergency = config.emergency;
  const emergencyPins = emergency
    ? [{ where: 'emergency.pin', pin: emergency.pin }, ...(emergency.confirmPin === null ? [] : [{ where: 'emergency.confirmPin', pin: emergency.confirmPin }])]
    : [];
  return config.doors
    .flatMap((d, i) => [
      { where: `doors[${i}].relay.pin`, pin: d.relay.pin },
      ...(d.contact ? [{ where: `doors[${i}].contact.pin`, pin: d.contact.pin }] : []),
      ...(d.exitButton ? [{ where: `doors[${i}].exitButton.pin`, pin: d.exitButton.pin }] : []),
      ...(d.reader?.type === 'wiegand'
        ? [
            { where: `doors[${i}].reader.d0`, pin: d.reader.d0 },
            { where: `doors[${i}].reader.d1`, pin: d.reader.d1 },
          ]
        : []),
      ...(d.exitReader?.type === 'wiegand'
        ? [
            { where: `doors[${i}].readers.exit.d0`, pin: d.exitReader.d0 },
            { where: `doors[${i}].readers.exit.d1`, pin: d.exitReader.d1 },
          ]
        : []),
    ])
    .concat(emergencyPins);
}

export const command: Command = (input) => runConfigCheck({ config: stringOption(input, 'config') }, input.ctx);
