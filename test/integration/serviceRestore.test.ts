import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { connectAsync } from 'mqtt';
import { pino } from 'pino';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { parseRevisionMessage } from '../../src/protocol/directory.js';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { startService, type RunningService } from '../../src/service/root.js';
import { openDatabase } from '../../src/store/database.js';
import { readHeldVersion } from '../../src/store/heldRevision.js';
import type { SyncResult } from '../../src/sync/sync.js';
import { SyncComponent } from '../../src/sync/syncComponent.js';
import { systemClock } from '../../src/util/clock.js';
import { DOOR_UUID, runCli, runCliAsync, tempDir, writeConfig } from '../support/cli.js';
import { ManualTime } from '../support/manualTime.js';
import { Mosquitto } from '../support/mosquitto.js';
import { freePort } from '../support/net.js';
import { Daemon } from '../support/daemon.js';
import { sleep, waitUntil } from '../support/wait.js';

// Issue 32 item 1: a service database restored from a backup must not split the doors' timeline. The reference
// service runs in this process on real files and a real port; the doors are the real CLI (door-agent sync, check)
// and the daemon's sync component with its worker thread. SQLite only: what is restored is the service.db file.
const tmp = tempDir('door-agent-restore-');
// Each test spawns the CLI a dozen times: generous on a loaded machine.
vi.setConfig({ testTimeout: 180_000 });
afterAll(tmp.cleanup);

/** sqlite3's own online backup, as docs/reference-service.md tells operators to make one. */
function sqliteBackup(dbFile: string, copy: string): void {
  const r = spawnSync('sqlite3', [dbFile, `.backup ${copy}`], { encoding: 'utf8' });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') {
    throw new Error('the sqlite3 command-line shell is required for this test: apt-get install sqlite3 (Debian package sqlite3)');
  }
  if (r.status !== 0) throw new Error(`sqlite3 .backup failed: ${r.stderr}`);
}

interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

/** One reference service on a fixed port and data directory, stopped and started again as an operator would. */
class Site {
  running: RunningService | null = null;
  readonly logs: LogLine[] = [];
  key = '';
  port = 0;
  readonly dataDir: string;

  constructor(
    readonly dir: string,
    private readonly mqtt?: { url: string; prefix: string },
  ) {
    this.dataDir = join(dir, 'data');
    mkdirSync(dir, { recursive: true });
  }

  get dbFile(): string {
    return join(this.dataDir, 'service.db');
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    if (this.port === 0) this.port = await freePort();
    const logger = pino({ level: 'info' }, { write: (line: string) => void this.logs.push(JSON.parse(line) as LogLine) });
    const mqtt = this.mqtt
      ? {
          url: this.mqtt.url,
          topicPrefix: this.mqtt.prefix,
          commandMaxAgeSeconds: 30,
          maxGuestLinks: 500,
          guestLinkMaxAgeSeconds: 7 * 86_400,
          keepaliveSeconds: 5,
          protocolVersion: 5 as const,
          homeAssistant: { discovery: false, prefix: 'ha' },
        }
      : undefined;
    this.running = await startService(
      {
        server: {
          listen: `127.0.0.1:${this.port}`,
          dataDir: this.dataDir,
          lockReplyTimeoutSeconds: 5,
          resources: [{ resourceId: 12, uuid: DOOR_UUID, type: 'DOOR', name: 'Front door' }],
        },
        mqtt: mqtt as never,
      },
      { clock: systemClock, logger, env: {} },
    );
    if (this.key === '') this.key = await new ApiKeys(this.running.db).create('ADMIN', 0, Date.now());
  }

  async stop(): Promise<void> {
    await this.running?.stop();
    this.running = null;
  }

