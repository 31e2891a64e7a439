/**
 * Tap to relay while the agent syncs (issue 11): the same 1,000 taps as tap-to-relay, once at an idle agent and
 * once while the agent runs full syncs of 30,000 users back to back (the seed's 1 + N requests from a service in
 * its own process, every body validated and staged, in the agent's sync worker). Reported beside idle: p50 (goal:
 * at most 2x idle) and the slowest tap (goal: at most 50 ms over the idle maximum).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './net.js';
import type { BenchRow } from './report.js';
import { percentile } from './stats.js';
import { measureAgent } from './tapToRelay.js';

const USERS = 30_000;
const root = resolve(fileURLToPath(import.meta.url), '../../..');

function summary(samples: number[]) {
  const sorted = Float64Array.from(samples).sort();
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1]! };
}

export async function benchmarkTapDuringSync(workDir: string): Promise<BenchRow[]> {
  const dir = join(workDir, 'tap-sync');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'idle'), { recursive: true });
  mkdirSync(join(dir, 'busy'), { recursive: true });
  const idle = summary(await measureAgent(join(dir, 'idle')));
  const port = await freePort();
  const service = spawn(process.execPath, [join(root, 'dist/bench/listService.js'), String(port), String(USERS)], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await new Promise<void>((r) => service.stdout!.once('data', () => r()));
    writeFileSync(join(dir, 'busy', 'api-key'), 'dak_bench\n');
    const extra = `service: { baseUrl: "http://127.0.0.1:${port}", apiKeyFile: ${join(dir, 'busy', 'api-key')}, syncIntervalSeconds: 10, concurrency: 8, maxRemovalRatio: 1 }`;
    // The first sync starts 1-3 s after the agent; the taps begin once it is under way, and the syncs follow one another.
    const busy = summary(await measureAgent(join(dir, 'busy'), extra, () => new Promise((r) => setTimeout(r, 3000))));
    const b = 'tap-during-sync';
    return [
      { bench: b, metric: 'card line to relay p50, idle', value: idle.p50, unit: 'ms', floor: null, floorLabel: '', ratio: null, target: '', met: null },
      { bench: b, metric: `card line to relay p50, during full syncs of ${USERS} users`, value: busy.p50, unit: 'ms', floor: idle.p50, floorLabel: 'idle p50', ratio: busy.p50 / idle.p50, target: '<= 2x idle', met: busy.p50 <= 2 * idle.p50 },
      { bench: b, metric: 'card line to relay p99, idle / during sync', value: busy.p99, unit: 'ms', floor: idle.p99, floorLabel: 'idle p99', ratio: busy.p99 / idle.p99, target: '', met: null },
      { bench: b, metric: 'slowest tap during sync, over the idle maximum', value: busy.max - idle.max, unit: 'ms', floor: idle.max, floorLabel: 'idle maximum', ratio: null, target: '<= 50', met: busy.max - idle.max <= 50 },
    ];
  } finally {
    service.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}
