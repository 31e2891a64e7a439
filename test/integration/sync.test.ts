import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, ROOT, runCli, runCliAsync, tempDir, writeConfig } from '../support/cli.js';
import { dumpCache, installWriteCounter } from '../support/db.js';
import { Daemon } from '../support/daemon.js';
import { freePort } from '../support/net.js';
import { sleep, waitUntil } from '../support/wait.js';
import { MassRemovalError } from '../../src/store/snapshotMerge.js';
import { ServiceError } from '../../src/sync/serviceClient.js';
import { SyncAbandoned } from '../../src/sync/syncFailure.js';
import { SyncThread } from '../../src/sync/syncThread.js';
import { directoryRules } from '../../src/core/directoryFindings.js';
import { BUILTIN_FORMATS } from '../../src/core/wiegandFormats.js';

const tmp = tempDir('door-agent-sync-');
afterAll(tmp.cleanup);
let n = 0;

/** A test double of the service that answers as scripted: the faults a real service or network produce. */
class HostileService {
  requests: string[] = [];
  users: Array<Record<string, unknown>> = [];
  details = new Map<number, unknown>();
  handler: ((req: IncomingMessage, res: ServerResponse) => boolean) | null = null;
  private server: Server | null = null;
  port = 0;

  seed(count: number): void {
    this.users = Array.from({ length: count }, (_, i) => ({
      email_id: i + 1,
      ad_status: 'ACTIVE',
      groups: [['Staff']],
      user_tag: 'USER',
      email: `u${i}@example.org`,
    }));
    for (let i = 1; i <= count; i++) this.details.set(i, { policies: [], smartcards: [{ number: String(5_000_000 + i) }] });
  }

  async start(): Promise<void> {
    this.port = await freePort();
    this.server = createServer((req, res) => {
      this.requests.push(req.url ?? '');
      if (this.handler?.(req, res)) return;
      const url = new URL(req.url ?? '/', 'http://x');
      res.setHeader('content-type', 'application/json');
      if (url.pathname === '/multipleusers') return void res.end(JSON.stringify(this.users));
      if (url.pathname === '/user') return void res.end(JSON.stringify(this.details.get(Number(url.searchParams.get('email_id')))));
      res.statusCode = 404;
      res.end('{"error":"no"}');
    });
    await new Promise<void>((r) => this.server!.listen(this.port, '127.0.0.1', () => r()));
  }

  async stop(): Promise<void> {
    await new Promise((r) => this.server?.close(r));
    this.server?.closeAllConnections();
  }
}

