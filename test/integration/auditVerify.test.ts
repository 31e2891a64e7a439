import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chainHash } from '../../src/protocol/auditChain.js';
import { openStateDatabase } from '../../src/store/database.js';
import { EventLog } from '../../src/store/eventLog.js';
import { readChainMeta } from '../../src/store/eventChain.js';
import { STATE_MIGRATIONS } from '../../src/store/migrations.js';
import { AuditEventStore } from '../../src/service/audit/eventStore.js';
import { parseWireEvent } from '../../src/service/audit/wireEvent.js';
import { listeningService } from '../support/serviceApp.js';
import { DOOR_UUID, runCli, runCliAsync, tempDir, writeConfig } from '../support/cli.js';

/**
 * `door-agent audit verify` on real state.db files written by EventLog, then changed by SQL as someone with root on
 * the board would: the built CLI names the first bad record and exits 1; an intact log exits 0.
 */
const tmp = tempDir('door-agent-audit-verify-');
afterAll(tmp.cleanup);
const AT0 = Date.UTC(2026, 2, 2, 8, 0, 0);
let n = 0;

/** A board's directory with a config and a log of `count` events (the first `alarms` of them door_forced alarms). */
function board(count: number, options: { alarms?: number; extra?: string } = {}): { config: string; file: string; dir: string } {
  const dir = join(tmp.path, `b${n++}`);
  mkdirSync(dir);
  const config = writeConfig(dir, { id: 'front-agent', agent: 'maxEvents: 1000', extra: options.extra });
  const file = join(dir, 'data/state.db');
  append(file, count, options.alarms ?? 0);
  return { config, file, dir };
}

function append(file: string, count: number, alarms = 0): void {
  const db = openStateDatabase(file);
  const log = new EventLog(db, { agentId: 'front-agent', maxEvents: 1000 });
  db.transaction(() => {
    for (let i = 0; i < count; i++) {
      const alarm = i < alarms;
      log.append({
        type: alarm ? 'door_forced' : 'access_granted',
        door: DOOR_UUID,
        at: AT0 + i * 1000,
        data: alarm ? { state: 'forced' } : { kind: 'card', hint: `…${i % 100}`, email_id: i },
      });
    }
  })();
  db.close();
}

/** Runs SQL on the closed log file, as an intruder would. */
function tamper(file: string, sql: string): void {
  const db = new Database(file);
  db.exec(sql);
  db.close();
}

const verify = (config: string, ...flags: string[]) => runCli(['audit', 'verify', '--config', config, ...flags]);

