/**
 * The console's search as you type at 10,000 users (issue 29): GET /console/people/search, the fragment each
 * keystroke fetches, timed by autocannon in its own process with one connection (one operator typing), beside the
 * floor: GET /user on the same service, the same way. Two searches: one that finds one person (by part of an
 * e-mail), and one that matches every user and is capped at 50 rows with its note.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiKeys } from '../src/service/apiKeys.js';
import { openServiceSqlite } from '../src/service/database.js';
import { freePort } from './net.js';
import { type BenchRow, SERVICE_NODE_OPTIONS } from './report.js';
import { type Load, load, waitReady } from './serviceBench.js';
import { seedService } from './serviceSeed.js';

const USERS = 10_000;
const root = resolve(fileURLToPath(import.meta.url), '../../..');

export async function benchmarkConsole(workDir: string): Promise<BenchRow[]> {
  const dir = join(workDir, 'console');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'data'), { recursive: true });
  seedService(join(dir, 'data'), USERS);
  const db = openServiceSqlite(join(dir, 'data/service.db'));
  const key = await new ApiKeys(db).create('ADMIN', 0, Date.now());
  await db.close();
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const config = join(dir, 'config.yaml');
  writeFileSync(config, `server: { listen: 127.0.0.1:${port}, dataDir: ${dir}/data, console: { enabled: true } }\n`);
  const service = spawn(process.execPath, [...SERVICE_NODE_OPTIONS, join(root, 'dist/src/cli.js'), 'service', '--config', config], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    await waitReady(service, 'service ready');
    // A console session, as the sign-in page opens one.
    const signIn = await fetch(`${base}/console/signin`, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: base, 'content-type': 'application/x-www-form-urlencoded' },
      body: `api_key=${encodeURIComponent(key)}`,
    });
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!;
    if (signIn.status !== 303 || cookie === '') throw new Error(`console sign-in answered ${signIn.status}`);
    const search = (q: string) => {
      const url = `${base}/console/people/search?q=${encodeURIComponent(q)}`;
      return { url, headers: [`cookie=${cookie}`] };
    };
    const one = search('user7321@');
    const capped = search('example.org');
    for (const [s, expected] of [
      [one, '1 found.'],
      [capped, 'The first 50 matches'],
    ] as const) {
      const text = await (await fetch(s.url, { headers: { cookie } })).text();
      if (!text.includes(expected)) throw new Error(`the search ${s.url} did not answer "${expected}"`);
    }
    const floor = load(`${base}/user?email_id=${USERS / 2}`, service, [`authorization=Bearer ${key}`], 1);
    const found = load(one.url, service, one.headers, 1);
    const all = load(capped.url, service, capped.headers, 1);
    const b = 'console';
    const rows = (what: string, r: Load): BenchRow[] =>
      (['p50', 'p99'] as const).map((p) => ({
        bench: b,
        metric: `search as you type, ${USERS.toLocaleString('en-US')} users, ${what} ${p}`,
        value: r[p] ?? Number.NaN,
        unit: 'ms',
        floor: floor[p] ?? null,
        floorLabel: `GET /user, ${p} (one connection)`,
        // autocannon counts whole milliseconds: a floor under 1 ms is taken as 1 ms.
        ratio: (r[p] ?? Number.NaN) / Math.max(floor[p] ?? 1, 1),
        target: r.errors === 0 ? '' : `${r.errors} errors`,
        met: r.errors === 0 ? null : false,
      }));
    return [...rows('one match ("user7321@")', found), ...rows('capped at 50 ("example.org")', all)];
  } finally {
    service.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}