function agentConfig(baseUrl: string, extra = '', timeoutSeconds = 1): { dir: string; config: string; cache: string } {
  const dir = join(tmp.path, `a${n++}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'api-key'), 'dak_test-key\n');
  const config = writeConfig(dir, {
    id: 'sy',
    access: '{ groups: [Staff] }',
    extra: `service: { baseUrl: "${baseUrl}", apiKeyFile: ${dir}/api-key, concurrency: 4, timeoutSeconds: ${timeoutSeconds}, startDelaySeconds: 0${extra} }`,
  });
  return { dir, config, cache: join(dir, 'data', 'cache.db') };
}

const sync = (config: string, ...flags: string[]) => runCliAsync(['sync', '--config', config, ...flags]);

describe('door-agent sync against a scripted service', () => {
  const svc = new HostileService();
  beforeAll(async () => {
    svc.seed(50);
    await svc.start();
  });
  afterAll(() => svc.stop());

  it('applies the service in one go; a second sync with no change writes nothing but its status', async () => {
    svc.handler = null;
    const a = agentConfig(`http://127.0.0.1:${svc.port}`);
    let r = await sync(a.config);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('users        50 added');
    expect(runCli(['check', '5000007', '--config', a.config]).status).toBe(0);
    const writes = installWriteCounter(a.cache);
    r = await sync(a.config);
    expect(r.stdout).toContain('(0 rows written)');
    expect(writes()).toBe(0);
    expect(svc.requests.some((u) => u.includes('api_key'))).toBe(false); // apiKeyIn: header
  });

  it.each([
    [
      'a 500 on some GET /user',
      (req: IncomingMessage, res: ServerResponse) => {
        if (!req.url?.includes('email_id=17')) return false;
        res.statusCode = 500;
        res.end('{"error":"database on fire"}');
        return true;
      },
      'GET /user: HTTP 500: database on fire',
    ],
    [
      'a body truncated mid-JSON',
      (req: IncomingMessage, res: ServerResponse) => {
        if (!req.url?.startsWith('/multipleusers')) return false;
        res.end('[{"email_id":1,"ad_status":"ACT');
        return true;
      },
      'GET /multipleusers: the body is not complete JSON',
    ],
    [
      'a smartcard that is not an integer',
      (req: IncomingMessage, res: ServerResponse) => {
        if (!req.url?.includes('email_id=3')) return false;
        res.end('{"policies":[],"smartcards":[{"number":"12ab"}]}');
        return true;
      },
      'GET /user: $.smartcards[0].number: expected a string holding an integer',
    ],
    [
      'a slow service',
      (req: IncomingMessage, res: ServerResponse) => {
        if (!req.url?.includes('email_id=5')) return false;
        setTimeout(() => res.end('{}'), 3000);
        return true;
      },
      'within 1 s (service.timeoutSeconds)',
    ],
    [
      'a refused API key',
      (_req: IncomingMessage, res: ServerResponse) => {
        res.statusCode = 401;
        res.end('{"error":"API key not valid or expired"}');
        return true;
      },
      'HTTP 401: API key not valid or expired (check service.apiKeyFile)',
    ],
  ])('%s: a clear error, exit 1, the cache unchanged', async (_name, handler, message) => {
    svc.handler = null;
    const a = agentConfig(`http://127.0.0.1:${svc.port}`);
    expect((await sync(a.config)).status).toBe(0);
    const before = dumpCache(a.cache);
    svc.handler = handler as (req: IncomingMessage, res: ServerResponse) => boolean;
    const r = await sync(a.config);
    svc.handler = null;
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('sync failed, the cache is unchanged');
    expect(r.stderr).toContain(message);
    expect(dumpCache(a.cache)).toBe(before);
    const status = runCli(['status', '--config', a.config]).stdout;
    expect(status).toMatch(/sync: last success \S+ \(\d+ min ago\); last error: /);
    expect(status).toContain(message);
  });

  it('the service down: refused connection, cache unchanged', async () => {
    const port = await freePort();
    const a = agentConfig(`http://127.0.0.1:${port}`);
    const r = await sync(a.config);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`GET /directory: cannot reach http://127.0.0.1:${port}/: connection refused`); // the extension endpoint is asked first
    const status = runCli(['status', '--config', a.config]).stdout;
    expect(status).toContain('sync: last success never');
    expect(status).toContain('WARNING: the cache is older than 3600 s');
  });

  it('an empty user list trips the mass-removal guard; --allow-mass-removal applies it', async () => {
    svc.handler = null;
    const a = agentConfig(`http://127.0.0.1:${svc.port}`);
    expect((await sync(a.config)).status).toBe(0);
    const before = dumpCache(a.cache);
    svc.handler = (req, res) => (req.url?.startsWith('/multipleusers') ? (res.end('[]'), true) : false);
    let r = await sync(a.config);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('would remove 50 of 50 credentials');
    expect(dumpCache(a.cache)).toBe(before);
    expect(runCli(['status', '--config', a.config]).stdout).toMatch(/last error: refused: this would remove 50 of 50/);
    r = await sync(a.config, '--allow-mass-removal');
    svc.handler = null;
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('50 removed');
  });

  it("every user listed without their cards (the seed's calls): the suspension applies, the cards stay, a mass removal themselves", async () => {
    svc.handler = null;
    const a = agentConfig(`http://127.0.0.1:${svc.port}`);
    const first = await sync(a.config);
    expect(first.status, first.stderr).toBe(0);
    svc.handler = (req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      res.setHeader('content-type', 'application/json');
      if (url.pathname === '/multipleusers') return (res.end(JSON.stringify(svc.users.map((u, i) => (i === 0 ? { ...u, ad_status: 'SUSPENDED' } : u)))), true);
      if (url.pathname === '/user') return (res.end(JSON.stringify({ policies: [], smartcards: [] })), true);
      return false;
    };
    const r = await sync(a.config);
    svc.handler = null;
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('would remove 50 of 50 credentials');
    expect(r.stderr).toContain(
      'Its restrictive part was applied at once: 1 user suspended; the removal and the rest of the answer wait (the 50 credentials it takes from users it still lists wait too: a mass removal themselves)',
    );
    const check = (card: string) => JSON.parse(runCli(['check', card, '--config', a.config]).stdout) as { reason: string | null };
    expect([check('5000001').reason, check('5000002').reason]).toEqual(['user_suspended', null]);
  });

  it('guest-link cards from MQTT do not dilute the guard: a sync that would empty every user is still refused', async () => {
    const small = new HostileService();
    small.seed(4);
    await small.start();
    try {
      const a = agentConfig(`http://127.0.0.1:${small.port}`);
      expect((await sync(a.config)).status).toBe(0);
      const { openDatabase } = await import('../../src/store/database.js');
      const { GuestLinkStore } = await import('../../src/store/guestLinkStore.js');
      const db = openDatabase(a.cache);
      const links = new GuestLinkStore(db, new Set([12]));
      for (let i = 0; i < 6; i++) {
        links.store({
          magic_link_id: `g${i}`,
          magic_token: `guest-token-dilute-${i}0000`,
          name: 'g',
          email_list: [],
          resource_id_list: [12],
          smartcards: [{ number: String(880000 + i) }],
        });
      }
      db.close();
      small.users = [];
      const r = await sync(a.config);
      expect(r.status).toBe(1);
      expect(r.stderr).toContain('would remove 4 of 4 credentials');
    } finally {
      await small.stop();
    }
  });

  it('SIGKILLed at any moment of a sync, the cache passes integrity_check and holds the old or the new data', async () => {
    const big = new HostileService();
    big.seed(3000);
    await big.start();
    try {
      const a = agentConfig(`http://127.0.0.1:${big.port}`);
      expect((await sync(a.config)).status).toBe(0);
      for (let round = 0; round < 4; round++) {
        big.users = big.users.map((u) => ({ ...u, groups: round % 2 === 0 ? [['Visitors']] : [['Staff']] }));
        const child = spawn(process.execPath, [CLI, 'sync', '--config', a.config], { cwd: ROOT, stdio: 'ignore' });
        await sleep(150 + round * 150);
        child.kill('SIGKILL');
        await new Promise((r) => child.once('exit', r));
        const db = new Database(a.cache);
        expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
        const groups = db.prepare('SELECT DISTINCT groups FROM users').pluck().all();
        expect(groups.length).toBe(1); // all old or all new, never a mix
        expect(db.prepare('SELECT count(*) FROM users').pluck().get()).toBe(3000);
        db.close();
      }
    } finally {
      await big.stop();
    }
  });
});

