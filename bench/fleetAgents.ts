/**
 * Agents of the fleet benchmark, several in one process: each the daemon's real sync path (a SyncComponent, its
 * syncs in a worker thread with the agent's own cache) fed by its own MQTT client subscribed to the directory
 * revision, as the daemon's MQTT bridge does. Over IPC: { type: 'ready' } once every agent is subscribed, then
 * { type: 'synced', agent, revision, at } after each successful sync, `at` a wall-clock time in ms taken as the
 * sync's result arrives (so the IPC's own delay is not in the figure).
 *   node dist/bench/fleetAgents.js FIRST COUNT WORK_DIR SERVICE_URL API_KEY_FILE MQTT_URL TOPIC_PREFIX [held [shared]]
 *
 * `held`: the agents start (worker threads, caches, MQTT) without syncing, and on { type: 'go', spreadMs } each
 * asks for its first sync after a random delay within spreadMs, as the daemon's start delay spreads them. A
 * thousand agents starting on one machine's two cores take minutes of CPU that a thousand doors, each on its own
 * board, spend in parallel: that is not the service's load, so it is done before the cold start's clock starts.
 * `shared`: the agents' syncs run on this process's thread (each on its own cache connection, the same sync
 * session the daemon's worker runs) instead of a worker thread each: a worker costs some 20 MB, and a thousand
 * of them do not fit this machine.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { connectAsync, type MqttClient } from 'mqtt';
import { cachePath, openDatabase, type Db } from '../src/store/database.js';
import { readHeldVersion } from '../src/sync/sync.js';
import { SyncComponent } from '../src/sync/syncComponent.js';
import { openSyncSession, type SyncRunner, type SyncWorkerData } from '../src/sync/syncSession.js';
import { systemTimers } from '../src/util/clock.js';
import { createLogger } from '../src/util/logger.js';

export type FleetAgentMessage = { type: 'ready' } | { type: 'synced'; agent: number; revision: number | null; at: number } | { type: 'cpu'; cpuMs: number };
/** go: start syncing (held agents); cpu: answer with this process's CPU time so far. */
export type FleetAgentCommand = { type: 'go'; spreadMs: number } | { type: 'cpu' };

const [first, count, workDir, serviceUrl, apiKeyFile, mqttUrl, prefix, mode, threads] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
  string,
  string?,
  string?,
];
const held = mode === 'held';
const shared = threads === 'shared';

/** An agent's syncs on this process's thread (`shared`). */
function sharedThreadRunner(data: SyncWorkerData): SyncRunner {
  let session: ReturnType<typeof openSyncSession> | null = null;
  return {
    start: () => {
      session = openSyncSession(data);
    },
    run: (order) => session!.sync(order),
    stop: async () => session?.close(),
  };
}
const logger = createLogger({ level: 'warn', agentId: 'fleet' });
const send = (message: FleetAgentMessage) => process.send!(message);
const wallNow = () => performance.timeOrigin + performance.now();

interface FleetAgent {
  component: SyncComponent;
  mqtt: MqttClient;
  cache: Db;
}

/** How long the daemon's own connection to the cache waits for the sync's write lock (store/agentStore.ts). */
const DAEMON_BUSY_TIMEOUT_MS = 20;

async function startAgent(index: number): Promise<FleetAgent> {
  const dataDir = join(workDir, `agent-${index}`);
  mkdirSync(dataDir, { recursive: true });
  // The cache with its schema, opened as the daemon's store opens it: the revision held is read from it at start
  // and for each revision message; the sync worker has its own connection.
  const cache = openDatabase(cachePath(dataDir), { busyTimeoutMs: DAEMON_BUSY_TIMEOUT_MS });
  const component = new SyncComponent({
    // The deployed defaults, but an hourly periodic sync: every sync measured here is a pushed one.
    options: {
      baseUrl: serviceUrl,
      apiKeyFile,
      apiKeyIn: 'header',
      syncIntervalSeconds: 3600,
      // The default spreads the first syncs of a cold start over 5 s; held agents wait for 'go' (above).
      startDelaySeconds: held ? 3600 : 5,
      concurrency: 8,
      maxRemovalRatio: 0.5,
      timeoutSeconds: 10,
      warnCacheAgeSeconds: 3600,
    },
    dataDir,
    env: {},
    timers: systemTimers,
    logger: logger.child({ fleetAgent: index }),
    heldVersion: () => readHeldVersion(cache),
    onSynced: (result) => send({ type: 'synced', agent: index, revision: result.revision, at: wallNow() }),
    ...(shared ? { runner: sharedThreadRunner } : {}),
  });
  component.start();
  const mqtt = await connectAsync(mqttUrl, { protocolVersion: 5, clientId: `fleet-agent-${index}`, clean: true });
  (mqtt.stream as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true); // as the daemon's client
  mqtt.on('message', (_topic, payload) => component.onRevision(payload));
  await mqtt.subscribeAsync(`${prefix}/directory/revision`, { qos: 1, rap: true });
  return { component, mqtt, cache };
}

const agents: FleetAgent[] = [];
let stopping: Promise<void> | null = null;
const stop = (): void => {
  if (stopping) return;
  stopping = Promise.allSettled(agents.flatMap((a) => [a.mqtt.endAsync(true), a.component.stop()])).then(() => {
    for (const a of agents) a.cache.close();
    process.exit(0);
  });
};
// Asked to, or the coordinator gone (ended, or killed): these agents end too.
process.on('SIGTERM', stop);
process.on('disconnect', stop);

for (let i = Number(first); i < Number(first) + Number(count); i++) agents.push(await startAgent(i));
process.on('message', (command: FleetAgentCommand) => {
  if (command.type === 'cpu') {
    const cpu = process.cpuUsage();
    send({ type: 'cpu', cpuMs: (cpu.user + cpu.system) / 1000 });
    return;
  }
  for (const agent of agents) setTimeout(() => agent.component.trigger(), Math.random() * command.spreadMs);
});
send({ type: 'ready' });
