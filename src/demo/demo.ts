import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { Aedes } from 'aedes';
import { pino } from 'pino';
import { startAgent, type Agent } from '../app.js';
import { parseConfig } from '../config/load.js';
import type { PortFactory, PortLike } from '../readers/serial/port.js';
import { ApiKeys } from '../service/apiKeys.js';
import { startService } from '../service/root.js';
import { cachePath, openDatabase } from '../store/database.js';
import { createServiceClient } from '../sync/serviceClient.js';
import { syncOnce } from '../sync/sync.js';
import type { Clock, Timers } from '../util/clock.js';
import { changedByHand, placeAgentConfig } from './agentConfigFile.js';
import { clockTime } from './clockTime.js';
import { shellWord } from './cliCommand.js';
import { claimDemoDir } from './demoDir.js';
import { formatEvent } from './narrator.js';
import { listenLoopback, onPreferredPort } from './ports.js';

const DEMO_DOOR = '6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d';

export interface DemoHandle {
  stop(): Promise<void>;
}

/** stdin as the door's serial reader: what is typed goes through the real frame parser (Enter ends a line). */
function stdinReader(input: NodeJS.ReadableStream): PortFactory {
  return () => {
    const listeners: Array<[string, (...args: never[]) => void]> = [];
    const port: PortLike = {
      isOpen: false,
      open(callback) {
        (port as { isOpen: boolean }).isOpen = true;
        callback(null);
      },
      close(callback) {
        for (const [event, listener] of listeners) input.removeListener(event, listener as never);
        (port as { isOpen: boolean }).isOpen = false;
        callback?.(null);
      },
      on(event: string, listener: (...args: never[]) => void) {
        if (event === 'data') {
          listeners.push(['data', listener]);
          input.on('data', listener as never);
        }
        return port;
      },
      removeAllListeners() {
        return port;
      },
    } as PortLike;
    return port;
  };
}

/**
 * `door-agent demo`: everything on one machine, no hardware, no cloud. An embedded MQTT broker (aedes), the
 * reference service seeded with a demo organization, a door agent on simulated GPIO synced from it, and the
 * terminal as the card reader.
 */