describe("the seed's list without user_tag (staged by store/stageScope.ts UntaggedUsers)", () => {
  it('the GUEST list tags the guests among the untagged users: their cards do not open the door', async () => {
    const svc = new HostileService();
    svc.seed(3);
    svc.users = svc.users.map(({ user_tag: _dropped, ...u }) => u);
    svc.handler = (req, res) => (req.url === '/multipleusers?user_tag=GUEST' ? (res.end(JSON.stringify([svc.users[1]])), true) : false);
    await svc.start();
    try {
      const a = agentConfig(`http://127.0.0.1:${svc.port}`);
      const r = await sync(a.config);
      expect(r.status, r.stderr).toBe(0);
      expect(svc.requests).toContain('/multipleusers?user_tag=GUEST');
      const check = (card: string) => JSON.parse(runCli(['check', card, '--config', a.config]).stdout) as { granted: boolean };
      expect([check('5000001').granted, check('5000002').granted, check('5000003').granted]).toEqual([true, false, true]);
    } finally {
      await svc.stop();
    }
  });
});

describe('the daemon syncs on its own and on request', () => {
  it('syncs at start, on P/agents/<id>/sync, and backs off on a refused key without a retry storm', async () => {
    const svc = new HostileService();
    svc.seed(5);
    await svc.start();
    const { Mosquitto } = await import('../support/mosquitto.js');
    const { Operator } = await import('../support/operator.js');
    const broker = new Mosquitto(join(tmp.path, 'sync-broker'));
    await broker.start();
    const a = agentConfig(`http://127.0.0.1:${svc.port}`, ', syncIntervalSeconds: 60');
    writeFileSync(
      a.config,
      `${a.config ? '' : ''}${(await import('node:fs')).readFileSync(a.config, 'utf8')}mqtt: { url: "${broker.url}", topicPrefix: sy }\n`,
    );
    const daemon = new Daemon(a.config);
    try {
      await daemon.waitForMessage('sync done', 10_000);
      const op = await Operator.connect(broker.url);
      await daemon.waitForMessage('connected to the broker');
      svc.details.set(2, { policies: [], smartcards: [{ number: '7777777' }] });
      const from = daemon.logs.length;
      await op.publish('sy/agents/sy/sync', 'now');
      await daemon.waitForMessage('sync done', 5000, from);
      expect(runCli(['check', '7777777', '--config', a.config]).status).toBe(0);

      svc.handler = (_req, res) => ((res.statusCode = 401), res.end('{"error":"API key not valid or expired"}'), true);
      const before = svc.requests.length;
      await op.publish('sy/agents/sy/sync', 'now');
      await daemon.waitForLog((l) => String(l.msg).includes('the API key was refused'), 5000);
      await sleep(3000);
      expect(svc.requests.length - before).toBe(1); // one refused request, then it waits a whole interval
      await op.end();
    } finally {
      await daemon.stop('SIGKILL');
      await broker.stop();
      await svc.stop();
    }
  });
});

