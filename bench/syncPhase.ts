/**
 * One phase of the sync benchmark, in its own process (so its RSS and I/O are its own):
 *   node dist/bench/syncPhase.js sync CONFIG     door-agent's real sync
 *   node dist/bench/syncPhase.js bare URL KEY N C   the same N+1 requests, concurrency C, no database
 * Prints one JSON line.
 */
import { readFileSync, statSync } from 'node:fs';
import { loadConfig } from '../src/config/load.js';
import { readSecret } from '../src/util/secretFiles.js';
import { cachePath, openDatabase } from '../src/store/database.js';
import { ServiceClient } from '../src/sync/serviceClient.js';
import { syncOnce } from '../src/sync/sync.js';

function writeBytes(): number {
  const io = readFileSync('/proc/self/io', 'utf8');
  return Number(/write_bytes: (\d+)/.exec(io)?.[1] ?? 0);
}

function fileBytes(path: string): number {
  let total = 0;
  for (const f of [path, `${path}-wal`]) {
    try {
      total += statSync(f).size;
    } catch {
      // absent
    }
  }
  return total;
}

const [phase, ...args] = process.argv.slice(2);
const started = performance.now();
if (phase === 'sync') {
  const config = loadConfig(args[0]!);
  const service = config.service!;
  const client = new ServiceClient({
    baseUrl: service.baseUrl,
    apiKey: readSecret('service.apiKeyFile', service.apiKeyFile, process.env) ?? '',
    apiKeyIn: service.apiKeyIn,
    timeoutMs: service.timeoutSeconds * 1000,
    spoolDir: config.agent.dataDir,
  });
  const file = cachePath(config.agent.dataDir);
  const db = openDatabase(file);
  const bytesBefore = writeBytes();
  const work = performance.now();
  const r = await syncOnce(db, client, { concurrency: service.concurrency, maxRemovalRatio: null, now: () => Date.now() });
  const workMs = performance.now() - work;
  db.pragma('wal_checkpoint(TRUNCATE)');
  const written = writeBytes() - bytesBefore;
  db.close();
  process.stdout.write(
    `${JSON.stringify({ seconds: (performance.now() - started) / 1000, workMs, applyMs: r.applyMs ?? null, requests: client.traffic.requests, bytesIn: client.traffic.wireBytes, bodyBytes: client.traffic.bodyBytes, mode: r.mode, rowsWritten: r.rowsWritten, users: r.users, rssMb: process.resourceUsage().maxRSS / 1024, writeBytes: written, fileBytes: fileBytes(file) })}\n`,
  );
} else if (phase === 'bare') {
  const [url, key, n, c] = args as [string, string, string, string];
  const headers = { authorization: `Bearer ${key}` };
  const list = (await (await fetch(`${url}/multipleusers`, { headers })).json()) as Array<{ email_id: number }>;
  let next = 0;
  await Promise.all(
    Array.from({ length: Number(c) }, async () => {
      while (next < list.length) {
        const id = list[next++]!.email_id;
        await (await fetch(`${url}/user?email_id=${id}`, { headers })).json();
      }
    }),
  );
  void n;
  process.stdout.write(`${JSON.stringify({ seconds: (performance.now() - started) / 1000, requests: list.length + 1 })}\n`);
} else if (phase === 'bare-directory') {
  const [url, key] = args as [string, string];
  const all = (await (await fetch(`${url}/directory`, { headers: { authorization: `Bearer ${key}` } })).json()) as { users: unknown[] };
  process.stdout.write(`${JSON.stringify({ seconds: (performance.now() - started) / 1000, requests: 1, users: all.users.length })}\n`);
} else {
  throw new Error('usage: syncPhase.js sync CONFIG | bare URL KEY N C | bare-directory URL KEY');
}
