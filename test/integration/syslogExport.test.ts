import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHAIN_STARTED, chainHash, dataOfWire, GENESIS_HASH } from '../../src/protocol/auditChain.js';
import type { SyslogOptions } from '../../src/protocol/options.js';
import type { AuditWireEvent } from '../../src/protocol/syslog.js';
import { SyslogSender, type SyslogRow } from '../../src/protocol/syslogSender.js';
import { AuditEventStore } from '../../src/service/audit/eventStore.js';
import { parseWireEvent } from '../../src/service/audit/wireEvent.js';
import { startService, type RunningService } from '../../src/service/root.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { systemClock, systemTimers } from '../../src/util/clock.js';
import { tempDir } from '../support/cli.js';
import { makeTlsFiles, type TlsFiles } from '../support/mosquitto.js';
import { Rsyslog, type ReceivedMessage } from '../support/rsyslog.js';
import { ENGINE, itOn, newServiceDb, type TestDbLocation } from '../support/serviceDb.js';
import { sleep, waitUntil } from '../support/wait.js';

/**
 * The service's SIEM export (docs/audit.md, "SIEM export: syslog") against a real rsyslogd over TLS: every event the
 * service keeps reaches it in order, at least once, across an outage and a restart of either side.
 */

const AGENT = 'lobby-pi';
const DOOR = '6f1c2a0e-0000-4000-8000-000000000001';
const PEN = 32473;

const tmp = tempDir('door-agent-syslog-export-');
let siem: TlsFiles;
let stranger: TlsFiles;
let rsyslog: Rsyslog;
let location: TestDbLocation;
let db: SqlDb;
let store: AuditEventStore;

/** One agent's chain, as its log writes it: each event linked to the one before. */
const chain = { id: randomUUID(), seq: 0, prev: GENESIS_HASH };
function nextEvent(type: string, fields: Record<string, unknown>): AuditWireEvent {
  chain.seq++;
  const at = new Date(Date.UTC(2026, 10, 24, 9, 0, 0) + chain.seq * 1000).toISOString();
  const wire: AuditWireEvent = Object.assign({}, fields, { id: `${AGENT}-${chain.seq}`, seq: chain.seq, at, door: DOOR, type, chain: chain.id });
  const hash = chainHash(chain.prev, { chain: chain.id, seq: chain.seq, at, door: DOOR, type, data: dataOfWire(wire) });
  Object.assign(wire, { prev_hash: chain.prev, hash });
  chain.prev = hash;
  return wire;
}

/** Events stored at the service as its ingest stores them (the wire event checked, then kept once). */
async function storeEvents(count: number, fields: (i: number) => Record<string, unknown> = () => ({ kind: 'card', hint: '…78' })): Promise<AuditWireEvent[]> {
  const events: AuditWireEvent[] = [];
  for (let i = 0; i < count; i++) {
    const event = chain.seq === 0 ? nextEvent(CHAIN_STARTED, { reason: 'new_log' }) : nextEvent('access_granted', fields(i));
    await store.store(parseWireEvent(Buffer.from(JSON.stringify(event))), Date.now());
    events.push(event);
  }
  return events;
}

function syslogOptions(overrides: Partial<SyslogOptions> = {}): SyslogOptions {
  return Object.assign({ url: rsyslog.url, caFile: siem.ca, format: 'rfc5424' as const, facility: 'authpriv', enterpriseId: PEN }, overrides);
}

async function startWithSyslog(): Promise<RunningService> {
  return startService(
    {
      server: {
        listen: '127.0.0.1:0',
        dataDir: tmp.path,
        lockReplyTimeoutSeconds: 5,
        resources: [],
        ...(location.engine === 'postgres' ? { database: { url: location.url, passwordFile: location.passwordFile, maxConnections: 4 } } : {}),
        syslog: syslogOptions(),
      },
    },
    { clock: systemClock, logger: pino({ level: 'silent' }), env: {} },
  );
}

/** The ids received, in the order received, and each id's first place. */
function receivedIds(): string[] {
  return rsyslog.received().map((m) => m.sd[`meta@${PEN}`]?.id ?? '');
}