// The worker runs at nice +10 (by design: the door's thread first): on a machine busy with other work its syncs take
// many times their CPU, hence the longer timeout.
describe('the sync worker thread (the daemon never runs a sync on its event loop)', { timeout: 120_000 }, () => {
  const svc = new HostileService();
  beforeAll(async () => {
    svc.seed(2000);
    await svc.start();
  });
  afterAll(() => svc.stop());

  function thread(apiKey = 'dak_test-key') {
    const { dir, cache } = agentConfig(`http://127.0.0.1:${svc.port}`);
    mkdirSync(join(dir, 'data'), { recursive: true });
    return {
      cache,
      worker: new SyncThread({ cacheFile: cache, client: { baseUrl: `http://127.0.0.1:${svc.port}`, apiKey, apiKeyIn: 'header', timeoutMs: 5000 } }),
    };
  }

  it('applies a sync in its own thread while this event loop stays free', async () => {
    svc.handler = null;
    const { cache, worker } = thread();
    let longestLag = 0;
    let last = performance.now();
    const probe = setInterval(() => {
      const now = performance.now();
      longestLag = Math.max(longestLag, now - last - 5);
      last = now;
    }, 5);
    try {
      const result = await worker.run({ concurrency: 8, maxRemovalRatio: 0.5 });
      expect(result.users).toMatchObject({ added: 2000 });
      expect(result.credentials).toMatchObject({ added: 2000 });
    } finally {
      clearInterval(probe);
      await worker.stop();
    }
    const db = new Database(cache, { readonly: true });
    expect(db.prepare('SELECT count(*) FROM credentials').pluck().get()).toBe(2000);
    db.close();
    // Here only the scripted service's HTTP answers run; the JSON, the validation and the apply ran elsewhere.
    expect(longestLag).toBeLessThan(250);
    // The worker runs at nice +10 on purpose (the next test): beside a loaded suite it waits for the CPU, so the
    // time allowed is generous; what is asserted is that this thread's event loop stayed free meanwhile.
  }, 120_000);

  it('runs at a lower CPU priority than the door (nice +10), so a busy board serves the tap first', async () => {
    const { readdirSync, readFileSync } = await import('node:fs');
    const { getPriority } = await import('node:os');
    const niceOfThreads = () =>
      readdirSync('/proc/self/task').map((tid) =>
        Number(
          readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
            .replace(/^.*\) /, '')
            .split(' ')[16],
        ),
      );
    const own = getPriority();
    expect(niceOfThreads().filter((n) => n !== own)).toEqual([]);
    const { worker } = thread();
    try {
      await worker.run({ concurrency: 8, maxRemovalRatio: 0.5 });
      expect(niceOfThreads().filter((n) => n !== own)).toEqual([Math.min(19, own + 10)]);
    } finally {
      await worker.stop();
    }
  });

  it('stopped during a sync (the agent stopping): the sync is abandoned as such, not failed, and the cache is unchanged', async () => {
    const held: ServerResponse[] = [];
    const before = svc.requests.length;
    svc.handler = (_req, res) => {
      held.push(res); // the service never answers: the sync is under way when the agent stops
      return true;
    };
    const { cache, worker } = thread();
    try {
      const run = worker.run({ concurrency: 8, maxRemovalRatio: 0.5 }).catch((err: unknown) => err);
      await waitUntil(() => svc.requests.length > before, 20_000, 'the sync to ask the service');
      await worker.stop();
      const outcome = await run;
      expect(outcome).toBeInstanceOf(SyncAbandoned);
      expect((outcome as Error).message).toBe('the agent is stopping: the sync under way was abandoned (uncommitted, it leaves the cache as it was)');
    } finally {
      svc.handler = null;
      for (const res of held) res.destroy();
    }
    const db = new Database(cache, { readonly: true });
    expect(db.prepare('SELECT count(*) FROM credentials').pluck().get()).toBe(0);
    db.close();
  });

  it("the directory's scan after a sync in the thread knows the site's readers (a printed card that reads as another holder's number is found), and counts the short PINs", async () => {
    // Alice's 123:45678 (H10301) reads as 8106606 on a reader whose numbering is data: Erin holds that number.
    svc.handler = (req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname !== '/multipleusers' && url.pathname !== '/user') return false;
      res.setHeader('content-type', 'application/json');
      if (url.pathname === '/multipleusers') {
        res.end(JSON.stringify(svc.users.slice(0, 2)));
        return true;
      }
      const id = Number(url.searchParams.get('email_id'));
      // Alice also holds a 2-digit PIN: under access.minPinLength, counted in the thread too.
      const pin = id === 1 ? [{ number: '12', label: 'PIN' }] : [];
      res.end(JSON.stringify({ policies: [], smartcards: [{ number: id === 1 ? '123:45678' : String(123 * 65536 + 45678) }, ...pin] }));
      return true;
    };
    const { worker } = thread();
    const h10301 = BUILTIN_FORMATS.filter((f) => f.name === 'H10301');
    try {
      const rules = directoryRules({ pinLabels: ['PIN'], duressPin: 'off', minCardDigits: 4 }, [
        { reader: { type: 'wiegand', numbering: 'data', formats: h10301 } },
      ]);
      const result = await worker.run({ concurrency: 8, maxRemovalRatio: null, rules: { ...rules, minPinLength: 4 } });
      expect(result.findings?.ambiguousCards).toEqual({ count: 1, emailIds: [1, 2], magicLinkIds: [], numberings: ['data'] });
      expect(result.findings?.shortPins).toEqual({ count: 1, minLength: 4 });
    } finally {
      svc.handler = null;
      await worker.stop();
    }
  });

  it('errors cross the thread as the scheduler knows them: a refused key, a mass removal', async () => {
    const { worker } = thread();
    try {
      expect((await worker.run({ concurrency: 8, maxRemovalRatio: 0.5 })).users.added).toBe(2000);
      svc.handler = (_req, res) => {
        res.statusCode = 401;
        res.end('{"error":"API key not valid or expired"}');
        return true;
      };
      const refused = await worker.run({ concurrency: 8, maxRemovalRatio: 0.5 }).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(ServiceError);
      expect((refused as ServiceError).authRefused).toBe(true);
      svc.handler = (req, res) => {
        if (!req.url?.startsWith('/multipleusers')) return false;
        res.setHeader('content-type', 'application/json');
        res.end('[]');
        return true;
      };
      const guarded = await worker.run({ concurrency: 8, maxRemovalRatio: 0.5 }).catch((err: unknown) => err);
      expect(guarded).toBeInstanceOf(MassRemovalError);
      expect(guarded).toMatchObject({ removed: 2000, current: 2000 });
    } finally {
      svc.handler = null;
      await worker.stop();
    }
  });
});

