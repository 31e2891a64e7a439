import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { openStateDatabase } from '../../src/store/database.js';
import { EventLog } from '../../src/store/eventLog.js';
import { PendingWrites } from '../../src/store/pendingWrites.js';
import { AuditLogSyslogSource, SyslogCursor } from '../../src/store/syslogSource.js';
import { systemTimers } from '../../src/util/clock.js';
import { DOOR_UUID, tempDir } from '../support/cli.js';

// The agent's syslog export on a real state.db: an event the receiver has not had is never evicted (agent.maxEvents),
// and the cursor outlives the process.

const tmp = tempDir('door-agent-syslog-cursor-');
afterAll(tmp.cleanup);
const AT0 = Date.parse('2026-11-24T09:00:00.000Z');

function open(file: string) {
  const db = openStateDatabase(file);
  const writes = new PendingWrites({ timers: systemTimers, logger: pino({ level: 'silent' }) });
  const cursor = new SyslogCursor(db, writes);
  const log = new EventLog(db, { agentId: 'gate-pi', maxEvents: 1000, keepFrom: () => cursor.nextUnsent() });
  const source = new AuditLogSyslogSource({ events: () => log, cursor: () => cursor, agentId: 'gate-pi' });
  return { db, cursor, log, source };
}

const fill = (log: EventLog, db: ReturnType<typeof openStateDatabase>, count: number, from: number) =>
  db.transaction(() => {
    for (let i = 0; i < count; i++) log.append({ type: 'access_denied', door: DOOR_UUID, at: AT0 + from + i, data: { reason: 'unknown_credential' } });
  })();

describe("the agent's syslog cursor", () => {
  it('keeps every event after it past maxEvents, lets eviction go on once they are confirmed, and is there after a restart', async () => {
    const file = join(tmp.path, 'state.db');
    const first = open(file);
    fill(first.log, first.db, 2500, 0);
    // Nothing sent: nothing evicted, whatever maxEvents says.
    expect(first.log.stats().evicted).toBe(0);
    const rows = await first.source.after(0, 3);
    expect(rows.map((r) => [r.cursor, r.agent, r.event.type])).toEqual([
      [1, 'gate-pi', expect.any(String)],
      [2, 'gate-pi', expect.any(String)],
      [3, 'gate-pi', expect.any(String)],
    ]);
    const lastSeq = first.log.stats().lastSeq;
    const confirmedSeq = lastSeq - 300;
    await first.source.confirmed(confirmedSeq);
    fill(first.log, first.db, 50, 2500);
    const stats = first.log.stats();
    // Past the window and sent: evicted now; every event after the cursor still there.
    expect(stats.evicted).toBeGreaterThan(0);
    const kept = first.log.since(confirmedSeq, 10_000).map((e) => e.seq);
    expect(kept[0]).toBe(confirmedSeq + 1);
    expect(kept.length).toBe(stats.lastSeq - confirmedSeq);
    first.db.close();

    const second = open(file);
    expect(await second.source.confirmedCursor()).toBe(confirmedSeq);
    expect((await second.source.after(confirmedSeq, 1))[0]!.cursor).toBe(confirmedSeq + 1);
    second.db.close();
  });
});
