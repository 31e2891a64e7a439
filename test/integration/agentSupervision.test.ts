import { EventEmitter } from 'node:events';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import type { PortLike } from '../../src/readers/serial/port.js';
import { importSnapshot } from '../../src/snapshot/importSnapshot.js';
import { noteConfigChange } from '../../src/store/configChanges.js';
import { cachePath, openDatabase, openStateDatabase, statePath } from '../../src/store/database.js';
import { EventLog, type WireEvent } from '../../src/store/eventLog.js';
import { readRuntimeStatus } from '../../src/store/runtimeStatus.js';
import type { BootClock } from '../../src/util/bootClock.js';
import { systemClock, systemTimers } from '../../src/util/clock.js';
import { DOOR_UUID, ROOT, runCli, runCliAsync, tempDir, writeConfig } from '../support/cli.js';
import { FakeGpio } from '../support/fakeGpio.js';
import { ManualTime } from '../support/manualTime.js';
import { Mosquitto } from '../support/mosquitto.js';
import { freePort } from '../support/net.js';
import { Operator } from '../support/operator.js';
import { sleep, waitUntil } from '../support/wait.js';

// Issue 30 items 2 and 3 at the composition root (startAgent in this process): the offline limit, the power
// inputs, the broker's and the service's outages, config_changed. FakeGpio, a serial reader on an in-memory port,
// a real SQLite cache and audit log, a scripted GET /directory service and a real mosquitto on the loopback.
// Clock and timers are ManualTime (every hour walked by the test), and so is the monotonic clock since boot the
// offline limit measures with; real waits are only for I/O (the sync worker, the broker).

const tmp = tempDir('door-agent-supervision-');
const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await Promise.resolve(c()).catch(() => undefined);
});
afterAll(tmp.cleanup);

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const ALICE = '4213578'; // Staff
const ERIN = '4213581'; // Facilities (the responders), policy Night shift
const GUEST_CARD = '7700001'; // guest link 501 (Mon-Fri 9-17) and Carol, a GUEST user
const EXIT = 22;
const SNAPSHOT = JSON.parse(readFileSync(join(ROOT, 'examples/snapshot.json'), 'utf8')) as {
  users: Array<Record<string, unknown>>;
  details: Record<string, unknown>;
};

/** A serial reader's port in memory: the test presents a card as the line the reader sends. */
class MemoryPort extends EventEmitter implements PortLike {
  isOpen = false;
  open(callback: (err: Error | null) => void): void {
    this.isOpen = true;
    callback(null);
  }
  close(callback?: (err: Error | null) => void): void {
    this.isOpen = false;
    callback?.(null);
  }
}

/** GET /directory answered in full with the example organization while `up`; the connection cut while not. */
async function directoryService() {
  const state = { up: true, requests: 0 };
  const body = JSON.stringify({
    revision: 1,
    full: true,
    history: 'ab'.repeat(16),
    tag: '1'.padStart(16, '0'),
    users: SNAPSHOT.users.map((u) => ({ ...u, user_tag: u.user_tag ?? 'USER' })),
    details: SNAPSHOT.details,
    removed: [],
  });
  const port = await freePort();
  const server: Server = createServer((req, res) => {
    state.requests++;
    if (!state.up) return void req.socket.destroy();
    if (!req.url?.startsWith('/directory')) return void res.writeHead(404).end('{"error":"no"}');
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise((r) => server.close(r));
  });
  return Object.assign(state, { url: `http://127.0.0.1:${port}` });
}

let n = 0;

interface SiteOptions {
  /** access.maxCacheAgeHours. */
  limitHours?: number;
  serviceUrl?: string;
  brokerUrl?: string;
  /** More YAML sections (power). */
  extra?: string;
}