  async call(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
    const request = () =>
      fetch(`${this.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${this.key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    // A kept-alive connection to the service stopped for the restore is closed: the first request after it retries.
    const res = await request().catch(request);
    const json = (await res.json()) as Record<string, unknown>;
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  }

  async revision(): Promise<number> {
    return (await this.call('GET', '/directory')).revision as number;
  }

  /** One change, waited for until it has its own revision (each change here is one revision, as in the issue). */
  async change(method: string, path: string, body: unknown): Promise<Record<string, unknown>> {
    const before = await this.revision();
    const answer = await this.call(method, path, body);
    const started = Date.now();
    while ((await this.revision()) !== before + 1) {
      if (Date.now() - started > 10_000) throw new Error(`${method} ${path} did not advance the revision from ${before}`);
      await sleep(20);
    }
    return answer;
  }

  staffGroup = 0;

  async invite(email: string, card: string): Promise<number> {
    const r = await this.change('POST', '/invites', {
      emails: [email],
      no_email: true,
      groups: [{ id: this.staffGroup, name: 'Staff' }],
      smartcards: [[{ number: cardNumber(card) }]],
    });
    return (r.add_ids as number[])[0]!;
  }

  async seedStaff(): Promise<void> {
    this.staffGroup = (await this.call('POST', '/groups', { type: 'users', name: 'Staff', add_ids: [] })).group_id as number; // no user changes: no revision
  }

  /** Stops the service, puts `copy` in place of service.db (its WAL and shared-memory files removed first), starts it. */
  async restore(copy: string): Promise<void> {
    await this.stop();
    for (const suffix of ['-wal', '-shm']) rmSync(`${this.dbFile}${suffix}`, { force: true });
    cpSync(copy, this.dbFile);
    await this.start();
  }
}

let agents = 0;

/** A door agent whose service section points at `site` (a REGULAR read is all a door needs; the ADMIN key is at hand). */
function door(site: Site, extra = '', serviceExtra = ''): { dir: string; config: string; cache: string; dataDir: string } {
  const dir = join(tmp.path, `door${agents++}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'api-key'), `${site.key}\n`);
  const config = writeConfig(dir, {
    id: `door${agents}`,
    access: '{ groups: [Staff] }',
    extra: `service: { baseUrl: "${site.url}", apiKeyFile: ${dir}/api-key, timeoutSeconds: 20${serviceExtra} }${extra}`,
  });
  return { dir, config, dataDir: join(dir, 'data'), cache: join(dir, 'data', 'cache.db') };
}

async function sync(config: string, ...flags: string[]): Promise<string> {
  const r = await runCliAsync(['sync', '--config', config, ...flags]);
  if (r.status !== 0) throw new Error(`door-agent sync failed: ${r.stderr}`);
  return r.stdout;
}

/** A card number as a reader reads it (7 digits, as a 26-bit card's), from the short name the tests give it. */
function cardNumber(name: string): string {
  return `42${name.padStart(5, '0')}`;
}

/** The door's decision for a card: granted, or the reason it is refused. */
function decide(config: string, card: string): string {
  const r = runCli(['check', cardNumber(card), '--config', config]);
  const decision = JSON.parse(r.stdout) as { granted: boolean; reason: string | null };
  return decision.granted ? 'granted' : decision.reason!;
}