describe('incremental sync through GET /directory (the extension), and bad deltas', () => {
  const svc = new HostileService();
  beforeAll(async () => {
    svc.seed(10);
    await svc.start();
  });
  afterAll(() => svc.stop());

  const item = (id: number, status = 'ACTIVE') => ({ email_id: id, ad_status: status, groups: [['Staff']], user_tag: 'USER', email: `u${id}@example.org` });
  const detail = (id: number) => ({ policies: [], smartcards: [{ number: String(5_000_000 + id) }] });
  const directory = (body: (since: number | null) => unknown) => {
    svc.handler = (req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname !== '/directory') return false;
      const since = url.searchParams.get('since');
      const answer = body(since === null ? null : Number(since));
      res.setHeader('content-type', 'application/json');
      if (answer === 304) {
        res.statusCode = 304;
        res.end();
      } else res.end(typeof answer === 'string' ? answer : JSON.stringify(answer));
      return true;
    };
  };
  const full = {
    revision: 7,
    full: true,
    users: Array.from({ length: 10 }, (_, i) => item(i + 1)),
    details: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [String(i + 1), detail(i + 1)])),
    removed: [],
  };

  it('one request for a change, 304 for none; a truncated or inconsistent delta, or a mass removal, leaves the cache unchanged', async () => {
    const a = agentConfig(`http://127.0.0.1:${svc.port}`);
    directory(() => full);
    expect((await sync(a.config)).status).toBe(0);
    const before = dumpCache(a.cache);

    svc.requests = [];
    directory((since) => (since === 7 ? 304 : full));
    expect((await sync(a.config)).status).toBe(0);
    expect(svc.requests).toEqual(['/directory?since=7']);
    expect(dumpCache(a.cache)).toBe(before);

    const bad: Array<[string, unknown]> = [
      ['truncated', JSON.stringify({ revision: 8, full: false, users: [item(3, 'SUSPENDED')], details: { '3': detail(3) }, removed: [] }).slice(0, 60)],
      ['details for an id not listed', { revision: 8, full: false, users: [item(3, 'SUSPENDED')], details: { '3': detail(3), '99': detail(99) }, removed: [] }],
      ['a user without details', { revision: 8, full: false, users: [item(3, 'SUSPENDED')], details: {}, removed: [] }],
      ['a wrong type', { revision: '8', full: false, users: [], details: {}, removed: [] }],
      ['a delta removing most users', { revision: 8, full: false, users: [], details: {}, removed: [1, 2, 3, 4, 5, 6, 7, 8] }],
    ];
    for (const [what, answer] of bad) {
      directory(() => answer);
      const r = await sync(a.config);
      expect(r.status, what).toBe(1);
      expect(dumpCache(a.cache), what).toBe(before);
    }

    svc.requests = [];
    directory((since) => (since === 7 ? { revision: 8, full: false, users: [item(3, 'SUSPENDED')], details: { '3': detail(3) }, removed: [10] } : full));
    expect((await sync(a.config)).status).toBe(0);
    expect(svc.requests).toEqual(['/directory?since=7']);
    const check = (card: string) => JSON.parse(runCli(['check', card, '--config', a.config]).stdout) as { reason: string | null };
    expect(check('5000003').reason).toBe('user_suspended');
    expect(check('5000010').reason).toBe('unknown_credential');
    expect(check('5000004').reason).toBe(null);
    svc.handler = null;
  });

  it('a delta refused by the mass-removal guard: its suspension and the card it takes away apply at once, the removal waits', async () => {
    const a = agentConfig(`http://127.0.0.1:${svc.port}`);
    directory(() => full);
    expect((await sync(a.config)).status).toBe(0);
    // User 3 suspended, user 4's card taken away, six users removed: 7 of 10 credentials.
    const delta = {
      revision: 8,
      full: false,
      users: [item(3, 'SUSPENDED'), item(4)],
      details: { '3': detail(3), '4': { policies: [], smartcards: [] } },
      removed: [1, 2, 5, 6, 7, 8],
    };
    directory((since) => (since === 7 ? delta : full));
    svc.requests = [];
    const r = await sync(a.config);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('refused: this would remove 7 of 10 credentials');
    expect(r.stderr).toContain('Its restrictive part was applied at once: 1 user suspended, 1 credential removed; the removal and the rest of the answer wait');
    expect(r.stderr).not.toContain('5000004');
    const check = (card: string) => JSON.parse(runCli(['check', card, '--config', a.config]).stdout) as { reason: string | null };
    expect([check('5000003').reason, check('5000004').reason, check('5000001').reason, check('5000008').reason]).toEqual([
      'user_suspended',
      'unknown_credential',
      null,
      null,
    ]);
    // The revision held did not move: the next sync asks for the same changes, is refused again, and changes nothing more.
    svc.requests = [];
    const again = await sync(a.config);
    expect(svc.requests).toEqual(['/directory?since=7']);
    expect(again.stderr).toContain('The cache is unchanged: nothing in the answer restricts the users it holds');
    expect((await sync(a.config, '--allow-mass-removal')).status).toBe(0);
    expect([check('5000001').reason, check('5000003').reason, check('5000009').reason]).toEqual(['unknown_credential', 'user_suspended', null]);
    svc.handler = null;
  });
});

