import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/service/sql/openPostgres.js';
import { tempDir } from '../support/cli.js';
import { seedUsers } from '../support/directorySeed.js';
import { Bodies, getDirectory, newDoor, syncDoor, type DoorRecord } from '../support/doorStorm.js';
import { ServiceCluster, type Answer } from '../support/serviceCluster.js';
import { sleep } from '../support/wait.js';

// Issue 52 item 5, the cold-start storm: three `door-agent service` processes from the built CLI, just started on
// one PostgreSQL database of 20,000 users, behind Debian's HAProxy with the shipped configuration. 100 doors ask
// for the whole directory at once through the balancer, each as the agent does (its own connection, gzip, a DOOR
// key; the body checked against its length, as complete gzip and complete JSON before anything is taken; again
// after a 503's Retry-After or a broken answer); changes are made meanwhile; one process is killed with -9 while
// it is sending the directory to some of them. Every door ends with the complete directory of the final revision,
// none took a cut answer, no change is lost.

const USERS = 20_000;
const DOORS = 100;
const tmp = tempDir('door-agent-cluster-storm-');
let cluster: ServiceCluster;

beforeAll(async () => {
  cluster = await ServiceCluster.start(tmp.path, {
    // The users straight into the database, as a bulk import would (their directory revision is given at start).
    seed: async (pg, database) => {
      const db = await openPostgres({ url: pg.url(database), passwordFile: pg.passwordFile, maxConnections: 2 }, {}, pino({ level: 'silent' }));
      try {
        await seedUsers(db, USERS);
      } finally {
        await db.close();
      }
    },
  });
}, 180_000);

afterAll(async () => {
  await cluster?.stop();
  tmp.cleanup();
});

/** The full GET /directory answers process `i` is sending now (its GET /status, asked directly); 0 when it is slow to say. */
async function answersInFlight(i: number): Promise<number> {
  try {
    const status = await cluster.call('GET', '/status', undefined, { via: i, timeoutMs: 15_000 });
    return (status.json as { in_flight: { directory_answers: number } }).in_flight.directory_answers;
  } catch {
    return 0; // a busy process (it reads the revision from the database): asked again
  }
}

/**
 * A change through the balancer, as an operator's script makes it: again after a 503's Retry-After, or when no
 * answer came (the process that had it was killed: 502, or the connection cut). Each change here sets a state,
 * so doing it twice is doing it once; `retryAnswers` are what a second try may answer when the first had been
 * applied before its answer was lost.
 */
async function change(method: string, path: string, body: unknown, retryAnswers: number[] = []): Promise<Answer> {
  for (let attempt = 0; ; attempt++) {
    let answer: Answer | null = null;
    try {
      answer = await cluster.call(method, path, body, { timeoutMs: 60_000 });
    } catch {
      answer = null; // the connection cut under it
    }
    if (answer?.status === 200 || (attempt > 0 && answer !== null && retryAnswers.includes(answer.status))) return answer;
    if (answer !== null && answer.status !== 503 && answer.status !== 502) throw new Error(`${method} ${path}: ${answer.status} ${answer.text}`);
    if (attempt > 20) throw new Error(`${method} ${path}: no answer after ${attempt} tries`);
    await sleep(answer?.status === 503 ? Number(answer.headers.get('retry-after')) * 1000 : 500);
  }
}

