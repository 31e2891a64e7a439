/**
 * The reference service for the fleet benchmark, in its own process: the real one (startService, as
 * `door-agent service` runs it), counting every HTTP request it receives by method and path, so the benchmark
 * counts what the doors ask of the service as the service sees it. Over IPC: sends { type: 'ready' } once
 * listening; answers { type: 'count' } with { type: 'count', requests, revision } (the directory revision now).
 *   node dist/bench/fleetService.js SERVICE_CONFIG
 */
import { loadServiceConfig } from '../src/config/load.js';
import { Directory } from '../src/service/directory.js';
import { startService } from '../src/service/root.js';
import { UserStore } from '../src/service/users.js';
import { systemClock } from '../src/util/clock.js';
import { createLogger } from '../src/util/logger.js';

export type FleetServiceMessage = { type: 'ready' } | { type: 'count'; requests: Record<string, number>; revision: number };

const requests: Record<string, number> = {};
const service = await startService(loadServiceConfig(process.argv[2]!), {
  clock: systemClock,
  logger: createLogger({ level: 'warn', agentId: 'service' }),
  env: process.env,
  onRequest: (method, path) => {
    const key = `${method} ${path}`;
    requests[key] = (requests[key] ?? 0) + 1;
  },
});
const directory = new Directory(service.db, new UserStore(service.db));
const send = (message: FleetServiceMessage) => process.send!(message);

process.on('message', (message: { type: string }) => {
  if (message.type === 'count') send({ type: 'count', requests: { ...requests }, revision: directory.revision().revision });
});
let stopping: Promise<void> | null = null;
const stop = (): void => {
  if (stopping) return;
  stopping = service.stop().finally(() => process.exit(0));
};
// Asked to, or the coordinator gone (ended, or killed): this process ends too.
process.on('SIGTERM', stop);
process.on('disconnect', stop);
send({ type: 'ready' });
