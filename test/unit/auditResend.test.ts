import { join } from 'node:path';
import type { IPublishPacket } from 'mqtt';
import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { AuditResendHandler, RESEND_EVERY_MS } from '../../src/mqtt/handlers/auditResend.js';
import { MAX_RESEND_SEQS, parseResendRequest, resendPayload, resendRequests } from '../../src/protocol/auditResend.js';
import { Topics } from '../../src/protocol/topics.js';
import { type Db, openStateDatabase } from '../../src/store/database.js';
import { EventLog } from '../../src/store/eventLog.js';
import { DOOR_UUID, tempDir } from '../support/cli.js';
import { ManualTime } from '../support/manualTime.js';

// The service's request to send audit events again (docs/audit.md, "How a gap closes"): its form, and what the
// agent's handler does with it against a real audit log.

const tmp = tempDir('door-agent-audit-resend-');
afterAll(tmp.cleanup);
const opened: Db[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) if (db.open) db.close();
});

const CHAIN = '0b7f4c2e-1111-4a57-9d43-1f2e3a4b5c6d';
const OTHER_CHAIN = '0b7f4c2e-2222-4a57-9d43-1f2e3a4b5c6d';
const T0 = Date.parse('2026-11-24T09:00:00.000Z');
const topics = new Topics('door-agent', 'lobby-pi');
let files = 0;

describe('the request on the wire', () => {
  it('is {"chain","from","to"} with from <= to and at most 10,000 seqs; anything else says what is wrong', () => {
    const parse = (value: unknown) => parseResendRequest(Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)));
    expect(parse({ chain: CHAIN, from: 3, to: 3 })).toEqual({ chain: CHAIN, from: 3, to: 3 });
    expect(parse({ chain: CHAIN, from: 1, to: MAX_RESEND_SEQS })).toEqual({ chain: CHAIN, from: 1, to: MAX_RESEND_SEQS });
    expect(parse({ chain: CHAIN, from: 1, to: MAX_RESEND_SEQS + 1 })).toEqual({ problem: 'to: at most 10000 seqs in one request' });
    expect(parse({ chain: CHAIN, from: 5, to: 4 })).toEqual({ problem: 'to: must not be below from' });
    expect(parse({ chain: CHAIN, from: 0, to: 4 })).toMatchObject({ problem: expect.stringMatching(/^from: /) });
    expect(parse({ chain: CHAIN, from: 1.5, to: 4 })).toMatchObject({ problem: expect.stringMatching(/^from: /) });
    expect(parse({ chain: 'Robert; DROP', from: 1, to: 4 })).toEqual({ problem: 'chain: must be the chain id (a UUID)' });
    expect(parse({ from: 1, to: 4 })).toMatchObject({ problem: expect.stringMatching(/^chain: required/) });
    expect(parse('{"chain":')).toEqual({ problem: 'not JSON' });
    expect(parse(JSON.stringify({ chain: CHAIN, from: 1, to: 2, pad: 'x'.repeat(2000) }))).toMatchObject({ problem: expect.stringMatching(/more than 1024$/) });
  });

  it('a gap longer than 10,000 seqs is asked for in pieces, oldest first, each one that parses', () => {
    const pieces = resendRequests(CHAIN, 5, 25_004);
    expect(pieces).toEqual([
      { chain: CHAIN, from: 5, to: 10_004 },
      { chain: CHAIN, from: 10_005, to: 20_004 },
      { chain: CHAIN, from: 20_005, to: 25_004 },
    ]);
    for (const piece of pieces) expect(parseResendRequest(Buffer.from(resendPayload(piece)))).toEqual(piece);
    expect(resendRequests(CHAIN, 7, 7)).toEqual([{ chain: CHAIN, from: 7, to: 7 }]);
    expect(topics.auditResend).toBe('door-agent/agents/lobby-pi/audit/resend');
    expect(topics.auditResendOf('back-pi')).toBe('door-agent/agents/back-pi/audit/resend');
  });
});