describe('a cold-start storm of 100 doors through HAProxy, one process killed with -9 in the middle', () => {
  it('every door ends with the complete directory of the final revision, none takes a cut answer, no change is lost', async () => {
    const victim = 1;
    const bodies = new Bodies();
    const doors: DoorRecord[] = Array.from({ length: DOORS }, newDoor);
    // The doors read the first bytes of their answers, then no more until the kill: the victim's answers are
    // still being sent when it dies, however slow or fast this machine is.
    let release = () => {};
    const progress = { receiving: 0, hold: new Promise<void>((resolve) => (release = resolve)) };
    const storm = Promise.all(doors.map((door) => syncDoor(bodies, cluster.url, cluster.doorKey, door, { progress })));

    // The kill: once the victim has the full directory under way for five doors or more, and doors are receiving
    // their answers' bytes (the processes build at once: the victim's doors are receiving theirs too).
    const killing = (async () => {
      const started = Date.now();
      try {
        while (progress.receiving < 5 || (await answersInFlight(victim)) < 5) {
          if (Date.now() - started > 60_000) throw new Error('the victim never sent the directory to five doors at once');
          await sleep(10);
        }
        await cluster.kill(victim);
      } finally {
        release();
      }
    })();

    // Changes meanwhile, through the balancer: four people invited, three cards changed, two people removed.
    const changes = (async () => {
      const invited = await change('POST', '/invites', {
        emails: Array.from({ length: 4 }, (_, i) => `storm${i}@example.org`),
        smartcards: Array.from({ length: 4 }, (_, i) => [{ number: String(9_100_000 + i), label: 'badge' }]),
        no_email: true,
      });
      for (const id of [5, 6, 7]) {
        await change('PUT', '/modifysmartcard', { email_id: id, smartcards: [{ number: String(9_200_000 + id), label: 'new badge' }] });
      }
      for (const id of [10, 11]) await change('DELETE', '/user', { email_id: id }, [400]);
      return invited;
    })();

    await Promise.all([killing, changes]);
    await storm;
    expect(cluster.processes[victim]!.process.child.signalCode).toBe('SIGKILL');

    // Every door took a full answer of a whole directory (20,000 users, give or take the changes made meanwhile).
    for (const door of doors) {
      expect(door.firstFull).toBeGreaterThanOrEqual(USERS - 2);
      expect(door.firstFull).toBeLessThanOrEqual(USERS + 4);
    }
    // The kill cut answers under way (or refused them before a byte: HAProxy's 502): those doors took nothing of
    // them and asked again. On a loaded machine a door may also give up a request silent for 10 s, as an agent does.
    const reasons = doors.flatMap((d) => d.broken);
    expect(reasons.filter((why) => /cut|HTTP 502/.test(why)).length, 'answers broken by the kill').toBeGreaterThan(0);
    expect(
      reasons.filter((why) => !/cut|not complete|of \d+ bytes|no connection|HTTP 502|silent for/.test(why)),
      reasons.join('\n'),
    ).toEqual([]);

    // The final revision: each door catches up from what it holds (as the revision message would have it do).
    const final = (await cluster.call('GET', '/status', undefined, { via: 0 })).json as { directory: { revision: number } };
    await Promise.all(doors.map((door) => syncDoor(bodies, cluster.url, cluster.doorKey, door, { untilRevision: final.directory.revision })));

    // What the database holds, read whole at the end: every change made during the storm is in it.
    const answer = await getDirectory(bodies, cluster.url, cluster.doorKey, null);
    if (answer.kind !== 'answer') throw new Error(`the final directory: ${JSON.stringify(answer)}`);
    const reference = answer.summary;
    const referenceUsers = bodies.held([answer.key]);
    expect(reference.revision).toBe(final.directory.revision);
    expect(referenceUsers.size).toBe(USERS + 4 - 2);
    for (const id of [10, 11]) expect(referenceUsers.has(id)).toBe(false);
    const db = await cluster.pg.client('door');
    try {
      const count = await db.query('SELECT count(*) AS n FROM users WHERE removed_at IS NULL');
      expect(Number(count.rows[0].n)).toBe(USERS + 4 - 2);
      const cards = await db.query<{ email_id: string; number: string }>(
        "SELECT email_id, number FROM smartcards WHERE number LIKE '91000__' OR number LIKE '92000__' ORDER BY number",
      );
      expect(cards.rows.map((r) => r.number)).toEqual(['9100000', '9100001', '9100002', '9100003', '9200005', '9200006', '9200007']);
      expect(cards.rows.slice(4).map((r) => Number(r.email_id))).toEqual([5, 6, 7]);
    } finally {
      await db.end();
    }
    // And every door holds exactly it: the same revision, the same users, each as the service has them (doors that
    // took the same bodies hold the same: each distinct sequence is worked out once).
    const differences = new Map<string, number[]>();
    for (const door of doors) {
      expect(door.held!.revision).toBe(reference.revision);
      expect(door.held!.tag).toBe(reference.tag);
      const chain = door.held!.chain.join(',');
      if (differences.has(chain)) continue;
      const users = bodies.held(door.held!.chain);
      const ids = new Set([...users.keys(), ...referenceUsers.keys()]);
      differences.set(
        chain,
        [...ids].filter((id) => users.get(id) !== referenceUsers.get(id)),
      );
    }
    expect([...differences.values()].flat()).toEqual([]);
  }, 300_000);
});