describe('a service database restored from a backup (the issue, end to end)', () => {
  const broker = new Mosquitto(join(tmp.path, 'broker'));
  const site = new Site(join(tmp.path, 'site'), {
    get url() {
      return broker.url;
    },
    prefix: 'rs',
  });
  afterAll(async () => {
    await site.stop();
    await broker.stop();
  });

  it('a door that synced the discarded history is answered in full: the suspended user is refused, the discarded one unknown', async () => {
    await broker.start();
    await site.start();
    await site.seedStaff();
    const ann = await site.invite('ann@example.org', '1001');
    await site.invite('ben@example.org', '1002');
    const cid = await site.invite('cid@example.org', '1003');
    await site.invite('dee@example.org', '1004');
    await site.invite('eli@example.org', '1005');
    await site.invite('flo@example.org', '1006');
    const cli = door(site);
    await sync(cli.config);

    // The backup, the way the docs say, while the service runs.
    const copy = join(site.dir, 'copy.db');
    sqliteBackup(site.dbFile, copy);
    const atBackup = await site.revision();
    // Three more changes, each its own revision: a user who will exist only in the discarded history, a second
    // one, and a suspension the restore undoes.
    await site.invite('dan@example.org', '2001');
    await site.invite('fay@example.org', '2002');
    await site.change('PUT', '/togglesuspension', { email_id: cid });
    const discarded = await site.call('GET', '/directory');
    expect(discarded.revision).toBe(atBackup + 3);

    // Two doors sync the discarded history: one by the CLI, one as the daemon does (its sync component).
    await sync(cli.config);
    expect([decide(cli.config, '2001'), decide(cli.config, '1003')]).toEqual(['granted', 'user_suspended']);
    const daemon = door(site);
    await sync(daemon.config);

    await site.restore(copy);
    const warned = site.logs.find((l) => l.level === 40 && /restored or replaced/.test(l.msg));
    expect(warned, 'the restore is logged at warn with both revisions').toMatchObject({ markRevision: atBackup + 3, databaseRevision: atBackup });

    // After the restore: a user suspended, four more added, each its own revision: the numbers pass the doors' again.
    await site.change('PUT', '/togglesuspension', { email_id: ann });
    for (const [i, name] of ['gus', 'hal', 'ida', 'jo'].entries()) await site.invite(`${name}@example.org`, String(3001 + i));
    expect(await site.revision()).toBe(atBackup + 5);

    // Until the restore is accepted at the service, the door keeps what it holds beyond it: the suspension the
    // restore undid stays, Ann's applies at once, the users only in the discarded history wait.
    const refused = await runCliAsync(['sync', '--config', cli.config]);
    expect(refused.stderr).toContain('the restore awaits acceptance at the service');
    expect([decide(cli.config, '1003'), decide(cli.config, '1001'), decide(cli.config, '2001')]).toEqual(['user_suspended', 'user_suspended', 'granted']);
    expect(await site.call('POST', '/directory/restore/accept')).toEqual({ accepted: true, revision: atBackup + 6 });
    const after = await site.call('GET', '/directory');
    expect(after.history).not.toBe(discarded.history);

    const out = await sync(cli.config);
    // The restored database gives Dan's and Fay's email_ids to Gus and Hal: their cards go, theirs come.
    expect(out).toMatch(/credentials\s+4 added, 1 changed, 2 removed/);
    expect(decide(cli.config, '1001')).toBe('user_suspended'); // suspended in the new history
    expect(decide(cli.config, '2001')).toBe('unknown_credential'); // only in the discarded history
    expect(decide(cli.config, '2002')).toBe('unknown_credential');
    expect(decide(cli.config, '1003')).toBe('granted'); // the restore undid this suspension
    for (const card of ['3001', '3002', '3003', '3004', '1002']) expect(decide(cli.config, card), card).toBe('granted');
    const heldNow = readHeld(cli.cache);
    expect(heldNow).toMatchObject({ revision: atBackup + 6, history: after.history, tag: after.tag });

    // The retained push names the new history; the daemon's sync component judges it and replaces its cache.
    const client = await connectAsync(broker.url, { clientId: `restore-test-${process.pid}` });
    const pushed = await new Promise<Buffer>((resolve) => {
      client.on('message', (_t, payload) => resolve(payload));
      void client.subscribeAsync('rs/directory/revision');
    });
    await client.endAsync();
    expect(parseRevisionMessage(pushed)).toMatchObject({ revision: atBackup + 6, history: after.history, tag: after.tag });
    const lines: LogLine[] = [];
    const results: SyncResult[] = [];
    const cache = openDatabase(daemon.cache);
    const time = new ManualTime();
    const component = new SyncComponent({
      options: {
        baseUrl: site.url,
        apiKeyFile: join(daemon.dir, 'api-key'),
        apiKeyIn: 'header',
        syncIntervalSeconds: 3600,
        startDelaySeconds: 0,
        concurrency: 4,
        maxRemovalRatio: 0.5,
        timeoutSeconds: 20,
        warnCacheAgeSeconds: 3600,
      },
      dataDir: daemon.dataDir,
      env: {},
      timers: time,
      logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) }),
      heldVersion: () => readHeldVersion(cache),
      onSynced: (r) => results.push(r),
    });
    component.start();
    try {
      component.onRevision(pushed);
      time.advance(0);
      await waitUntil(() => results.length > 0, 30_000, 'the pushed sync');
    } finally {
      await component.stop();
      cache.close();
    }
    expect(lines.find((l) => /changed history/.test(l.msg))?.msg).toMatch(/full sync/);
    expect(results[0]).toMatchObject({ mode: 'directory_full', revision: atBackup + 6 });
    expect([decide(daemon.config, '1001'), decide(daemon.config, '2001'), decide(daemon.config, '3004')]).toEqual([
      'user_suspended',
      'unknown_credential',
      'granted',
    ]);
  });
});

