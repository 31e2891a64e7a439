/**
 * What the benchmarks that time a revocation at a door share (`sync`, `scim`): a running agent (MQTT, periodic sync
 * hourly) on a service seeded by serviceSeed.ts, and the timer of one change: from the call that makes it until the
 * door's cache holds the user's new status (read from the cache file, as the decision reads it).
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { AGENT_NODE_OPTIONS } from './report.js';
import { sleep, waitFor } from './wait.js';

const root = resolve(fileURLToPath(import.meta.url), '../../..');
/** Past this a change is given up (the figures would mean nothing). */
const CHANGE_TIMEOUT_MS = 30_000;

/** Times one change of a seeded user (`emailId`): from `change()` until the door's cache holds their new status (ms). */
export type TimedChange = (emailId: number, change: () => Promise<unknown>) => Promise<number>;

/** The badge serviceSeed.ts gives user `emailId`. */
const seededCard = (emailId: number) => String(1_000_000 + 2 * (emailId - 1));

/**
 * Runs `measure` beside the agent of `agentConfig` (in `dir`) made to take pushed revisions from the broker at
 * `mqttUrl` and to sync only hourly otherwise, once it has synced; the agent is stopped after.
 */
export async function withPushedAgent<T>(
  bench: string,
  dir: string,
  agentConfig: string,
  mqttUrl: string,
  measure: (timed: TimedChange) => Promise<T>,
): Promise<T> {
  const config = readFileSync(agentConfig, 'utf8').replace(
    'service: {',
    `mqtt: { url: "${mqttUrl}", topicPrefix: bench }\nservice: { syncIntervalSeconds: 3600,`,
  );
  const pushedConfig = join(dir, 'agent-pushed.yaml');
  writeFileSync(pushedConfig, config);
  const agent = spawn(process.execPath, [...AGENT_NODE_OPTIONS, join(root, 'dist/src/cli.js'), 'run', '--config', pushedConfig], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let log = '';
  agent.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  try {
    await waitFor(bench, () => log.includes('directory revisions are pushed'), 30_000, 'the agent taking pushed revisions');
    await waitFor(bench, () => log.includes('"msg":"sync done"'), 30_000, 'the first sync');
    const cache = new Database(join(dir, 'agent', 'cache.db'), { readonly: true });
    const status = cache.prepare('SELECT ad_status FROM credentials WHERE number = ?').pluck();
    try {
      return await measure(async (emailId, change) => {
        const card = seededCard(emailId);
        const before = status.get(card);
        const started = performance.now();
        await change();
        while (status.get(card) === before) {
          if (performance.now() - started > CHANGE_TIMEOUT_MS) throw new Error(`${bench} benchmark: the change of user ${emailId} not at the door within 30 s`);
          await sleep(5);
        }
        return performance.now() - started;
      });
    } finally {
      cache.close();
    }
  } finally {
    agent.kill('SIGTERM');
  }
}
