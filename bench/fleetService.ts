/**
 * The reference service for the fleet benchmark, in its own process: the real one (startService, as
 * `door-agent service` runs it), counting every HTTP request it receives by method and path, so the benchmark
 * counts what the doors ask of the service as the service sees it. Over IPC: sends { type: 'ready' } once
 * listening; answers { type: 'count' } with { type: 'count', requests, revision, cpuMs, directoryAnswerMs } (the
 * directory revision now, the CPU time the service has used so far, each GET /directory's time since the last count).
 *   node dist/bench/fleetService.js SERVICE_CONFIG
 */
import { loadServiceConfig } from '../src/config/load.js';
import { Directory } from '../src/service/directory.js';
import { startService } from '../src/service/root.js';
import { UserStore } from '../src/service/users.js';
import { systemClock } from '../src/util/clock.js';
import { createLogger } from '../src/util/logger.js';

export type FleetServiceMessage =
  | { type: 'ready' }
  | { type: 'count'; requests: Record<string, number>; revision: number; cpuMs: number; directoryAnswerMs: number[] };

const requests: Record<string, number> = {};
// How long each GET /directory took as the service sees it, from its arrival to the answer's last byte handed to
// the OS (since the last count): what the doors waited for, without their own processes' delays.
let directoryAnswerMs: number[] = [];
const service = await startService(loadServiceConfig(process.argv[2]!), {
  clock: systemClock,
  logger: createLogger({ level: 'warn', agentId: 'service' }),
  env: process.env,
  onRequest: (method, path, response) => {
    const key = `${method} ${path}`;
    requests[key] = (requests[key] ?? 0) + 1;
    if (key !== 'GET /directory') return;
    const arrived = performance.now();
    response.once('finish', () => directoryAnswerMs.push(performance.now() - arrived));
  },
});
const directory = new Directory(service.db, new UserStore(service.db));
const send = (message: FleetServiceMessage) => process.send!(message);

process.on('message', async (message: { type: string }) => {
  if (message.type === 'count') {
    const cpu = process.cpuUsage();
    const answers = directoryAnswerMs;
    directoryAnswerMs = [];
    send({
      type: 'count',
      requests: { ...requests },
      revision: (await directory.revision()).revision,
      cpuMs: (cpu.user + cpu.system) / 1000,
      directoryAnswerMs: answers,
    });
  }
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