function readHeld(cacheFile: string) {
  const db = openDatabase(cacheFile);
  try {
    return readHeldVersion(db);
  } finally {
    db.close();
  }
}

describe('the mass-removal guard after a restore', () => {
  const site = new Site(join(tmp.path, 'guard'));
  afterAll(() => site.stop());

  it('refuses a restore that removes most credentials, says the history changed and how to accept it', async () => {
    await site.start();
    await site.seedStaff();
    await site.invite('one@example.org', '100');
    const copy = join(site.dir, 'copy.db');
    sqliteBackup(site.dbFile, copy);
    for (let i = 1; i <= 4; i++) await site.invite(`n${i}@example.org`, String(100 + i));
    const a = door(site);
    await sync(a.config);
    await site.restore(copy);
    // Accepted at the service: this door's guard still judges what the restore removes.
    await site.call('POST', '/directory/restore/accept');

    const r = await runCliAsync(['sync', '--config', a.config]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("the service's directory history changed");
    expect(r.stderr).toContain('would remove 4 of 5 credentials');
    expect(r.stderr).toContain('door-agent sync --allow-mass-removal');
    expect(decide(a.config, '104')).toBe('granted'); // the cache is unchanged
    const status = runCli(['status', '--config', a.config]).stdout;
    expect(status).toMatch(/last error: refused: the service's directory history changed .*--allow-mass-removal/);

    expect(await sync(a.config, '--allow-mass-removal')).toMatch(/credentials\s+0 added, 0 changed, 4 removed/);
    expect([decide(a.config, '100'), decide(a.config, '104')]).toEqual(['granted', 'unknown_credential']);
  });
});

/** The audit events of one type in a door's state.db (the daemon's log), oldest first. */
function auditEvents(dataDir: string, type: string): Array<Record<string, unknown>> {
  const db = new Database(join(dataDir, 'state.db'), { readonly: true });
  try {
    return (db.prepare('SELECT payload FROM events WHERE type = ? ORDER BY seq').all(type) as Array<{ payload: string }>).map(
      (r) => JSON.parse(r.payload) as Record<string, unknown>,
    );
  } finally {
    db.close();
  }
}

describe('a restore refused by the mass-removal guard: its restrictive part applies at once (issue 51 item 9)', () => {
  const site = new Site(join(tmp.path, 'restrict'));
  afterAll(() => site.stop());

  it('a user suspended after the restore is refused at once, a removed card too; the vanished users wait for --allow-mass-removal', async () => {
    await site.start();
    await site.seedStaff();
    const ann = await site.invite('ann@example.org', '100');
    const ben = await site.invite('ben@example.org', '101');
    const cid = await site.invite('cid@example.org', '102');
    const dee = await site.invite('dee@example.org', '103');
    const eve = await site.invite('eve@example.org', '104');
    const copy = join(site.dir, 'copy.db');
    sqliteBackup(site.dbFile, copy);
    // Six users the restore will take away: 6 of the door's 11 credentials, past maxRemovalRatio 0.5.
    for (let i = 0; i < 6; i++) await site.invite(`n${i}@example.org`, String(110 + i));
    const cli = door(site);
    const daemon = door(site, '', ', startDelaySeconds: 0, syncIntervalSeconds: 3600');
    await sync(cli.config);
    await sync(daemon.config);

    // The operator restores the backup (stop, copy the file back, start) and accepts it; then the site goes on.
    await site.restore(copy);
    await site.call('POST', '/directory/restore/accept');
    await site.change('PUT', '/togglesuspension', { email_id: ann }); // suspended
    await site.change('PUT', '/modifysmartcards', { email_id: ben, smartcards: [] }); // card taken away
    await site.change('PUT', '/groups', { type: 'users', group_id: site.staffGroup, del_ids: [dee] }); // loses the door's group
    await site.change('PUT', '/modifysmartcards', { email_id: eve, smartcards: [{ number: cardNumber('104'), valid_until: '2025-01-01 00:00:00' }] }); // expired
    await site.change('PUT', '/modifysmartcards', { email_id: cid, smartcards: [{ number: cardNumber('102') }, { number: cardNumber('120') }] }); // a card more: waits
    await site.invite('fay@example.org', '130'); // new, and given the email_id n0 had in the discarded history: waits

    const refused = await runCliAsync(['sync', '--config', cli.config]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain("the service's directory history changed");
    expect(refused.stderr).toContain('would remove 7 of 11 credentials');
    expect(refused.stderr).toMatch(
      /restrictive part was applied at once: 1 user suspended, 1 user with less access, 1 credential removed, 1 credential shortened/,
    );
    expect(refused.stderr).toContain('door-agent sync --allow-mass-removal');
    expect(refused.stderr).not.toContain('The cache is unchanged');
    expect(refused.stderr + refused.stdout).not.toContain(cardNumber('101'));
    // At the door, now: the restrictions hold; everything else of the answer waits.
    expect(decide(cli.config, '100')).toBe('user_suspended');
    expect(decide(cli.config, '101')).toBe('unknown_credential');
    expect(decide(cli.config, '103')).toBe('not_authorized');
    expect(decide(cli.config, '104')).toBe('credential_expired');
    expect(decide(cli.config, '102')).toBe('granted');
    expect(decide(cli.config, '120')).toBe('unknown_credential'); // a grant: waits
    expect(decide(cli.config, '130')).toBe('unknown_credential'); // a new user: waits
    for (let i = 0; i < 6; i++) expect(decide(cli.config, String(110 + i)), `n${i}`).toBe('granted'); // the mass removal waits
    const status = runCli(['status', '--config', cli.config]).stdout;
    expect(status).toMatch(
      /held back: .*restrictive part applied at once \(1 user suspended, 1 user with less access, 1 credential removed, 1 credential shortened\)/,
    );
    expect(status).toMatch(/waiting for door-agent sync --allow-mass-removal: the removal of 7 of 11 credentials/);
    const json = JSON.parse(runCli(['status', '--json', '--config', cli.config]).stdout) as { sync: { heldBack: unknown } };
    expect(json.sync.heldBack).toMatchObject({
      restricted: { suspended: 1, narrowed: 1, credentialsRemoved: 1, credentialsShortened: 1, total: 4 },
      waiting: { credentialsRemoved: 7, credentialsBefore: 11 },
    });

    // The daemon's own sync is refused the same way, applies the same restrictions and records it once.
    const agent = new Daemon(daemon.config);
    try {
      const line = await agent.waitForLog((l) => /^sync refused/.test(l.msg), 60_000);
      expect(line).toMatchObject({ level: 50, restrictions: 4 });
      await waitUntil(() => auditEvents(daemon.dataDir, 'sync_refused').length > 0, 10_000, 'the sync_refused event');
      expect(auditEvents(daemon.dataDir, 'sync_refused')).toEqual([
        {
          reason: 'history_changed',
          removed: 7,
          of: 11,
          restrictions: 4,
          suspended: 1,
          narrowed: 1,
          credentials_removed: 1,
          credentials_shortened: 1,
          levels_narrowed: 0,
          removals_waiting: 0,
        },
      ]);
      expect(agent.rawOutput.join('\n')).not.toContain(cardNumber('101'));
      expect([decide(daemon.config, '100'), decide(daemon.config, '101'), decide(daemon.config, '110')]).toEqual([
        'user_suspended',
        'unknown_credential',
        'granted',
      ]);
    } finally {
      await agent.stop();
    }

    // The operator accepts the restore: the rest applies.
    expect(await sync(cli.config, '--allow-mass-removal')).toMatch(/credentials\s+2 added, \d+ changed, 6 removed/);
    expect(decide(cli.config, '110')).toBe('unknown_credential');
    expect(decide(cli.config, '120')).toBe('granted');
    expect(decide(cli.config, '130')).toBe('granted');
    expect(decide(cli.config, '100')).toBe('user_suspended');
    expect(runCli(['status', '--config', cli.config]).stdout).not.toMatch(/held back/);
  });
});

describe('a restore awaiting acceptance at the service: the doors keep the revocations it undid', () => {
  const site = new Site(join(tmp.path, 'awaiting'));
  afterAll(() => site.stop());

  it('holds back what it grants beyond the cache until accepted at the service (or at one door), its restrictions at once', async () => {
    await site.start();
    await site.seedStaff();
    await site.invite('ann@example.org', '1001');
    const bob = await site.invite('bob@example.org', '1002');
    const carol = await site.invite('carol@example.org', '1003');
    const dee = await site.invite('dee@example.org', '1004');
    const copy = join(site.dir, 'copy.db');
    sqliteBackup(site.dbFile, copy);
    // After the backup: Bob's card taken away, Carol suspended; both doors sync it.
    await site.change('PUT', '/modifysmartcards', { email_id: bob, smartcards: [] });
    await site.change('PUT', '/togglesuspension', { email_id: carol });
    const a = door(site);
    const b = door(site);
    await sync(a.config);
    await sync(b.config);
    expect([decide(a.config, '1002'), decide(a.config, '1003')]).toEqual(['unknown_credential', 'user_suspended']);

    // The restore brings Bob's card and Carol back; in the restored database Dee is suspended and Fay invited.
    await site.restore(copy);
    expect(site.logs.find((l) => l.level === 40 && /restored or replaced/.test(l.msg))?.msg).toContain('POST /directory/restore/accept');
    await site.change('PUT', '/togglesuspension', { email_id: dee });
    await site.invite('fay@example.org', '1005');

    const refused = await runCliAsync(['sync', '--config', a.config]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(
      /refused: the service's database was restored from a backup \(detected \d{4}-\d{2}-\d{2}T[^)]+\) and the restore awaits acceptance at the service: /,
    );
    expect(refused.stderr).toContain(
      "what it would grant beyond this door's cache waits (2 users and 2 credentials it would add or re-admit; POST /directory/restore/accept or the console); " +
        'its restrictive part applied: 1 user suspended; or accept it at this door with door-agent sync --allow-mass-removal.',
    );
    const atDoor = () => ['1001', '1002', '1003', '1004', '1005'].map((card) => decide(a.config, card));
    expect(atDoor()).toEqual(['granted', 'unknown_credential', 'user_suspended', 'user_suspended', 'unknown_credential']);
    const status = runCli(['status', '--config', a.config]).stdout;
    expect(status).toMatch(
      /held back: the service's database was restored from a backup \(detected [^)]+\) and the restore awaits acceptance at the service .*restrictive part applied at once \(1 user suspended\)/,
    );
    expect(status).toContain(
      'waiting for the restore to be accepted at the service (POST /directory/restore/accept or the console), or door-agent sync --allow-mass-removal here: ' +
        '2 users and 2 credentials it would add or re-admit beyond the cache, and the rest of the answer',
    );
    const json = JSON.parse(runCli(['status', '--json', '--config', a.config]).stdout) as { sync: { heldBack: unknown } };
    expect(json.sync.heldBack).toMatchObject({
      reason: 'history_changed',
      restore: { detectedAt: expect.any(String), beyondCache: { users: 2, credentials: 2 } },
      restricted: { suspended: 1, total: 1 },
    });
    // Each sync asks again and is refused again while the service's answer carries the restore.
    expect((await runCliAsync(['sync', '--config', a.config])).status).toBe(1);

    // Accepted at one door alone: that door takes the restored directory and follows it from then on.
    expect(await sync(b.config, '--allow-mass-removal')).toMatch(/credentials\s+2 added/);
    expect(['1002', '1003', '1004', '1005'].map((card) => decide(b.config, card))).toEqual(['granted', 'granted', 'user_suspended', 'granted']);
    await site.change('PUT', '/togglesuspension', { email_id: bob });
    await sync(b.config);
    expect(decide(b.config, '1002')).toBe('user_suspended');
    expect((await runCliAsync(['sync', '--config', a.config])).status).toBe(1);
    expect(decide(a.config, '1003')).toBe('user_suspended');

    // Accepted at the service: the next sync applies the restored directory (what was not revoked again opens again).
    expect(await site.call('POST', '/directory/restore/accept')).toMatchObject({ accepted: true });
    await sync(a.config);
    expect(atDoor()).toEqual(['granted', 'user_suspended', 'granted', 'user_suspended', 'granted']);
    expect(runCli(['status', '--config', a.config]).stdout).not.toMatch(/held back/);
  });
});

describe('a since above what the database issued', () => {
  const site = new Site(join(tmp.path, 'since'));
  afterAll(() => site.stop());

  it('is answered in full, never with an empty delta, and renews the history', async () => {
    await site.start();
    await site.seedStaff();
    await site.invite('x@example.org', '500');
    const before = await site.call('GET', '/directory');
    const since = (before.revision as number) + 3;
    const answer = await site.call('GET', `/directory?since=${since}&history=${before.history as string}`);
    expect(answer).toMatchObject({ full: true, revision: before.revision });
    expect((answer.users as unknown[]).length).toBe(1);
    expect(answer.history).not.toBe(before.history);
    expect(site.logs.some((l) => l.level === 40 && /went back/.test(l.msg))).toBe(true);
    // The ETag names the new history; If-None-Match with it gives 304, with the old one a full answer.
    const res = await fetch(`${site.url}/directory?since=${answer.revision as number}&history=${answer.history as string}&tag=${answer.tag as string}`, {
      headers: {
        authorization: `Bearer ${site.key}`,
        'if-none-match': `"dir-${answer.revision as number}-${answer.history as string}-${answer.tag as string}"`,
      },
    });
    expect(res.status).toBe(304);
    expect(res.headers.get('etag')).toBe(`"dir-${answer.revision as number}-${answer.history as string}-${answer.tag as string}"`);
    const old = await site.call('GET', `/directory?since=${answer.revision as number}&history=${before.history as string}`);
    expect(old).toMatchObject({ full: true, history: answer.history });
  });
});

describe('the whole service data directory restored (the mark file with the database)', () => {
  const site = new Site(join(tmp.path, 'wholedir'));
  afterAll(() => site.stop());

  it('the revision tag tells the numbers issued again apart: the door is answered in full', async () => {
    await site.start();
    await site.seedStaff();
    const ann = await site.invite('ann@example.org', '11');
    await site.invite('ben@example.org', '12');
    await site.invite('cid@example.org', '13');
    await site.invite('dee@example.org', '14');
    await site.stop();
    const copy = join(site.dir, 'data-copy');
    cpSync(site.dataDir, copy, { recursive: true });
    await site.start();
    await site.invite('dan@example.org', '21');
    await site.invite('eve@example.org', '22');
    await site.invite('fay@example.org', '23');
    const a = door(site);
    await sync(a.config);
    await site.stop();
    rmSync(site.dataDir, { recursive: true });
    cpSync(copy, site.dataDir, { recursive: true });
    await site.start();
    expect(site.logs.some((l) => /restored or replaced/.test(l.msg))).toBe(false); // the mark came back with it
    await site.change('PUT', '/togglesuspension', { email_id: ann });
    for (const [i, name] of ['gus', 'hal', 'ida', 'jo'].entries()) await site.invite(`${name}@example.org`, String(31 + i));
    // The door's sync is how the service learns it went back: a restore awaiting acceptance from then on.
    expect((await runCliAsync(['sync', '--config', a.config])).stderr).toContain('the restore awaits acceptance at the service');
    expect(site.logs.some((l) => l.level === 40 && /another tag/.test(l.msg))).toBe(true);
    expect([decide(a.config, '11'), decide(a.config, '21'), decide(a.config, '31')]).toEqual(['user_suspended', 'granted', 'unknown_credential']);
    await site.call('POST', '/directory/restore/accept');
    await sync(a.config);
    expect([decide(a.config, '11'), decide(a.config, '21'), decide(a.config, '23'), decide(a.config, '31'), decide(a.config, '34')]).toEqual([
      'user_suspended',
      'unknown_credential',
      'unknown_credential',
      'granted',
      'granted',
    ]);
  });
});

describe("a door's own data directory restored from an old SD-card image", () => {
  const site = new Site(join(tmp.path, 'agentimage'));
  afterAll(() => site.stop());

  it('holds an old revision of the same history: it gets the changes since then, correctly', async () => {
    await site.start();
    await site.seedStaff();
    const ann = await site.invite('ann@example.org', '61');
    const ben = await site.invite('ben@example.org', '62');
    await site.invite('cid@example.org', '63');
    const a = door(site);
    await sync(a.config);
    const image = join(a.dir, 'image');
    cpSync(a.dataDir, image, { recursive: true });
    const imageHeld = readHeld(a.cache)!;
    await site.change('PUT', '/togglesuspension', { email_id: ann });
    await site.change('DELETE', `/user?email_id=${ben}`, undefined);
    await site.invite('kim@example.org', '64');
    await sync(a.config);
    expect([decide(a.config, '61'), decide(a.config, '62'), decide(a.config, '64')]).toEqual(['user_suspended', 'unknown_credential', 'granted']);

    rmSync(a.dataDir, { recursive: true });
    cpSync(image, a.dataDir, { recursive: true });
    expect(readHeld(a.cache)).toEqual(imageHeld);
    expect([decide(a.config, '61'), decide(a.config, '62'), decide(a.config, '64')]).toEqual(['granted', 'granted', 'unknown_credential']);
    await site.invite('lou@example.org', '65');
    const out = await sync(a.config);
    expect(out).toMatch(/users\s+2 added, 1 changed, 1 removed/); // a delta since the image's revision
    expect([decide(a.config, '61'), decide(a.config, '62'), decide(a.config, '63'), decide(a.config, '64'), decide(a.config, '65')]).toEqual([
      'user_suspended',
      'unknown_credential',
      'granted',
      'granted',
      'granted',
    ]);
    expect(existsSync(a.cache)).toBe(true);
  });
});