/** Every id of `events` received; returns the received messages deduplicated by id (the first of each), checked in order. */
async function allArrive(events: AuditWireEvent[], timeoutMs: number, what: string): Promise<ReceivedMessage[]> {
  await waitUntil(
    () => {
      const ids = new Set(receivedIds());
      return events.every((e) => ids.has(e.id));
    },
    timeoutMs,
    what,
  );
  const seen = new Set<string>();
  const firsts = rsyslog.received().filter((m) => {
    const id = m.sd[`meta@${PEN}`]!.id!;
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
  const seqs = firsts.map((m) => Number(m.sd[`meta@${PEN}`]!.seq));
  // In order: each event first arrives after every event before it.
  expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  return firsts;
}

async function exportCursor(): Promise<number> {
  return Number((await db.value<number | string>("SELECT last_event_id FROM audit_exports WHERE name = 'syslog'")) ?? 0);
}

async function lastEventId(): Promise<number> {
  return Number((await db.value<number | string>('SELECT max(event_id) FROM audit_events')) ?? 0);
}

beforeAll(async () => {
  siem = makeTlsFiles(tmp.path, 'siem');
  stranger = makeTlsFiles(tmp.path, 'stranger');
  rsyslog = new Rsyslog(tmp.path, siem);
  await rsyslog.start();
  ({ db, location } = await newServiceDb(tmp.path));
  store = new AuditEventStore(db);
});

afterAll(async () => {
  await rsyslog?.stop();
  await db?.close();
  tmp.cleanup();
});

describe(`the service's syslog export (${ENGINE})`, () => {
  let service: RunningService | null = null;
  afterAll(async () => {
    await service?.stop();
  });

  it('sends every event in order, as RFC 5424 with its fields in structured data rsyslog parses back', async () => {
    const events = await storeEvents(4);
    events.push(...(await storeEvents(1, () => ({ kind: 'card', hint: '…78', who: 'Zoë "Z" [Admin]', level: 'Lab]' }))));
    service = await startWithSyslog();
    const received = await allArrive(events, 20_000, 'the first events at rsyslog');
    const last = received.at(-1)!;
    expect(last.pri).toBe(10 * 8 + 6);
    expect([last.hostname, last.appName, last.procId, last.msgId]).toEqual([hostname(), 'door-agent', '-', 'access_granted']);
    expect(last.timestamp).toBe(events.at(-1)!.at);
    expect(last.sd[`meta@${PEN}`]).toEqual({
      id: events.at(-1)!.id,
      agent: AGENT,
      seq: String(events.at(-1)!.seq),
      door: DOOR,
      chain: chain.id,
      hash: events.at(-1)!.hash,
    });
    expect(last.sd[`event@${PEN}`]).toEqual({ kind: 'card', hint: '…78', who: 'Zoë "Z" [Admin]', level: 'Lab]' });
    expect(last.msg).toBe(`\uFEFFaccess granted by Zoë "Z" [Admin] at door ${DOOR}`);
    expect(received[0]!.msgId).toBe(CHAIN_STARTED);
    expect(received[0]!.sd[`event@${PEN}`]).toEqual({ reason: 'new_log' });
  });

  it('keeps events while the receiver is down and sends them all, in order, when it is back', async () => {
    await rsyslog.stop();
    const events = await storeEvents(30);
    await sleep(1500);
    await rsyslog.start();
    await allArrive(events, 45_000, 'the events stored during the outage');
  }, 90_000);

  it('loses none when rsyslog hangs and is killed in the middle of a stream, then started again (a duplicate allowed, deduped by id)', async () => {
    const before = await storeEvents(40);
    const writing = (async () => {
      const during: AuditWireEvent[] = [];
      for (let i = 0; i < 40; i++) {
        during.push(...(await storeEvents(3)));
        await sleep(25);
      }
      return during;
    })();
    await sleep(400);
    // A hang, then a crash: what was sent meanwhile sat unread in its socket and is gone; the sender must send it again.
    rsyslog.freeze();
    await sleep(500);
    await rsyslog.kill();
    await rsyslog.start();
    const during = await writing;
    await allArrive([...before, ...during], 60_000, 'every event of the stream across the restart');
  }, 90_000);

  it('resumes from its cursor after a restart of the service: none lost, none of the confirmed sent again', async () => {
    // Everything sent so far confirmed (the connection stayed up 5 s after it): the cursor is at the last event.
    const last = await lastEventId();
    await waitUntil(async () => (await exportCursor()) === last, 30_000, 'the export cursor at the last event');
    await service!.stop();
    service = null;
    const countBefore = receivedIds().length;
    const events = await storeEvents(10);
    service = await startWithSyslog();
    await allArrive(events, 30_000, 'the events stored while the service was down');
    const sinceRestart = receivedIds().slice(countBefore);
    expect(sinceRestart).toEqual(events.map((e) => e.id));
  }, 90_000);

  itOn('sqlite', 'refuses a receiver whose certificate caFile did not sign: nothing sent, and the log says why', async () => {
    const lines: string[] = [];
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(chunk.toString());
          done();
        },
      }),
    );
    const countBefore = receivedIds().length;
    const event = nextEvent('access_granted', { kind: 'card', hint: '…11' });
    const sender = new SyslogSender({
      syslog: syslogOptions({ caFile: stranger.ca }),
      defaultHostname: 'test',
      source: {
        confirmedCursor: async () => 0,
        after: async (cursor: number): Promise<SyslogRow[]> => (cursor < 1 ? [{ cursor: 1, agent: AGENT, event }] : []),
        confirmed: async () => undefined,
      },
      clock: systemClock,
      timers: systemTimers,
      logger,
    });
    sender.start();
    try {
      await waitUntil(() => lines.some((l) => l.includes('certificate is refused')), 15_000, 'the refusal in the log');
      await sleep(1000);
    } finally {
      await sender.stop();
    }
    expect(receivedIds().length).toBe(countBefore);
    const refusal = JSON.parse(lines.find((l) => l.includes('certificate is refused'))!) as { level: number; error: string; msg: string };
    expect(refusal.level).toBe(40);
    expect(refusal.error).toContain('signed by syslog.caFile');
    expect(refusal.msg).toContain('the syslog receiver cannot be reached');
    // Once per outage, not at each attempt.
    expect(lines.filter((l) => l.includes('cannot be reached')).length).toBe(1);
  });

  itOn('sqlite', 'shows its client certificate (certFile, keyFile) to a receiver that asks for one, which refuses a client without', async () => {
    const strict = new Rsyslog(join(tmp.path, 'strict'), siem, true);
    await strict.start();
    const client = clientCertificate(siem, 'agent-client');
    const send = async (options: Partial<SyslogOptions>, event: AuditWireEvent) => {
      const sender = new SyslogSender({
        syslog: syslogOptions(Object.assign({ url: strict.url }, options)),
        defaultHostname: 'test',
        source: {
          confirmedCursor: async () => 0,
          after: async (cursor: number): Promise<SyslogRow[]> => (cursor < 1 ? [{ cursor: 1, agent: AGENT, event }] : []),
          confirmed: async () => undefined,
        },
        clock: systemClock,
        timers: systemTimers,
        logger: pino({ level: 'silent' }),
      });
      sender.start();
      return sender;
    };
    const ids = () => strict.received().map((m) => m.sd[`meta@${PEN}`]?.id);
    try {
      const anonymous = nextEvent('access_granted', { kind: 'card', hint: '…21' });
      const withCertificate = nextEvent('access_granted', { kind: 'card', hint: '…22' });
      const refused = await send({}, anonymous);
      const shown = await send({ certFile: client.cert, keyFile: client.key }, withCertificate);
      await waitUntil(() => ids().includes(withCertificate.id), 15_000, 'the event of the client with a certificate');
      await sleep(1000);
      await refused.stop();
      await shown.stop();
      expect(ids()).toEqual([withCertificate.id]);
    } finally {
      await strict.stop();
    }
  });
});

/** A client certificate signed by `ca` (made with openssl). */
function clientCertificate(ca: TlsFiles, name: string): { cert: string; key: string } {
  const file = (suffix: string) => join(tmp.path, `${name}.${suffix}`);
  const caKey = ca.ca.replace(/ca\.crt$/, 'ca.key');
  const run = (args: string[]) => {
    const r = spawnSync('openssl', args, { encoding: 'utf8' });
    if (r.error || r.status !== 0) throw new Error(`openssl ${args[0]} failed (apt-get install openssl): ${r.stderr ?? r.error}`);
  };
  run(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${name}`, '-keyout', file('key'), '-out', file('csr')]);
  writeFileSync(file('ext'), 'extendedKeyUsage=clientAuth\n');
  run(['x509', '-req', '-in', file('csr'), '-CA', ca.ca, '-CAkey', caKey, '-CAcreateserial', '-days', '2', '-extfile', file('ext'), '-out', file('crt')]);
  return { cert: file('crt'), key: file('key') };
}