describe('door-agent audit verify', () => {
  it('an intact log exits 0 with its counts', () => {
    const { config } = board(20);
    const r = verify(config, '--offline');
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('intact: 21 records checked (21 chained, 0 unchained), 0 evicted, not compared with the service (--offline)\n');
    expect(r.status).toBe(0);
    const json = JSON.parse(verify(config, '--json').stdout) as { intact: boolean; summary: Record<string, unknown> };
    expect(json).toMatchObject({ intact: true, summary: { agent: 'front-agent', records: 21, chained: 21, lastSeq: 21, compared: null } });
  });

  it('an edited record: named (seq, time, chain), exit 1', () => {
    const { config, file } = board(20);
    tamper(file, `UPDATE events SET payload = json_set(payload, '$.email_id', 999) WHERE seq = 8`);
    const r = verify(config, '--offline');
    expect(r.status).toBe(1);
    const chain = readChainId(file);
    expect(r.stdout.split('\n')[0]).toBe(
      `edited: seq 8 (2026-03-02T08:00:06.000Z), chain ${chain}: seq 8 (access_granted) does not match its hash: its content was changed`,
    );
    expect(r.stdout).toMatch(/^1 finding: 21 records checked/m);
  });

  it('a deleted record: named, exit 1', () => {
    const { config, file } = board(20);
    tamper(file, 'DELETE FROM events WHERE seq = 12');
    const r = verify(config, '--offline');
    expect(r.status).toBe(1);
    expect(r.stdout.split('\n')[0]).toMatch(/^deleted: seq 12, chain [0-9a-f-]+: record seq 12 missing, and no eviction or retention explains it/);
  });

  it('the last records deleted: named, exit 1', () => {
    const { config, file } = board(20);
    tamper(file, 'DELETE FROM events WHERE seq >= 19');
    const r = verify(config, '--offline');
    expect(r.status).toBe(1);
    expect(r.stdout.split('\n')[0]).toMatch(/^deleted: seqs 19-21, /);
  });

  it('two records reordered (their seqs swapped): the first named, exit 1', () => {
    const { config, file } = board(20);
    tamper(file, 'UPDATE events SET seq = -1 WHERE seq = 9; UPDATE events SET seq = 9 WHERE seq = 10; UPDATE events SET seq = 10 WHERE seq = -1;');
    const r = verify(config, '--offline', '--json');
    expect(r.status).toBe(1);
    const { findings } = JSON.parse(r.stdout) as { findings: Array<{ kind: string; seq: number; agent: string; message: string }> };
    expect(findings.map((f) => [f.kind, f.seq])).toEqual([
      ['reordered', 9],
      ['reordered', 10],
    ]);
    expect(findings[0]).toMatchObject({ agent: 'front-agent', message: 'the record at seq 9 was written as seq 10: records were moved' });
  });

  it('an inserted record (written by SQL, no hash): named, exit 1', () => {
    const { config, file } = board(20);
    tamper(file, `INSERT INTO events (at, door_uuid, type, payload) VALUES (${AT0 + 60_000}, '${DOOR_UUID}', 'access_granted', '{"kind":"card"}')`);
    const r = verify(config, '--offline');
    expect(r.status).toBe(1);
    expect(r.stdout.split('\n')[0]).toMatch(/^inserted: seq 22 \(2026-03-02T08:01:00.000Z\), chain [0-9a-f-]+: seq 22 has no hash inside chain/);
  });

  it("a chain restarted (its meta forgotten, a new chain begun by the next writer): the old chain's records named, exit 1", () => {
    const { config, file } = board(10);
    tamper(file, "DELETE FROM meta WHERE key = 'audit_chain'");
    append(file, 3);
    const r = verify(config, '--offline');
    expect(r.status).toBe(1);
    expect(r.stdout.split('\n')[0]).toMatch(
      /^restarted: seqs 1-11 \(2026-03-02T08:00:00.000Z\), before the chain: records seqs 1-11 carry hashes but belong to no known chain/,
    );
  });

  it('a log from before the chain verifies: its chain starts with a record saying so, the old rows counted unchained', () => {
    const dir = join(tmp.path, 'migrated');
    mkdirSync(join(dir, 'data'), { recursive: true });
    const config = writeConfig(dir, { id: 'front-agent', agent: 'maxEvents: 1000' });
    const file = join(dir, 'data/state.db');
    // The state database as the version before the chain left it, with 10 events.
    const old = new Database(file);
    for (const migration of STATE_MIGRATIONS.slice(0, -1)) old.exec(migration as string);
    old.pragma(`user_version = ${STATE_MIGRATIONS.length - 1}`);
    for (let i = 1; i <= 10; i++) old.prepare("INSERT INTO events (at, door_uuid, type, payload) VALUES (?, ?, 'door_opened', '{}')").run(AT0 + i, DOOR_UUID);
    old.close();
    append(file, 5);
    const r = verify(config, '--offline');
    expect(r.stdout).toBe('intact: 16 records checked (6 chained, 10 unchained), 0 evicted, not compared with the service (--offline)\n');
    expect(r.status).toBe(0);
    const start = runCli(['events', '--since', '10', '--config', config]).stdout.split('\n')[0]!;
    expect(JSON.parse(start)).toMatchObject({ seq: 11, type: 'audit_chain_started', reason: 'existing_log', unchained_through: 10, door: null });
  });

  it('eviction past maxEvents is not a finding; one more row deleted behind the window is', () => {
    const { config, file } = board(1500, { alarms: 3 });
    const r = verify(config, '--offline');
    // 1501 records (the chain's start too), the last 1000 kept and the 3 alarms behind the window: 498 evicted.
    expect(r.stdout).toBe('intact: 1003 records checked (1003 chained, 0 unchained), 498 evicted, not compared with the service (--offline)\n');
    expect(r.status).toBe(0);
    tamper(file, 'DELETE FROM events WHERE seq = 3');
    const after = verify(config, '--offline');
    expect(after.status).toBe(1);
    expect(after.stdout.split('\n')[0]).toMatch(/^deleted: seq \d+, chain [0-9a-f-]+: record seq \d+ missing, and no eviction or retention explains it/);
  });

  it('two writers on one log (the daemon and door-agent sync): each links to the record the other wrote last', () => {
    const { config, file } = board(1);
    const daemon = openStateDatabase(file);
    const sync = openStateDatabase(file);
    const logs = [daemon, sync].map((db) => new EventLog(db, { agentId: 'front-agent', maxEvents: 1000 }));
    for (let i = 0; i < 10; i++) logs[i % 2]!.append({ type: 'config_changed', door: null, at: AT0 + i, data: { reason: 'sync', i } });
    daemon.close();
    sync.close();
    const r = verify(config, '--offline');
    expect(r.stdout).toBe('intact: 12 records checked (12 chained, 0 unchained), 0 evicted, not compared with the service (--offline)\n');
    expect(r.status).toBe(0);
  });

  it('no log: exit 78', () => {
    const dir = join(tmp.path, 'empty');
    mkdirSync(dir);
    const r = verify(writeConfig(dir));
    expect(r.status).toBe(78);
    expect(r.stderr).toMatch(/no audit log at .*state\.db/);
  });
});