function site(options: SiteOptions = {}) {
  const dir = join(tmp.path, `s${n++}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'api-key'), 'dak_secret-api-key-never-logged\n');
  const limit = options.limitHours === undefined ? '' : `, maxCacheAgeHours: ${options.limitHours}`;
  const path = writeConfig(dir, {
    id: 'sup',
    access: `{ groups: [Staff], policies: [Night shift], responders: { groups: [Facilities] }${limit} }`,
    extra: [
      options.serviceUrl
        ? `service: { baseUrl: "${options.serviceUrl}", apiKeyFile: ${dir}/api-key, startDelaySeconds: 0, syncIntervalSeconds: 86400, timeoutSeconds: 5 }`
        : '',
      options.brokerUrl ? `mqtt: { url: "${options.brokerUrl}", topicPrefix: sup${n}, keepaliveSeconds: 5, homeAssistant: { discovery: false } }` : '',
      options.extra ?? '',
    ].join('\n'),
    doorExtra: `    unlockSeconds: 3\n    exitButton: { pin: ${EXIT}, debounceMs: 20 }\n    reader: { path: ${dir}/reader }\n`,
  });
  const dataDir = join(dir, 'data');
  mkdirSync(dataDir);
  const cache = openDatabase(cachePath(dataDir));
  try {
    importSnapshot(cache, join(ROOT, 'examples/snapshot.json'), { maxRemovalRatio: null, now: Date.parse('2026-07-01T00:00:00Z') });
  } finally {
    cache.close();
  }
  const logs: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info', base: undefined, timestamp: false }, { write: (line: string) => void logs.push(JSON.parse(line)) });
  const gpio = new FakeGpio();
  const ports: MemoryPort[] = [];
  // The monotonic clock since boot: this boot's id and the ManualTime's monotonic clock plus the boot's offset.
  const boot = { id: 'boot-a', offset: 0 };
  let agent: Agent | null = null;
  const s = {
    dir,
    dataDir,
    path,
    logs,
    gpio,
    boot,
    time: new ManualTime(),
    async start(): Promise<Agent> {
      const bootClock: BootClock = { bootId: () => boot.id, monoNow: () => s.time.monoNow() + boot.offset };
      const started = await startAgent(loadConfig(path), {
        logger,
        clock: s.time,
        timers: s.time,
        gpio,
        clockSynchronized: () => true,
        bootClock,
        openPort: () => {
          const port = new MemoryPort();
          ports.push(port);
          return port;
        },
      });
      agent = started;
      cleanups.push(() => started.stop());
      return started;
    },
    async stop(): Promise<void> {
      await agent?.stop();
      agent = null;
    },
    /** The audit log, oldest first. */
    events(): WireEvent[] {
      const db = openStateDatabase(statePath(dataDir), { readonly: true });
      try {
        return new EventLog(db, { agentId: 'sup', maxEvents: 1000 }).since(0);
      } finally {
        db.close();
      }
    },
    ofType(type: string): WireEvent[] {
      return s.events().filter((e) => e.type === type);
    },
    /** A card at the reader; returns the decision it led to. */
    tap(card: string): WireEvent {
      const before = s.events().at(-1)?.seq ?? 0;
      const port = ports.at(-1);
      if (!port?.isOpen) throw new Error('the reader is not open');
      port.emit('data', Buffer.from(`${card}\r\n`));
      const decision = s.events().find((e) => e.seq > before && (e.type === 'access_granted' || e.type === 'access_denied'));
      if (!decision) throw new Error(`no decision on card ${card}`);
      return decision;
    },
    count(msg: string): number {
      return logs.filter((l) => l.msg === msg).length;
    },
    /** Walks the manual time `stepMs` at a time (real I/O between steps) until `done`. */
    async advanceUntil(done: () => boolean, stepMs: number, what: string): Promise<void> {
      for (let i = 0; i < 200 && !done(); i++) {
        s.time.advance(stepMs);
        await sleep(20);
      }
      await waitUntil(done, 10_000, what);
    },
  };
  return s;
}

describe('the offline limit (access.maxCacheAgeHours)', () => {
  it('past it without a sync only responders, guest links and the exit button open; raised once, even across restarts and a clock set back; the next sync clears it', async () => {
    const svc = await directoryService();
    const s = site({ limitHours: 1, serviceUrl: svc.url });
    await s.start();
    // A cache only imported was never synced: its age is not known, so the limit is in force until the first sync.
    expect(s.ofType('cache_too_old')).toEqual([expect.objectContaining({ door: null, last_sync: null, age_seconds: null, limit_hours: 1 })]);
    expect(s.tap(ALICE)).toMatchObject({ type: 'access_denied', reason: 'cache_too_old' });
    await s.advanceUntil(() => s.count('sync done') === 1, 0, 'the first sync');
    expect(s.ofType('cache_fresh')).toEqual([expect.objectContaining({ door: null, age_seconds: null })]);
    expect(s.tap(ALICE)).toMatchObject({ type: 'access_granted' });
    const syncedAt = s.time.wall;
    svc.up = false;

    // 61 minutes on, with no timer run: the tap alone finds the limit passed.
    s.time.mono += 61 * MINUTE;
    s.time.wall += 61 * MINUTE;
    expect(s.tap(ALICE)).toMatchObject({ type: 'access_denied', reason: 'cache_too_old', holders: [{ email_id: 101, reason: 'cache_too_old' }] });
    const raised = s.ofType('cache_too_old').slice(1);
    expect(raised).toHaveLength(1);
    expect(raised[0]).toMatchObject({ door: null, limit_hours: 1, age_seconds: 61 * 60 });
    // The last sync as the cache records it (the sync worker's own clock).
    expect(raised[0]!.last_sync).toBe(s.ofType('cache_fresh')[0]!.last_sync);
    expect(raised[0]!.last_sync).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(s.tap('99999999')).toMatchObject({ type: 'access_denied', reason: 'cache_too_old' });
    // A responder still gets in, a guest link keeps its own validity, and nobody is locked in.
    expect(s.tap(ERIN)).toMatchObject({ type: 'access_granted', who: 'Erin Evans' });
    expect(s.tap(GUEST_CARD)).toMatchObject({ type: 'access_granted', holders: expect.arrayContaining([{ magic_link_id: '501', reason: null }]) });
    s.gpio.set(EXIT, 0);
    s.time.advance(20);
    expect(s.gpio.levels.get(17)).toBe(1);
    s.gpio.set(EXIT, 1);
    s.time.advance(30 * MINUTE); // the minute's checks and the checkpoints: still raised once
    expect(s.ofType('cache_too_old')).toHaveLength(2);

    // Restarted in the same boot with the wall clock set back two hours: the monotonic clock says 1 h 31 min.
    await s.stop();
    s.time = new ManualTime({ wall: s.time.wall - 2 * HOUR, mono: s.time.mono });
    await s.start();
    expect(s.tap(ALICE)).toMatchObject({ reason: 'cache_too_old' });

    // Rebooted (another boot id, the monotonic clock from 0) with the clock set back a day before the sync: the
    // age the daemon checkpointed stands.
    s.time.advance(0); // the start's sync, failing
    await s.stop();
    s.boot.id = 'boot-b';
    s.time = new ManualTime({ wall: syncedAt - 24 * HOUR, mono: 1_000 });
    await s.start();
    expect(s.tap(ALICE)).toMatchObject({ reason: 'cache_too_old' });
    expect(s.ofType('cache_too_old')).toHaveLength(2);
    expect(s.ofType('cache_fresh')).toHaveLength(1);

    // The service is back: the next sync clears it, once.
    svc.up = true;
    await s.advanceUntil(() => s.count('sync done') === 2, 5_000, 'a sync after the outage');
    const fresh = s.ofType('cache_fresh').slice(1);
    expect(fresh).toHaveLength(1);
    expect(fresh[0]).toMatchObject({ door: null, limit_hours: 1 });
    expect(fresh[0]!.age_seconds as number).toBeGreaterThanOrEqual(91 * 60);
    expect(s.tap(ALICE)).toMatchObject({ type: 'access_granted' });
    expect(s.ofType('cache_too_old')).toHaveLength(2);
  });

  it('a door-agent sync run beside the daemon counts: the next refused tap notices it and is decided afresh', async () => {
    const svc = await directoryService();
    svc.up = false; // the daemon's own syncs fail
    const s = site({ limitHours: 1, serviceUrl: svc.url });
    await s.start();
    await s.advanceUntil(() => s.count('sync failed; the cache is unchanged') === 1, 0, "the daemon's first sync failing");
    expect(s.tap(ALICE)).toMatchObject({ reason: 'cache_too_old' });
    svc.up = true;
    const cli = await runCliAsync(['sync', '--config', s.path]);
    expect(cli.status, cli.stderr).toBe(0);
    s.time.mono += 10_000; // no timer run: the tap looks at the cache's record itself
    s.time.wall += 10_000;
    expect(s.tap(ALICE)).toMatchObject({ type: 'access_granted' });
    expect(s.ofType('cache_fresh')).toHaveLength(1);
    expect(s.count('sync done')).toBe(0); // not the daemon's own
  });

  it('door-agent status shows the limit and the age; a cache never synced is past it', async () => {
    const svc = await directoryService();
    const never = site({ limitHours: 24, serviceUrl: svc.url });
    const status = (p: string) => runCli(['status', '--config', p]);
    const before = status(never.path);
    expect(before.stdout).toContain('offline limit: 24 h (access.maxCacheAgeHours); the cache was never synced: IN FORCE');
    expect(JSON.parse(runCli(['status', '--json', '--config', never.path]).stdout).offlineLimit).toEqual({
      maxCacheAgeHours: 24,
      cacheAgeSeconds: null,
      inForce: true,
    });
    // door-agent check decides with it: Alice refused, Erin (a responder) admitted.
    const alice = runCli(['check', ALICE, '--config', never.path]);
    expect(alice.status).toBe(1);
    expect(JSON.parse(alice.stdout)).toMatchObject({ granted: false, reason: 'cache_too_old', cache_too_old: true });
    expect(runCli(['check', ERIN, '--config', never.path]).status).toBe(0);

    // Synced by a daemon on the real clocks: measured as that daemon does.
    const synced = site({ limitHours: 24, serviceUrl: svc.url });
    const logs: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(line) });
    const agent = await startAgent(loadConfig(synced.path), { logger, clock: systemClock, timers: systemTimers, gpio: new FakeGpio() });
    cleanups.push(() => agent.stop());
    await waitUntil(() => logs.some((l) => l.includes('"msg":"sync done"')), 10_000, 'the first sync');
    await agent.stop();
    expect(status(synced.path).stdout).toMatch(/offline limit: 24 h \(access\.maxCacheAgeHours\); cache age \d+ min: not reached/);
    expect(JSON.parse(runCli(['status', '--json', '--config', synced.path]).stdout).offlineLimit).toMatchObject({ maxCacheAgeHours: 24, inForce: false });
  });
});

describe('config check', () => {
  it('names the offline limit and the power inputs; 0 hours or a shared pin is exit 78 naming the key', () => {
    const s = site({ limitHours: 72, serviceUrl: 'http://127.0.0.1:9', extra: 'power: { mainsPin: 12, batteryLowPin: 16 }' });
    const ok = runCli(['config', 'check', '--config', s.path]);
    expect(ok.status).toBe(0);
    expect(ok.stdout).toContain('offline limit: 72 h without a successful sync, then only responders (access.maxCacheAgeHours)');
    expect(ok.stdout).toContain('power inputs: mains GPIO 12, battery low GPIO 16');
    writeFileSync(s.path, readFileSync(s.path, 'utf8').replace('maxCacheAgeHours: 72', 'maxCacheAgeHours: 0').replace('mainsPin: 12', 'mainsPin: 22'));
    const bad = runCli(['config', 'check', '--config', s.path]);
    expect(bad.status).toBe(78);
    expect(bad.stderr).toContain('access.maxCacheAgeHours: must be a positive number of hours (leave it out for no limit)');
    expect(bad.stderr).toContain('power.mainsPin: GPIO 22 is already used by doors[0].exitButton.pin');
  });
});

describe('power inputs', () => {
  it('mains lost and restored, battery low and ok: one event each, a flicker shorter than the debounce none; status shows them', async () => {
    const s = site({ extra: 'power: { mainsPin: 5, batteryLowPin: 6, debounceMs: 500 }' });
    s.gpio.levels.set(6, 1); // the battery is already low at start
    await s.start();
    expect(s.ofType('battery_low')).toEqual([expect.objectContaining({ door: null, at_start: true })]);
    expect(s.ofType('power_lost')).toEqual([]);
    s.gpio.set(5, 0);
    s.time.advance(200);
    s.gpio.set(5, 1); // a dip of 200 ms
    s.time.advance(1000);
    expect(s.ofType('power_lost')).toEqual([]);
    s.gpio.set(5, 0);
    s.time.advance(500);
    expect(s.ofType('power_lost')).toHaveLength(1);
    const running = JSON.parse(runCli(['status', '--json', '--config', s.path]).stdout);
    expect(running.power).toEqual({ mains: 'lost', battery: 'low' });
    expect(runCli(['status', '--config', s.path]).stdout).toContain('power: mains LOST (on battery), battery LOW');
    s.gpio.set(5, 1);
    s.gpio.set(6, 0);
    s.time.advance(500);
    expect(
      s
        .events()
        .map((e) => e.type)
        .filter((t) => /^(power|battery)_/.test(t)),
    ).toEqual(['battery_low', 'power_lost', 'power_restored', 'battery_ok']);
    const db = openStateDatabase(statePath(s.dataDir), { readonly: true });
    try {
      expect(readRuntimeStatus(db)?.power).toEqual({ mains: 'present', battery: 'ok' });
    } finally {
      db.close();
    }
  });
});

describe('link_lost and link_restored', () => {
  it('the service: once per outage (two failed syncs in a row, 30 s since the first), with its start; restored with its length', async () => {
    const svc = await directoryService();
    svc.up = false;
    const s = site({ serviceUrl: svc.url });
    await s.start();
    const outageStart = s.time.wall;
    await s.advanceUntil(() => s.count('sync failed; the cache is unchanged') >= 2, 1_000, 'two failed syncs');
    // Retries within the grace are a blip so far.
    if (s.time.mono - 1_000 < 30_000) expect(s.ofType('link_lost')).toEqual([]);
    await s.advanceUntil(() => s.ofType('link_lost').length > 0, 5_000, 'link_lost');
    await s.advanceUntil(() => s.count('sync failed; the cache is unchanged') >= 6, 10_000, 'more failed syncs');
    const lost = s.ofType('link_lost');
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatchObject({ door: null, link: 'service', since: new Date(outageStart).toISOString() });
    svc.up = true;
    await s.advanceUntil(() => s.count('sync done') === 1, 10_000, 'a sync after the outage');
    const restored = s.ofType('link_restored');
    expect(restored).toHaveLength(1);
    expect(restored[0]).toMatchObject({ link: 'service', since: new Date(outageStart).toISOString() });
    expect(restored[0]!.seconds).toBe(Math.round((Date.parse(restored[0]!.at) - outageStart) / 1000));
  });

  it('the broker: a reconnect within 30 s is no outage; a longer one is link_lost, kept in the outbox and published after the reconnect with link_restored', async () => {
    // Persistent: the operator's session (and the QoS 1 messages queued for it) outlives the broker's restart.
    const broker = new Mosquitto(join(tmp.path, `broker${n}`), undefined, true);
    await broker.start();
    cleanups.push(() => broker.stop());
    const s = site({ brokerUrl: broker.url, extra: 'power: { mainsPin: 5, debounceMs: 0 }' });
    const prefix = `sup${n}`;
    await s.start();
    const connected = () => s.count('connected to the broker');
    await waitUntil(() => connected() === 1, 10_000, 'connected');

    await broker.stop();
    await waitUntil(() => s.count('broker connection lost; doors keep working, events are kept') === 1, 10_000, 'the connection lost');
    s.time.advance(20_000);
    await broker.start();
    await waitUntil(() => connected() === 2, 15_000, 'reconnected after a blip');
    s.time.advance(60_000);
    expect(s.ofType('link_lost')).toEqual([]);

    const op = await Operator.connect(broker.url, { clientId: `operator-${n}` });
    cleanups.push(() => op.end());
    await op.subscribe(`${prefix}/doors/agent/events`);
    // An agent-level event while connected goes out at once, on the agent's events topic.
    s.gpio.set(5, 0);
    await op.waitFor((m) => (m.json as { type?: string } | null)?.type === 'power_lost', 10_000, 'power_lost on the broker');
    await broker.stop();
    await waitUntil(() => s.count('broker connection lost; doors keep working, events are kept') === 2, 10_000, 'lost again');
    const since = s.time.wall;
    s.time.advance(31_000);
    const lost = s.ofType('link_lost');
    expect(lost).toEqual([expect.objectContaining({ door: null, link: 'broker', since: new Date(since).toISOString() })]);
    const unpublished = () => {
      const db = openStateDatabase(statePath(s.dataDir), { readonly: true });
      try {
        return new EventLog(db, { agentId: 'sup', maxEvents: 1000 }).unpublished(0, 100).map((e) => e.type);
      } finally {
        db.close();
      }
    };
    expect(unpublished()).toContain('link_lost'); // waiting in the outbox while the broker is away
    s.time.advance(29_000);
    await broker.start();
    await waitUntil(() => connected() === 3, 15_000, 'reconnected after the outage');
    const got = await op.waitFor((m) => (m.json as { type?: string } | null)?.type === 'link_restored', 10_000, 'link_restored on the broker');
    expect(got.json).toMatchObject({ link: 'broker', since: new Date(since).toISOString(), seconds: 60 });
    expect(op.received.map((m) => (m.json as { type: string }).type)).toEqual(expect.arrayContaining(['link_lost', 'link_restored']));
    expect(s.ofType('link_lost')).toHaveLength(1);
  });
});

describe('config_changed', () => {
  it('at start with the hash (never a secret) and the one before; a reader keyset noted while stopped comes first at the next start', async () => {
    const s = site({ serviceUrl: 'http://127.0.0.1:9' });
    await s.start();
    const [loaded] = s.ofType('config_changed');
    expect(loaded).toMatchObject({ door: null, reason: 'loaded', previous_config_hash: null });
    expect(loaded!.config_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(s.events())).not.toContain('dak_secret-api-key-never-logged');
    await s.stop();

    noteConfigChange(s.dataDir, { at: s.time.wall, reason: 'reader_keyset', hash: loaded!.config_hash as string, door: DOOR_UUID });
    writeFileSync(s.path, readFileSync(s.path, 'utf8').replace('unlockSeconds: 3', 'unlockSeconds: 4'));
    await s.start();
    const changes = s.ofType('config_changed');
    expect(changes.map((e) => [e.reason, e.door])).toEqual([
      ['loaded', null],
      ['reader_keyset', DOOR_UUID],
      ['loaded', null],
    ]);
    expect(changes[1]).toMatchObject({ config_hash: loaded!.config_hash });
    expect(changes[2]).toMatchObject({ previous_config_hash: loaded!.config_hash });
    expect(changes[2]!.config_hash).not.toBe(loaded!.config_hash);
    expect(existsSync(join(s.dataDir, 'config-changes.jsonl'))).toBe(false);
  });
});