describe('access levels from the service, with the directory', () => {
  const svc = new HostileService();
  beforeAll(async () => {
    await svc.start();
  });
  afterAll(() => svc.stop());

  // User 1 holds the policy "Front desk" (a level at the service), user 2 is in no group the agent knows.
  const users = [
    { email_id: 1, ad_status: 'ACTIVE', groups: [], user_tag: 'USER', name: 'Uma' },
    { email_id: 2, ad_status: 'ACTIVE', groups: [['Ground floor staff']], user_tag: 'USER', name: 'Vic' },
  ];
  const details = { '1': { policies: [['Front desk']], smartcards: [{ number: '6000001' }] }, '2': { policies: [], smartcards: [{ number: '6000002' }] } };
  const frontDesk = {
    name: 'Front desk',
    resource_ids: [12],
    resource_group: null,
    schedule: { mon: ['07:00-19:00'], tue: ['07:00-19:00'] },
    start_time: null,
    end_time: null,
  };
  const answer = (revision: number, extra: Record<string, unknown>) => ({ revision, full: true, users, details, removed: [], ...extra });
  const serve = (body: () => unknown) => {
    svc.handler = (req, res) => {
      if (!req.url?.startsWith('/directory')) return false;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(body()));
      return true;
    };
  };
  const meta = (cache: string) => {
    const db = new Database(cache, { readonly: true });
    try {
      return (db.prepare("SELECT value FROM meta WHERE key = 'service_levels'").pluck().get() as string | undefined) ?? null;
    } finally {
      db.close();
    }
  };
  // Monday 2026-11-23, 10:00 and 20:00 in Berlin.
  const check = (config: string, card: string, at = '2026-11-23 10:00') =>
    JSON.parse(runCli(['check', card, '--at', at, '--config', config]).stdout) as { granted: boolean; reason: string | null; level?: string };

  it('a level is held by the users with its policy, on its doors and schedule; a config level of the same name wins; a resource group reaches config levels', async () => {
    const a = agentConfig(`http://127.0.0.1:${svc.port}`);
    // The agent's own level names the service's resource group; it also defines "Front desk" for 14:00-15:00 only.
    writeFileSync(
      a.config,
      readFileSync(a.config, 'utf8').replace(
        'access: { groups: [Staff] }',
        `access:
  groups: [Staff]
  levels: [ { name: Ground floor, groups: [Ground floor staff], resourceGroup: Ground floor } ]`,
      ),
    );
    serve(() => answer(1, { levels: [frontDesk], resource_groups: [{ name: 'Ground floor', resource_ids: [12, 40] }] }));
    expect((await sync(a.config)).status).toBe(0);
    expect(check(a.config, '6000001')).toMatchObject({ granted: true, level: 'Front desk' });
    expect(check(a.config, '6000001', '2026-11-23 20:00')).toMatchObject({ granted: false, reason: 'outside_schedule' });
    expect(check(a.config, '6000002')).toMatchObject({ granted: true, level: 'Ground floor' });

    const shadowing = readFileSync(a.config, 'utf8').replace('levels: [', 'levels: [ { name: Front desk, policies: [Front desk], doors: [12] },');
    writeFileSync(a.config, shadowing);
    expect(check(a.config, '6000001', '2026-11-23 20:00')).toMatchObject({ granted: true, level: 'Front desk' });
    const checked = runCli(['config', 'check', '--config', a.config]);
    expect(checked.stdout).toContain(
      'WARNING: the service defines a level "Front desk" too: the config\'s level of that name applies, the service\'s is ignored',
    );
  });

  it('a bad definition refuses the whole answer and leaves the cache and the levels as they were; an answer without levels clears them', async () => {
    const a = agentConfig(`http://127.0.0.1:${svc.port}`);
    serve(() => answer(1, { levels: [frontDesk], resource_groups: [] }));
    expect((await sync(a.config)).status).toBe(0);
    const before = [dumpCache(a.cache), meta(a.cache)];
    const bad: Array<[string, unknown, string]> = [
      ['an overlapping range', { ...frontDesk, schedule: { mon: ['07:00-19:00', '18:00-20:00'] } }, '$.levels[0].schedule.mon[1]'],
      ['a range past 24:00', { ...frontDesk, schedule: { mon: ['07:00-25:00'] } }, '$.levels[0].schedule.mon[0]'],
      ['an end before the start', { ...frontDesk, start_time: '2026-06-01 00:00:00', end_time: '2026-05-01 00:00:00' }, '$.levels[0].end_time'],
      ['a door id that is not a number', { ...frontDesk, resource_ids: ['12'] }, '$.levels[0].resource_ids[0]'],
    ];
    for (const [what, level, path] of bad) {
      serve(() => answer(2, { levels: [level], resource_groups: [], users: [{ ...users[0], ad_status: 'SUSPENDED' }, users[1]] }));
      const r = await sync(a.config);
      expect(r.status, what).toBe(1);
      expect(r.stderr, what).toContain(path);
      expect([dumpCache(a.cache), meta(a.cache)], what).toEqual(before);
    }
    expect(check(a.config, '6000001')).toMatchObject({ granted: true, level: 'Front desk' });

    // A service without levels (an older one): the config's levels alone.
    serve(() => answer(3, {}));
    expect((await sync(a.config)).status).toBe(0);
    expect(meta(a.cache)).toBe('null');
    expect(check(a.config, '6000001')).toMatchObject({ granted: false, reason: 'not_authorized' });
    svc.handler = null;
  });

  it("an answer refused by the mass-removal guard narrows the service's levels at once; the levels it adds or widens wait", async () => {
    const a = agentConfig(`http://127.0.0.1:${svc.port}`);
    // Four more users (Staff) beside Uma and Vic; the Front desk level on Monday and Tuesday, 07:00-19:00.
    const more = [3, 4, 5, 6].map((id) => ({ email_id: id, ad_status: 'ACTIVE', groups: [['Staff']], user_tag: 'USER', name: `U${id}` }));
    const moreDetails = Object.fromEntries(more.map((u) => [String(u.email_id), { policies: [], smartcards: [{ number: String(6_000_000 + u.email_id) }] }]));
    serve(() => answer(1, { users: [...users, ...more], details: { ...details, ...moreDetails }, levels: [frontDesk], resource_groups: [] }));
    expect((await sync(a.config)).status).toBe(0);
    expect(check(a.config, '6000001', '2026-11-24 16:00')).toMatchObject({ granted: true, level: 'Front desk' });
    // The answer drops the four (a mass removal), keeps Front desk on Mondays and Tuesdays until 12:00 only, opens it
    // on Wednesdays too and adds a level: only the narrowing applies now.
    const narrower = { ...frontDesk, schedule: { mon: ['07:00-12:00'], tue: ['07:00-12:00'], wed: ['07:00-19:00'] } };
    const added = { ...frontDesk, name: 'Night desk', schedule: null };
    serve(() =>
      answer(2, {
        levels: [narrower, added],
        resource_groups: [],
        details: { ...details, '1': { policies: [['Front desk'], ['Night desk']], smartcards: [{ number: '6000001' }] } },
      }),
    );
    const r = await sync(a.config);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('restrictive part was applied at once: 1 access level or resource group narrowed');
    expect(check(a.config, '6000001', '2026-11-24 11:00')).toMatchObject({ granted: true, level: 'Front desk' });
    expect(check(a.config, '6000001', '2026-11-24 16:00')).toMatchObject({ granted: false, reason: 'outside_schedule' });
    expect(check(a.config, '6000001', '2026-11-25 11:00')).toMatchObject({ granted: false, reason: 'outside_schedule' }); // Wednesday waits
    expect(check(a.config, '6000003')).toMatchObject({ granted: true }); // the removal waits
    expect(JSON.parse(meta(a.cache)!)).toMatchObject({ levels: [{ name: 'Front desk', schedule: { mon: ['07:00-12:00'], tue: ['07:00-12:00'] } }] });
    expect((await sync(a.config, '--allow-mass-removal')).status).toBe(0);
    expect(check(a.config, '6000001', '2026-11-25 11:00')).toMatchObject({ granted: true });
    expect(check(a.config, '6000003')).toMatchObject({ granted: false, reason: 'unknown_credential' });
    svc.handler = null;
  });
});