/**
 * The comparison with the service's copy, against a local HTTP server answering GET /audit/agents/{id}/hashes in
 * the documented shape (src/api/audit.ts chainHashesSchema) with the hashes the board had when it sent its events.
 */
describe('door-agent audit verify against the service copy', () => {
  let server: Server;
  let base: string;
  const held = new Map<string, Array<{ seq: number; hash: string | null }>>();
  const requests: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      requests.push(`${req.url} ${req.headers.authorization ?? ''}`);
      const url = new URL(req.url ?? '/', 'http://x');
      const match = /^\/audit\/agents\/([^/]+)\/hashes$/.exec(url.pathname);
      const chain = url.searchParams.get('chain') ?? '';
      const records = match ? held.get(`${decodeURIComponent(match[1]!)}/${chain}`) : undefined;
      if (!records) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"no such chain"}');
        return;
      }
      const after = Number(url.searchParams.get('after') ?? 0);
      const limit = Number(url.searchParams.get('limit') ?? 1000);
      const page = records.filter((r) => r.seq > after).slice(0, limit);
      const nextAfter = page.length === limit ? page[page.length - 1]!.seq : null;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ agent: 'front-agent', chain, records: page, next_after: nextAfter }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  function serviceBoard(count: number) {
    const dir = join(tmp.path, `s${n++}`);
    mkdirSync(dir);
    writeFileSync(join(dir, 'api-key'), 'door-key-0123456789abcdef\n', { mode: 0o600 });
    const extra = `service: { baseUrl: "${base}", apiKeyFile: ${dir}/api-key, timeoutSeconds: 5 }`;
    const config = writeConfig(dir, { id: 'front-agent', agent: 'maxEvents: 1000', extra });
    const file = join(dir, 'data/state.db');
    append(file, count);
    const db = new Database(file, { readonly: true });
    const chain = readChainMeta(db)!.id;
    held.set(`front-agent/${chain}`, db.prepare('SELECT seq, chain_hash AS hash FROM events ORDER BY seq').all() as Array<{ seq: number; hash: string }>);
    db.close();
    return { config, file, chain, dir };
  }

  it('a log that matches the service copy is intact, every record compared, a page at a time, with the DOOR key', async () => {
    const { config } = serviceBoard(1200);
    requests.length = 0;
    const r = await runCliAsync(['audit', 'verify', '--config', config]);
    expect(r.stdout).toBe('intact: 1000 records checked (1000 chained, 0 unchained), 201 evicted, 1000 compared with the service\n');
    expect(r.status).toBe(0);
    expect(requests).toHaveLength(2);
    expect(requests[0]).toMatch(/^\/audit\/agents\/front-agent\/hashes\?chain=[0-9a-f-]+&after=0&limit=1000 Bearer door-key-0123456789abcdef$/);
  });

  it('a log rewritten wholesale (every hash after the edit recomputed) verifies locally but differs from the service: exit 1', async () => {
    const { config, file, chain } = serviceBoard(20);
    rewriteFrom(file, chain, 6);
    expect((await runCliAsync(['audit', 'verify', '--config', config, '--offline'])).status).toBe(0);
    const r = await runCliAsync(['audit', 'verify', '--config', config]);
    expect(r.status).toBe(1);
    expect(r.stdout.split('\n')[0]).toBe(
      `differs: seqs 6-21, chain ${chain}: seqs 6-21 are not as the service received them: the log was rewritten there (their hashes recomputed), or restored from an older copy that went on from before them`,
    );
  });

  it('a log replaced by an older copy of itself: the seqs the service holds past its end differ', async () => {
    const dir = join(tmp.path, 'older');
    mkdirSync(dir);
    const { config, file } = serviceBoard(5);
    copyFileSync(file, join(dir, 'state.db'));
    append(file, 10);
    const db = new Database(file, { readonly: true });
    const chain = readChainMeta(db)!.id;
    held.set(`front-agent/${chain}`, db.prepare('SELECT seq, chain_hash AS hash FROM events ORDER BY seq').all() as Array<{ seq: number; hash: string }>);
    db.close();
    copyFileSync(join(dir, 'state.db'), file);
    const r = await runCliAsync(['audit', 'verify', '--config', config, '--json']);
    expect(r.status).toBe(1);
    const { findings, summary } = JSON.parse(r.stdout) as {
      findings: Array<{ kind: string; seq: number; toSeq: number; message: string }>;
      summary: { findings: number };
    };
    // The run of seqs past the log's end is one finding, and the summary counts findings as listed.
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({ kind: 'differs', seq: 7, toSeq: 16 });
    expect(findings[0]!.message).toMatch(/seqs 7-16 of this chain, past this log's last \(6\): the log was replaced by an older copy/);
    expect(summary.findings).toBe(1);
  });

  it('a service that cannot be reached is a warning, not a finding', async () => {
    const dir = join(tmp.path, 'away');
    mkdirSync(dir);
    writeFileSync(join(dir, 'api-key'), 'door-key-0123456789abcdef\n', { mode: 0o600 });
    const config = writeConfig(dir, {
      id: 'front-agent',
      agent: 'maxEvents: 1000',
      extra: `service: { baseUrl: "http://127.0.0.1:1", apiKeyFile: ${dir}/api-key, timeoutSeconds: 5 }`,
    });
    append(join(dir, 'data/state.db'), 5);
    const r = await runCliAsync(['audit', 'verify', '--config', config]);
    expect(r.status).toBe(0);
    expect(r.stderr).toMatch(/^warning: not compared with the service: GET \/audit\/agents\/front-agent\/hashes: cannot reach/);
    expect(r.stdout).toMatch(/^intact: 6 records checked .* not compared with the service \(see the warning\)\n$/);
  });
});

