import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { OutboxPublisher } from '../../src/mqtt/outboxPublisher.js';
import { openStateDatabase } from '../../src/store/database.js';
import { EventLog, type WireEvent } from '../../src/store/eventLog.js';
import { systemClock } from '../../src/util/clock.js';
import { tempDir } from '../support/cli.js';
import { waitUntil } from '../support/daemon.js';
import { sleep } from '../support/wait.js';
import { ManualTime } from '../support/manualTime.js';

const tmp = tempDir('door-agent-outbox-');
afterAll(tmp.cleanup);
let n = 0;

function setup(publish: (e: WireEvent) => Promise<void>) {
  const db = openStateDatabase(join(tmp.path, `o${n++}.db`));
  const log = new EventLog(db, { agentId: 'o', maxEvents: 1000 });
  const publisher = new OutboxPublisher(log, publish, { logger: pino({ level: 'silent' }), clock: systemClock });
  const append = () => log.append({ type: 'exit_request', door: 'd', at: Date.now() });
  return { db, log, publisher, append };
}

describe('OutboxPublisher', () => {
  it('publishes in order and marks only acknowledged events', async () => {
    const sent: number[] = [];
    const t = setup(async (e) => void sent.push(e.seq));
    for (let i = 0; i < 5; i++) t.append();
    t.publisher.start();
    await waitUntil(() => t.log.stats().unpublished === 0, 2000, 'drained');
    t.append();
    t.publisher.kick();
    await waitUntil(() => sent.length === 7, 2000, 'the new one');
    expect(sent).toEqual([1, 2, 3, 4, 5, 6, 7]); // 1: the audit chain's start (docs/audit.md), an event too
    t.publisher.stop();
    t.db.close();
  });

  it('a second start (a reconnect while the first loop waits) never strands new events', async () => {
    const sent: number[] = [];
    const t = setup(async (e) => void sent.push(e.seq));
    t.publisher.start();
    t.publisher.start();
    await sleep(20);
    t.append();
    t.publisher.kick();
    await waitUntil(() => sent.includes(2), 2000, 'published after a double start'); // 1: the chain's start
    t.publisher.stop();
    t.db.close();
  });

  it('an event the broker refuses (PUBACK reason code >= 0x80) stays unpublished, does not stop the other topics, and goes out with backoff once accepted', async () => {
    const sent: number[] = [];
    const attempts: number[] = [];
    let denied = true;
    const time = new ManualTime();
    const db = openStateDatabase(join(tmp.path, `o${n++}.db`));
    const log = new EventLog(db, { agentId: 'o', maxEvents: 1000 });
    const publisher = new OutboxPublisher(
      log,
      async (e) => {
        attempts.push(e.seq);
        if (denied && e.door === 'refused-door') throw Object.assign(new Error('Not authorized'), { code: 0x87 });
        sent.push(e.seq);
      },
      { logger: pino({ level: 'silent' }), clock: systemClock, timers: time, random: () => 0 },
    );
    for (const door of ['a', 'refused-door', 'a', 'refused-door', 'b']) log.append({ type: 'exit_request', door, at: Date.now() });
    publisher.start();
    await waitUntil(() => log.stats().unpublished === 2, 2000, 'the other topics drained past the refused one');
    // Seq 1 is the audit chain's start (no door: the agent's topic); the doors' events are 2 to 6.
    expect(sent).toEqual([1, 2, 4, 6]);
    expect(attempts.filter((seq) => seq === 3)).toHaveLength(1); // each event tried once per pass
    expect(log.since(0).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]); // kept, not marked published
    const tries = () => attempts.filter((seq) => seq === 3).length;
    time.advance(1999);
    await sleep(50);
    expect(tries()).toBe(1);
    time.advance(1); // 2 s: one more try of the refused topic, refused again
    await waitUntil(() => tries() === 2, 2000, 'first retry');
    expect(log.stats().unpublished).toBe(2);
    time.advance(3999); // then 4 s
    await sleep(50);
    expect(tries()).toBe(2);
    denied = false; // the ACL is fixed
    time.advance(1);
    await waitUntil(() => log.stats().unpublished === 0, 2000, 'sent once accepted');
    expect(sent).toEqual([1, 2, 4, 6, 3, 5]);
    publisher.stop();
    db.close();
  });

  it('a failed publish leaves the event unpublished for the next start', async () => {
    let fail = true;
    const t = setup(async () => {
      if (fail) throw new Error('connection lost');
    });
    t.append();
    t.publisher.start();
    await sleep(50);
    expect(t.log.stats().unpublished).toBe(2); // the event and the audit chain's start before it
    fail = false;
    t.publisher.start();
    await waitUntil(() => t.log.stats().unpublished === 0, 2000, 'sent after reconnect');
    t.publisher.stop();
    t.db.close();
  });
});