/** A log of `count` events (the chain's start, then door events), every one published, and the handler on it. */
function site(options: { count?: number; maxEvents?: number } = {}) {
  const db = openStateDatabase(join(tmp.path, `state-${++files}.db`));
  opened.push(db);
  const log = new EventLog(db, { agentId: 'lobby-pi', maxEvents: options.maxEvents ?? 1000, keepUnpublished: true, newChainId: () => CHAIN });
  for (let i = 1; i < (options.count ?? 10); i++) log.append({ type: 'door_opened', door: DOOR_UUID, at: T0 + i });
  log.markPublished(
    log.since(0).map((e) => e.seq),
    T0,
  );
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'debug' }, { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) });
  const time = new ManualTime();
  let rewinds = 0;
  const handler = new AuditResendHandler({ topics, events: log, clock: time, logger, onRepublished: () => rewinds++ });
  const deliver = (payload: unknown, retain = false) =>
    handler.onMessage(topics.auditResend, Buffer.from(typeof payload === 'string' ? payload : JSON.stringify(payload)), {
      cmd: 'publish',
      qos: 1,
      retain,
      dup: false,
    } as IPublishPacket);
  const unpublished = () => log.unpublished(0, 100).map((e) => e.seq);
  return { log, handler, deliver, unpublished, lines, time, rewinds: () => rewinds };
}

describe('the agent: AuditResendHandler', () => {
  it('subscribes to its own resend topic, QoS 1, retain as published', () => {
    expect(site().handler.subscriptions()).toEqual([{ filter: 'door-agent/agents/lobby-pi/audit/resend', options: { qos: 1, rap: true } }]);
  });

  it('marks the seqs asked for unpublished again and has the outbox go back to them', () => {
    const s = site();
    s.deliver({ chain: CHAIN, from: 4, to: 6 });
    expect(s.unpublished()).toEqual([4, 5, 6]);
    expect(s.rewinds()).toBe(1);
    expect(s.lines.at(-1)).toMatchObject({
      level: 30,
      chain: CHAIN,
      from: 4,
      to: 6,
      resent: 3,
      evicted: 0,
      msg: 'the service asked for audit events again: they are sent again',
    });
  });

  it('ignores, at debug, a request that is not one, a retained one, one for another chain and one past the last seq', () => {
    const s = site();
    s.deliver('not json');
    s.deliver({ chain: CHAIN, from: 6, to: 4 });
    s.deliver({ chain: CHAIN, from: 4, to: 6 }, true);
    s.deliver({ chain: OTHER_CHAIN, from: 4, to: 6 });
    s.deliver({ chain: CHAIN, from: 4, to: 11 });
    expect(s.unpublished()).toEqual([]);
    expect(s.rewinds()).toBe(0);
    expect(s.lines.map((l) => [l.level, l.msg])).toEqual([
      [20, 'audit resend request ignored: it is not one'],
      [20, 'audit resend request ignored: it is not one'],
      [20, 'audit resend request ignored: it is retained (a request is never retained)'],
      [20, "audit resend request ignored: it names another chain than this log's"],
      [20, "audit resend request ignored: it names seqs past this log's last"],
    ]);
    expect(s.lines[1]).toMatchObject({ problem: 'to: must not be below from' });
  });

  it('applies at most one request per chain every 10 s', () => {
    const s = site();
    s.deliver({ chain: CHAIN, from: 2, to: 2 });
    s.time.mono += RESEND_EVERY_MS - 1;
    s.deliver({ chain: CHAIN, from: 3, to: 3 });
    expect(s.unpublished()).toEqual([2]);
    expect(s.lines.at(-1)).toMatchObject({ level: 20, msg: 'audit resend request ignored: one was applied less than 10 s ago' });
    s.time.mono += 1;
    s.deliver({ chain: CHAIN, from: 3, to: 3 });
    expect(s.unpublished()).toEqual([2, 3]);
    expect(s.rewinds()).toBe(2);
  });

  it('says how many of the seqs asked for the log no longer holds (evicted): those cannot be sent again', () => {
    // 30 events in a window of 10: the published ones behind it are gone.
    const s = site({ count: 30, maxEvents: 10 });
    const held = s.log.since(0).map((e) => e.seq);
    expect(held[0]).toBeGreaterThan(15);
    s.deliver({ chain: CHAIN, from: 11, to: 25 });
    const resent = held.filter((seq) => seq >= 11 && seq <= 25);
    expect(s.unpublished()).toEqual(resent);
    expect(s.lines.at(-1)).toMatchObject({
      level: 30,
      resent: resent.length,
      evicted: 15 - resent.length,
      msg: `the service asked for audit events again: ${15 - resent.length} of them are no longer in this log (evicted) and cannot be sent again`,
    });
  });
});