function readChainId(file: string): string {
  const db = new Database(file, { readonly: true });
  try {
    return readChainMeta(db)!.id;
  } finally {
    db.close();
  }
}

/** Edits seq `from` and recomputes every hash from there on, as someone who knows the scheme would. */
function rewriteFrom(file: string, chain: string, from: number): void {
  const db = new Database(file);
  db.prepare("UPDATE events SET payload = json_set(payload, '$.email_id', 4242) WHERE seq = ?").run(from);
  const rows = db.prepare('SELECT seq, at, door_uuid, type, payload, chain_prev FROM events WHERE seq >= ? ORDER BY seq').all(from) as Array<{
    seq: number;
    at: number;
    door_uuid: string | null;
    type: string;
    payload: string;
    chain_prev: string;
  }>;
  let prev = rows[0]!.chain_prev;
  const update = db.prepare('UPDATE events SET chain_prev = ?, chain_hash = ? WHERE seq = ?');
  for (const row of rows) {
    const hash = chainHash(prev, {
      chain,
      seq: row.seq,
      at: new Date(row.at).toISOString(),
      door: row.door_uuid,
      type: row.type,
      data: JSON.parse(row.payload),
    });
    update.run(prev, hash, row.seq);
    prev = hash;
  }
  db.close();
}

/**
 * The comparison with the real reference service (SQLite): the board's events stored as its ingest stores what the
 * outbox publishes, read back through GET /audit/agents/{id}/hashes with the board's DOOR key.
 */
describe('door-agent audit verify against the reference service', () => {
  let service: Awaited<ReturnType<typeof listeningService>>;

  beforeAll(async () => {
    mkdirSync(join(tmp.path, 'service'));
    service = await listeningService(join(tmp.path, 'service/service.db'));
  });
  afterAll(async () => {
    await service.app.close();
    await service.db.close();
  });

  it("an intact log matches the service's copy; rewritten from seq 4 with every hash recomputed, it differs there", async () => {
    const dir = join(tmp.path, 'real');
    mkdirSync(dir);
    writeFileSync(join(dir, 'api-key'), `${service.keys.DOOR}\n`, { mode: 0o600 });
    const extra = `service: { baseUrl: "http://127.0.0.1:${service.port}", apiKeyFile: ${dir}/api-key, timeoutSeconds: 10 }`;
    const config = writeConfig(dir, { id: 'real-board', agent: 'maxEvents: 1000', extra });
    const file = join(dir, 'data/state.db');
    append(file, 12);
    // What the outbox publishes, as the service's ingest stores it.
    const db = openStateDatabase(file);
    const sent = new EventLog(db, { agentId: 'real-board', maxEvents: 1000 }).since(0);
    db.close();
    const store = new AuditEventStore(service.db);
    for (const event of sent) await store.store(parseWireEvent(Buffer.from(JSON.stringify(event))), Date.now());

    const intact = await runCliAsync(['audit', 'verify', '--config', config]);
    expect(intact.stderr).toBe('');
    expect(intact.stdout).toBe('intact: 13 records checked (13 chained, 0 unchained), 0 evicted, 13 compared with the service\n');
    expect(intact.status).toBe(0);

    rewriteFrom(file, readChainId(file), 4);
    const r = await runCliAsync(['audit', 'verify', '--config', config]);
    expect(r.status).toBe(1);
    expect(r.stdout.split('\n')[0]).toMatch(/^differs: seqs 4-13, chain [0-9a-f-]+: seqs 4-13 are not as the service received them/);
    expect(r.stdout).toMatch(/^1 finding: 13 records checked .* 13 compared with the service$/m);
  });
});