describe('a delta from another history than the one held (a service that should have answered in full)', () => {
  it('is never applied: the agent asks for everything and replaces its cache', async () => {
    const svc = new HostileService();
    await svc.start();
    const H1 = '1'.repeat(32);
    const H2 = '2'.repeat(32);
    const item = (id: number) => ({ email_id: id, ad_status: 'ACTIVE', groups: [['Staff']], user_tag: 'USER', email: `u${id}@example.org` });
    const detail = (id: number) => ({ policies: [], smartcards: [{ number: String(5_000_000 + id) }] });
    const answer = (ids: number[], history: string, full: boolean) => ({
      revision: 9,
      history,
      tag: 'a'.repeat(16),
      full,
      users: ids.map(item),
      details: Object.fromEntries(ids.map((i) => [String(i), detail(i)])),
      removed: [],
    });
    let body: (url: URL) => unknown = () => answer([1, 2, 3, 4], H1, true);
    svc.handler = (req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname !== '/directory') return false;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(body(url)));
      return true;
    };
    try {
      const a = agentConfig(`http://127.0.0.1:${svc.port}`);
      expect((await sync(a.config)).status).toBe(0);
      // The new history's delta (a user added) would keep user 4, who is not in it; everything does not.
      body = (url) => (url.searchParams.has('since') ? answer([5], H2, false) : answer([1, 2, 3, 5], H2, true));
      svc.requests = [];
      const r = await sync(a.config);
      expect(r.status, r.stderr).toBe(0);
      expect(svc.requests).toEqual([`/directory?since=9&history=${H1}&tag=${'a'.repeat(16)}`, '/directory']);
      const check = (card: string) => JSON.parse(runCli(['check', card, '--config', a.config]).stdout) as { reason: string | null };
      expect([check('5000004').reason, check('5000005').reason]).toEqual(['unknown_credential', null]);
    } finally {
      await svc.stop();
    }
  });
});

describe('a directory larger than the agent heap (read member by member, never parsed whole)', () => {
  // 60,000 users is ~13 MB of JSON: parsed whole it needs far more than the 32 MB of heap the sync gets here
  // (the agent runs with 64 MB; 250,000 users are ~60 MB of JSON, see bench tap-during-sync).
  const USERS = 60_000;
  const LISTED = 8000;
  const HEAP = { NODE_OPTIONS: '--max-old-space-size=32' };
  const svc = new HostileService();
  let directoryText = '';
  let listText = '';
  beforeAll(async () => {
    const users = Array.from({ length: USERS }, (_, i) => ({
      email_id: i + 1,
      ad_status: 'ACTIVE',
      groups: [['Staff']],
      user_tag: 'USER',
      email: `user${i + 1}@example.org`,
      name: `User number ${i + 1}`,
    }));
    const details = Object.fromEntries(
      users.map((u) => [String(u.email_id), { policies: [], smartcards: [{ number: String(5_000_000 + u.email_id), label: 'badge' }] }]),
    );
    directoryText = JSON.stringify({ revision: 3, full: true, users, details, removed: [] });
    const groups = [['Staff'], ...Array.from({ length: 40 }, (_, g) => [`Department group number ${g}`])];
    listText = JSON.stringify(users.slice(0, LISTED).map((u) => ({ ...u, groups })));
    await svc.start();
  });
  afterAll(() => svc.stop());

  it('GET /directory: a full answer of 60,000 users is applied by a sync with a 32 MB heap, and leaves no file behind', async () => {
    svc.handler = (req, res) => (req.url?.startsWith('/directory') ? (res.end(directoryText), true) : false);
    const a = agentConfig(`http://127.0.0.1:${svc.port}`, '', 30);
    const r = await runCliAsync(['sync', '--config', a.config], { env: HEAP });
    expect(r.status, r.stderr.slice(0, 2000)).toBe(0);
    expect(r.stdout).toContain(`users        ${USERS} added`);
    expect(runCli(['check', String(5_000_000 + USERS), '--config', a.config]).status).toBe(0);
    const { readdirSync } = await import('node:fs');
    expect(readdirSync(join(a.dir, 'data')).filter((f) => f.includes('sync-answer'))).toEqual([]);
  });

  it("the seed's GET /multipleusers: 11 MB for 8,000 users in 41 groups each, with a 32 MB heap (details staged as they arrive)", async () => {
    svc.handler = (req, res) => {
      if (req.url?.startsWith('/multipleusers')) return (void res.end(listText), true);
      if (req.url?.startsWith('/user')) {
        const id = Number(new URL(req.url, 'http://x').searchParams.get('email_id'));
        return (void res.end(`{"policies":[],"smartcards":[{"number":"${5_000_000 + id}"}]}`), true);
      }
      return false;
    };
    const a = agentConfig(`http://127.0.0.1:${svc.port}`, '', 30);
    const r = await runCliAsync(['sync', '--config', a.config], { env: HEAP });
    svc.handler = null;
    expect(r.status, r.stderr.slice(0, 2000)).toBe(0);
    expect(r.stdout).toContain(`credentials  ${LISTED} added`);
    expect(runCli(['check', String(5_000_000 + LISTED), '--config', a.config]).status).toBe(0);
    // 8,000 GET /user from a sync worker at nice +10: beside a busy test suite it gets what CPU is left.
  }, 120_000);
});