export async function startDemo(options: {
  dir: string;
  /** How a person runs door-agent at a shell (cliCommand.ts), for the commands the demo prints. */
  cli: string;
  out: (text: string) => void;
  input: NodeJS.ReadableStream;
  clock: Clock;
  timers: Timers;
}): Promise<DemoHandle> {
  const { out } = options;
  const dir = resolve(options.dir);
  claimDemoDir(dir, new Date(options.clock.wallNow()), (entry) => changedByHand(dir, entry));

  // 1. The broker, on loopback, with TCP no-delay on both sides (or QoS 1 round trips wait for Nagle).
  const broker = await Aedes.createBroker();
  const brokerServer = createServer((socket) => {
    socket.setNoDelay(true);
    broker.handle(socket);
  });
  const brokerListen = await onPreferredPort(1883, (port) => listenLoopback(brokerServer, port));
  const mqttPort = brokerListen.started;
  const mqttUrl = `mqtt://127.0.0.1:${mqttPort}`;

  // 2. The reference service with a demo organization (its own composition root, as `door-agent service`), its
  // log in demo.log: at info, as `door-agent service` logs (it says little at warn: the file stayed empty).
  const serviceLog = pino({ level: 'info' }, pino.destination({ dest: join(dir, 'demo.log'), sync: true }));
  // aedes speaks MQTT 3.1.1.
  const mqttOptions = {
    url: mqttUrl,
    topicPrefix: 'door-agent',
    commandMaxAgeSeconds: 30,
    maxGuestLinks: 500,
    guestLinkMaxAgeSeconds: 7 * 86_400,
    futureSkewSeconds: 300,
    retainedMaxAgeSeconds: 3 * 86_400,
    keepaliveSeconds: 15,
    protocolVersion: 4 as const,
    homeAssistant: { discovery: true, prefix: 'homeassistant' },
  };
  // No server.publicUrl: the demo mails nothing, and its console's origin is then the address the service really
  // binds (127.0.0.1, or localhost, at 8080 or the port the system picked when 8080 is taken; console/ownOrigin.ts).
  const server = (port: number) => ({
    listen: `127.0.0.1:${port}`,
    dataDir: join(dir, 'service'),
    lockReplyTimeoutSeconds: 5,
    resources: [{ resourceId: 12, uuid: DEMO_DOOR, type: 'DOOR' as const, name: 'Front door' }],
    console: { enabled: true, sessionMinutes: 30, maxSessionHours: 12 },
  });
  const serviceStart = await onPreferredPort(8080, (port) =>
    startService({ server: server(port), mqtt: mqttOptions }, { clock: options.clock, logger: serviceLog, env: {} }),
  );
  const service = serviceStart.started;
  const key = await new ApiKeys(service.db).create('ADMIN', 0, options.clock.wallNow());
  const base = service.url;
  const call = async (method: string, path: string, body: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return (await res.json()) as Record<string, unknown>;
  };
  const staff = await call('POST', '/groups', { type: 'users', name: 'Staff', add_ids: [] });
  await call('POST', '/groups', { type: 'users', name: 'Contractors', add_ids: [] });
  const invited = await call('POST', '/invites', {
    emails: ['alice@example.org', 'bob@example.org'],
    smartcards: [
      [
        { number: '4213578', label: 'badge' },
        { number: '1234', label: 'PIN' },
      ],
      [{ number: '4213579', label: 'badge' }],
    ],
    groups: [{ id: staff.group_id, name: 'Staff' }],
    no_email: true,
  });
  await call('POST', '/invites', { emails: ['dave@example.org'], smartcards: [[{ number: '4213580', label: 'badge' }]], no_email: true });
  await call('PUT', '/togglesuspension', { email_id: (invited.add_ids as number[])[1] });
  const weekdays = [[], [[9, 17]], [[9, 17]], [[9, 17]], [[9, 17]], [[9, 17]], []];
  const link = await call('POST', '/magiclinkadmin', {
    email_list: ['carol@example.org'],
    resource_id_list: [12],
    name: 'Carol visiting',
    time_mapping: weekdays,
    smartcards: [{ number: '7700001', label: 'visitor card' }],
    send_email: false,
  });

  // 3. The door agent on simulated GPIO, synced from the service, the terminal as its reader. Its config is a
  // file in the demo's directory, so that the status and events commands it prints read the same.
  const configFile = placeAgentConfig(
    dir,
    `agent: { id: demo, dataDir: ${JSON.stringify(join(dir, 'agent'))}, logLevel: info, controlSocket: ${controlSocketFor(dir)} }
access: { groups: [Staff] }
gpio: { driver: simulated, simulatedDir: ${JSON.stringify(join(dir, 'gpio'))} }
service: { baseUrl: "${base}", syncIntervalSeconds: 300, startDelaySeconds: 0 }
mqtt: { url: "${mqttUrl}", topicPrefix: door-agent, protocolVersion: 4 }
doors:
  - { uuid: ${DEMO_DOOR}, resourceId: 12, name: Front door, relay: { pin: 17 }, unlockSeconds: 5,
      contact: { pin: 27 }, exitButton: { pin: 22 }, reader: { path: stdin } }
emergency: { pin: 26 }
`,
  );
  const config = parseConfig(configFile.text, configFile.path);
  const clock = clockTime(config.agent.timezone);
  const env = { DOOR_AGENT_API_KEY: key };
  const agentDb = openDatabase(cachePath(config.agent.dataDir));
  await syncOnce(agentDb, createServiceClient(config.service!, env, config.agent.dataDir), {
    concurrency: 4,
    maxRemovalRatio: null,
    now: () => options.clock.wallNow(),
  });
  agentDb.close();
  const narrator = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n')) {
        const text = line ? formatEvent(line, clock) : null;
        if (text) out(`${text}\n`);
      }
      done();
    },
  });
  const logger = pino({ level: 'info' }, narrator);
  const agent: Agent = await startAgent(config, { logger, clock: options.clock, timers: options.timers, env, openPort: stdinReader(options.input) });

  out(`
door-agent demo: a door on simulated GPIO, synced from the reference service, commanded over MQTT.
  MQTT broker        ${mqttUrl}${brokerListen.busy ? '   (1883 is taken by another program)' : ''}
  reference service  ${base}${serviceStart.busy ? '   (8080 is taken by another program)' : ''}
  console            ${base}/console   (sign in with the API key below)
  demo data          ${dir} (emptied at the next start; demo.log holds the service's log)
  agent config       ${configFile.path}${configFile.kept ? `   (${configFile.kept} was changed by hand: kept as it is, not used)` : ''}
Type a card number or a PIN and press Enter (the terminal is the card reader; times are ${config.agent.timezone}):
  4213578      Alice, Staff: granted          1234#   Alice's PIN (keys end with #)
  4213579      Bob: suspended                 4213580 Dave: not in Staff
  7700001      Carol's visitor card: Mon-Fri 09:00-17:00
  ${String(link.magic_token)}   Carol's QR token
The relay is the file ${dir}/gpio/gpio17/value (1 = unlocked); open the door: echo 1 > ${dir}/gpio/gpio27/value
Fire alarm (the loop opens): echo 1 > ${dir}/gpio/gpio26/value   and clear it: echo 0 > ${dir}/gpio/gpio26/value

The operator's console: open ${base}/console and sign in with this ADMIN API key:
  ${key}

From another terminal:
  ${options.cli} status --config ${shellWord(configFile.path)}
  ${options.cli} events --config ${shellWord(configFile.path)}
  mosquitto_pub -h 127.0.0.1 -p ${mqttPort} -t door-agent/doors/${DEMO_DOOR}/set -m '{"lock_state":false,"unlock_time":5}'
  mosquitto_sub -h 127.0.0.1 -p ${mqttPort} -t 'door-agent/#' -v
  curl -s -H 'Authorization: Bearer ${key}' -X POST ${base}/setlockstatus -d 'uuid=${DEMO_DOOR}&lock_state=false&unlock_time=5'
  curl -s -H 'Authorization: Bearer ${key}' -H 'Content-Type: application/json' -X POST ${base}/magiclinkadmin \\
    -d '{"email_list":["eve@example.org"],"resource_id_list":[12],"name":"Eve","smartcards":[{"number":"7700002"}],"send_email":false}'
  curl -s -H 'Authorization: Bearer ${key}' ${base}/multipleusers
  curl -s -H 'Authorization: Bearer ${key}' -X PUT ${base}/togglesuspension -d 'email_id=${(invited.add_ids as number[])[0]}'
      (suspends Alice at the service: the door refuses 4213578 within 2 s, pushed over MQTT; again to undo)
Ctrl-C stops everything.
`);

  return {
    async stop() {
      await agent.stop();
      await service.stop();
      await new Promise<void>((r) => broker.close(() => r()));
      await new Promise<void>((r) => brokerServer.close(() => r()));
    },
  };
}

/**
 * The demo's control socket in its directory (door-agent unlock --config <dir>/agent.yaml reaches it), or none
 * when the path is longer than a Unix socket's 107 bytes.
 */
function controlSocketFor(dir: string): string {
  const path = join(dir, 'control.sock');
  return Buffer.byteLength(path) <= 107 ? JSON.stringify(path) : 'null';
}
