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
    await waitUntil(() => sent.length === 6, 2000, 'the new one');
    expect(sent).toEqual([1, 2, 3, 4, 5, 6]);
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
    await waitUntil(() => sent.includes(1), 2000, 'published after a double start');
    t.publisher.stop();
    t.db.close();
  });

  it('an event the broker refuses (PUBACK reason code >= 0x80) does not stop the later ones', async () => {
    const sent: number[] = [];
    const t = setup(async (e) => {
      if (e.seq === 2) throw Object.assign(new Error('Not authorized'), { code: 0x87 });
      sent.push(e.seq);
    });
    for (let i = 0; i < 4; i++) t.append();
    t.publisher.start();
    await waitUntil(() => t.log.stats().unpublished === 0, 2000, 'drained past the refused one');
    expect(sent).toEqual([1, 3, 4]);
    expect(t.log.since(0).map((e) => e.seq)).toEqual([1, 2, 3, 4]); // still in the audit log
    t.publisher.stop();
    t.db.close();
  });

  it('a failed publish leaves the event unpublished for the next start', async () => {
    let fail = true;
    const t = setup(async () => {
      if (fail) throw new Error('connection lost');
    });
    t.append();
    t.publisher.start();
    await sleep(50);
    expect(t.log.stats().unpublished).toBe(1);
    fail = false;
    t.publisher.start();
    await waitUntil(() => t.log.stats().unpublished === 0, 2000, 'sent after reconnect');
    t.publisher.stop();
    t.db.close();
  });
});
