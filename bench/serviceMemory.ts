/**
 * The reference service's memory under the largest requests it accepts (issue 32 item 17: one POST /groups with
 * 120,000 add_ids against 40,000 users took it from 320 MB to 1.15 GB RSS, past the unit's MemoryMax=512M). The
 * real service in its own process on 40,000 users: its RSS idle (the floor), then its peak RSS (VmHWM) after the
 * largest allowed POST /groups, PUT /groups and POST /invites; and the 120,000-id request, refused with 413.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiKeys } from '../src/service/apiKeys.js';
import { openServiceSqlite } from '../src/service/database.js';
import { REQUEST_LIMITS } from '../src/service/requestLimits.js';
import { freePort } from './net.js';
import { infoRow, type BenchRow, SERVICE_NODE_OPTIONS } from './report.js';
import { seedService } from './serviceSeed.js';

const USERS = 40_000;
const MEMORY_MAX_MB = 512; // systemd/door-agent-service.service
const root = resolve(fileURLToPath(import.meta.url), '../../..');

/** A field of /proc/PID/status in MB (VmRSS: now; VmHWM: the peak so far). */
function statusMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`));
  return Number(line?.split(/\s+/)[1] ?? NaN) / 1024;
}

export async function benchmarkServiceMemory(workDir: string): Promise<BenchRow[]> {
  const dir = join(workDir, 'service-memory');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  seedService(join(dir, 'data'), USERS);
  const db = openServiceSqlite(join(dir, 'data', 'service.db'));
  const key = await new ApiKeys(db).create('ADMIN', 0, Date.now());
  await db.close();
  const port = await freePort();
  const config = join(dir, 'config.yaml');
  writeFileSync(config, `server: { listen: 127.0.0.1:${port}, dataDir: ${dir}/data }\n`);
  const service: ChildProcess = spawn(process.execPath, [...SERVICE_NODE_OPTIONS, join(root, 'dist/src/cli.js'), 'service', '--config', config], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    await new Promise<void>((res, rej) => {
      service.stdout!.on('data', (d: Buffer) => d.toString().includes('service ready') && res());
      service.once('exit', (code) => rej(new Error(`service exited ${code}`)));
    });
    const pid = service.pid!;
    const call = async (method: string, path: string, body: unknown, status = 200) => {
      const res = await fetch(`http://127.0.0.1:${port}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      if (res.status !== status) throw new Error(`${method} ${path} answered ${res.status}: ${text.slice(0, 200)}`);
      return JSON.parse(text) as Record<string, unknown>;
    };
    await new Promise((r) => setTimeout(r, 1000));
    const idle = statusMb(pid, 'VmRSS');
    const ids = (n: number, from = 1) => Array.from({ length: n }, (_, i) => ((from + i - 1) % USERS) + 1);

    // The request: refused before any work.
    const hugeStarted = performance.now();
    await call('POST', '/groups', { type: 'users', name: 'Huge', add_ids: ids(120_000) }, 413);
    const hugeMs = performance.now() - hugeStarted;

    const max = REQUEST_LIMITS.ids;
    const created = await call('POST', '/groups', { type: 'users', name: 'Largest', add_ids: ids(max) });
    await call('PUT', '/groups', { type: 'users', group_id: created.group_id, add_ids: ids(max, max + 1), del_ids: ids(max) });
    const invites = REQUEST_LIMITS.emails;
    const invitesStarted = performance.now();
    await call('POST', '/invites', { emails: Array.from({ length: invites }, (_, i) => `new${i}@example.org`), groups: [{ id: created.group_id }] });
    const invitesMs = performance.now() - invitesStarted;
    // The answers the doors then fetch, with the new group and users.
    await fetch(`http://127.0.0.1:${port}/multipleusers`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.arrayBuffer());
    const peak = statusMb(pid, 'VmHWM');

    const b = 'service';
    return [
      {
        bench: b,
        metric: `peak RSS after the largest allowed POST /groups, PUT /groups (${max.toLocaleString('en-US')} ids) and POST /invites (${invites.toLocaleString('en-US')} addresses), ${USERS.toLocaleString('en-US')} users`,
        value: peak,
        unit: 'MB',
        floor: idle,
        floorLabel: 'RSS of the idle service, same data',
        ratio: peak / idle,
        target: `< ${MEMORY_MAX_MB} MB (MemoryMax)`,
        met: peak < MEMORY_MAX_MB,
      },
      {
        bench: b,
        metric: 'POST /groups with 120,000 add_ids: refused (413)',
        value: hugeMs,
        unit: 'ms',
        floor: null,
        floorLabel: '',
        ratio: null,
        target: '413 before any work',
        met: true,
      },
      infoRow(b, `POST /invites with ${invites.toLocaleString('en-US')} addresses`, invitesMs, 'ms'),
    ];
  } finally {
    service.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}