describe('an import between syncs', () => {
  it('forgets the revision held: the next sync is a full one, so a user the import brought back is removed again', async () => {
    const svc = new HostileService();
    await svc.start();
    const item = (id: number) => ({ email_id: id, ad_status: 'ACTIVE', groups: [['Staff']], user_tag: 'USER', email: `u${id}@example.org` });
    const detail = (id: number) => ({ policies: [], smartcards: [{ number: String(5_000_000 + id) }] });
    const current = { revision: 100, full: true, users: [item(1), item(2)], details: { '1': detail(1), '2': detail(2) }, removed: [] };
    svc.handler = (req, res) => {
      if (!req.url?.startsWith('/directory')) return false;
      if (req.url.includes('since=100')) return (void ((res.statusCode = 304), res.end()), true);
      return (void res.end(JSON.stringify(current)), true);
    };
    try {
      const a = agentConfig(`http://127.0.0.1:${svc.port}`, ', maxRemovalRatio: 1');
      expect((await sync(a.config)).status).toBe(0);
      // An older snapshot, still listing user 3 (since fired at the service).
      const { writeSnapshot } = await import('../support/snapshot.js');
      const old = writeSnapshot(a.dir, 'old.json', { users: [item(1), item(2), item(3)], details: { '1': detail(1), '2': detail(2), '3': detail(3) } });
      expect(runCli(['import', old, '--config', a.config]).status).toBe(0);
      expect(runCli(['check', '5000003', '--config', a.config]).status).toBe(0);
      svc.requests = [];
      expect((await sync(a.config)).status).toBe(0);
      expect(svc.requests).toEqual(['/directory']); // not ?since=100, which would answer 304 and keep user 3
      expect(runCli(['check', '5000003', '--config', a.config]).status).not.toBe(0);
    } finally {
      await svc.stop();
    }
  });
});

describe('GET /directory answers that must leave the cache unchanged', () => {
  const svc = new HostileService();
  beforeAll(async () => {
    svc.seed(10);
    await svc.start();
  });
  afterAll(() => svc.stop());
  const item = (id: number, status = 'ACTIVE') => ({ email_id: id, ad_status: status, groups: [['Staff']], user_tag: 'USER', email: `u${id}@example.org` });
  const detail = (id: number) => ({ policies: [], smartcards: [{ number: String(5_000_000 + id) }] });
  const full = {
    revision: 7,
    full: true,
    users: [1, 2, 3].map((id) => item(id)),
    details: Object.fromEntries([1, 2, 3].map((id) => [String(id), detail(id)])),
    removed: [],
  };

  it.each([
    [
      'a user both changed and removed',
      { revision: 8, full: false, users: [item(3, 'SUSPENDED')], details: { '3': detail(3) }, removed: [3] },
      'GET /directory: $.removed: email_id 3 is also listed in users',
    ],
    [
      'a removed id that is not a number',
      { revision: 8, full: false, users: [], details: {}, removed: ['3'] },
      'GET /directory: $.removed[0]: expected number',
    ],
    ['no revision', { full: false, users: [], details: {}, removed: [] }, 'GET /directory: $.revision: required'],
    ['users not an array', { revision: 8, full: false, users: {}, details: {}, removed: [] }, 'GET /directory: $.users: expected an array'],
    [
      'a user listed twice',
      { revision: 8, full: false, users: [item(3), item(3)], details: { '3': detail(3) }, removed: [] },
      'GET /directory: $.users[1].email_id: email_id 3 is listed twice',
    ],
    ['a body that stops half-way', 'stall', '/ stopped for 1 s after'],
  ])('%s: refused with the path, the cache unchanged', async (_what, answer, message) => {
    const a = agentConfig(`http://127.0.0.1:${svc.port}`);
    svc.handler = (req, res) => (req.url?.startsWith('/directory') ? (res.end(JSON.stringify(full)), true) : false);
    expect((await sync(a.config)).status).toBe(0);
    const before = dumpCache(a.cache);
    svc.handler = (req, res) => {
      if (!req.url?.startsWith('/directory')) return false;
      if (answer === 'stall') {
        res.write(JSON.stringify(full).slice(0, 40)); // then nothing, for longer than timeoutSeconds (1 s)
        setTimeout(() => res.end(), 3000);
      } else res.end(JSON.stringify(answer));
      return true;
    };
    const r = await sync(a.config);
    svc.handler = null;
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(message);
    expect(dumpCache(a.cache)).toBe(before);
  });
});
