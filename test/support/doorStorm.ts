import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { sleep } from './wait.js';

const gunzipAsync = promisify(gunzip);

/** A GET /directory body as a door takes it: its version, whether it is everything, its users and removals. */
export interface DirectoryBody {
  revision: number;
  history: string;
  tag: string;
  full: boolean;
  users: Array<{ email_id: number }>;
  details: Record<string, unknown>;
  removed: number[];
}

/** The body's shape, checked as a door checks it before taking anything of it; a reason when it is not one. */
function notADirectory(body: unknown): string | null {
  const b = body as Partial<DirectoryBody> | null;
  if (typeof b !== 'object' || b === null) return 'not an object';
  if (!Number.isInteger(b.revision) || typeof b.history !== 'string' || typeof b.tag !== 'string' || typeof b.full !== 'boolean') return 'no version';
  if (!Array.isArray(b.users) || typeof b.details !== 'object' || b.details === null || !Array.isArray(b.removed)) return 'no users, details or removed';
  if (b.users.some((u) => !Number.isInteger(u?.email_id))) return 'a user without an email_id';
  if (Object.keys(b.details).length !== b.users.length) return `${b.users.length} users but ${Object.keys(b.details).length} details`;
  if (b.users.some((u) => b.details![String(u.email_id)] === undefined)) return 'a user without its detail';
  return null;
}

/** What a checked body says of itself. */
export interface BodySummary {
  revision: number;
  history: string;
  tag: string;
  full: boolean;
  users: number;
}

/**
 * The bodies the doors were given, by their SHA-1: a hundred doors given the same bytes hold the same directory, so
 * each distinct body is kept once, and parsed and checked once (the test's one thread does the work of a hundred
 * doors' CPUs).
 */
export class Bodies {
  private readonly texts = new Map<string, Buffer>();
  private readonly checked = new Map<string, BodySummary | string>();

  /** The body's key, after checking it as a door would: its summary, or why it is no directory. */
  take(bytes: Buffer): { key: string; summary: BodySummary | string } {
    const key = createHash('sha1').update(bytes).digest('hex');
    let summary = this.checked.get(key);
    if (summary === undefined) {
      try {
        const body = JSON.parse(bytes.toString('utf8')) as unknown;
        const wrong = notADirectory(body);
        const b = body as DirectoryBody;
        summary = wrong ?? { revision: b.revision, history: b.history, tag: b.tag, full: b.full, users: b.users.length };
      } catch (err) {
        summary = `the body is not complete JSON: ${(err as Error).message}`;
      }
      this.checked.set(key, summary);
      if (typeof summary !== 'string') this.texts.set(key, bytes);
    }
    return { key, summary };
  }

  /** The users a door holds after taking these bodies in order (a full one first): each user's fingerprint by email_id. */
  held(chain: readonly string[]): Map<number, string> {
    const users = new Map<number, string>();
    for (const key of chain) {
      const body = JSON.parse(this.texts.get(key)!.toString('utf8')) as DirectoryBody;
      if (body.full) users.clear();
      for (const user of body.users) users.set(user.email_id, JSON.stringify([user, body.details[String(user.email_id)]]));
      for (const id of body.removed) users.delete(id);
    }
    return users;
  }
}

/** How one GET /directory ended, as a door sees it. */
export type DirectoryOutcome =
  | { kind: 'answer'; key: string; summary: BodySummary }
  | { kind: 'refused'; status: number; retryAfterSeconds: number }
  /** No usable answer: the connection refused or cut, a body shorter than announced or not complete, another status. */
  | { kind: 'broken'; why: string };

/** What a door holds: the version, and the bodies it took since its last full one. */
export interface Held {
  revision: number;
  history: string;
  tag: string;
  chain: string[];
}

/**
 * One GET /directory as a door sends it (a DOOR key, gzip asked for, its own connection), read to the end and
 * checked before anything of it is taken: the status, the bytes against Content-Length, a complete gzip stream
 * (its length and CRC), complete JSON of the directory's shape with a detail for each user. A cut answer is
 * `broken`, never half taken. Like the agent's service.timeoutSeconds (10 s), a request silent for `silenceMs` is
 * given up.
 */
export function getDirectory(
  bodies: Bodies,
  baseUrl: string,
  key: string,
  held: Held | null,
  progress: StormProgress = { receiving: 0 },
  silenceMs = 10_000,
): Promise<DirectoryOutcome> {
  const query = held === null ? '' : `?since=${held.revision}&history=${held.history}&tag=${held.tag}`;
  return new Promise((resolve) => {
    let settled = false;
    let heard = 'nothing';
    let receiving = false;
    const done = (outcome: DirectoryOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (receiving) progress.receiving--;
      resolve(outcome);
    };
    let holding = false;
    const timer = setTimeout(function silence() {
      if (holding) return void timer.refresh(); // the door itself is not reading: not the service's silence
      req.destroy();
      done({ kind: 'broken', why: `silent for ${silenceMs} ms after ${heard}` });
    }, silenceMs);
    const req = request(
      `${baseUrl}/directory${query}`,
      { agent: false, headers: { authorization: `Bearer ${key}`, accept: 'application/json', 'accept-encoding': 'gzip' } },
      (res) => {
        const chunks: Buffer[] = [];
        let received = 0;
        heard = `HTTP ${res.statusCode}`;
        timer.refresh();
        res.on('data', (c: Buffer) => {
          if (!receiving && res.statusCode === 200) {
            receiving = true;
            progress.receiving++;
            if (progress.hold) {
              // Read no further until released: the service's answer stays under way (backpressure).
              holding = true;
              res.pause();
              void progress.hold.then(() => {
                holding = false;
                timer.refresh();
                res.resume();
              });
            }
          }
          chunks.push(c);
          received += c.length;
          heard = `HTTP ${res.statusCode} and ${received} bytes`;
          timer.refresh();
        });
        res.on('aborted', () => done({ kind: 'broken', why: `the answer was cut after ${received} bytes` }));
        res.on('error', (err) => done({ kind: 'broken', why: `the answer was cut after ${received} bytes: ${err.message}` }));
        res.on('end', () => {
          if (!res.complete) return done({ kind: 'broken', why: `the answer was cut after ${received} bytes` });
          const status = res.statusCode ?? 0;
          if (status === 503 || status === 429) {
            const seconds = Number(res.headers['retry-after']);
            return done(
              Number.isFinite(seconds) ? { kind: 'refused', status, retryAfterSeconds: seconds } : { kind: 'broken', why: `${status} without a Retry-After` },
            );
          }
          if (status !== 200) return done({ kind: 'broken', why: `HTTP ${status}` });
          const bytes = Buffer.concat(chunks);
          const announced = res.headers['content-length'];
          if (announced !== undefined && Number(announced) !== bytes.length) return done({ kind: 'broken', why: `${bytes.length} of ${announced} bytes` });
          clearTimeout(timer); // what remains is the door's own work
          const decoded = res.headers['content-encoding'] === 'gzip' ? gunzipAsync(bytes) : Promise.resolve(bytes);
          decoded.then(
            (text) => {
              const { key: bodyKey, summary } = bodies.take(text);
              done(typeof summary === 'string' ? { kind: 'broken', why: summary } : { kind: 'answer', key: bodyKey, summary });
            },
            (err: Error) => done({ kind: 'broken', why: `the body is not complete gzip: ${err.message}` }),
          );
        });
      },
    );
    req.on('error', (err) => done({ kind: 'broken', why: `no connection: ${err.message}` }));
    req.end();
  });
}

/** The doors' answers under way: begun (a first byte of a 200) and not yet ended. */
export interface StormProgress {
  receiving: number;
  /** While pending, a door that has its answer's first bytes reads no more of it (the answers stay under way). */
  hold?: Promise<void>;
}

/** A door's record of its attempts. */
export interface DoorRecord {
  held: Held | null;
  /** Every outcome that was not taken: why, in order. */
  broken: string[];
  refused: number;
  /** The users of the full answer first taken (before any delta). */
  firstFull: number | null;
}

export const newDoor = (): DoorRecord => ({ held: null, broken: [], refused: 0, firstFull: null });

/**
 * A door syncing as the agent does until it holds a directory (`untilRevision`: at least that one): GET
 * /directory (since what it holds, once it holds something), again after the Retry-After of a 503 (plus up to a
 * second), again after a short random wait when the answer was broken. Fails after `deadlineMs`.
 */
export async function syncDoor(
  bodies: Bodies,
  baseUrl: string,
  key: string,
  door: DoorRecord,
  options: { untilRevision?: number; progress?: StormProgress; deadlineMs?: number } = {},
): Promise<void> {
  const { untilRevision = 0, deadlineMs = 180_000 } = options;
  const started = Date.now();
  while (door.held === null || door.held.revision < untilRevision) {
    if (Date.now() - started > deadlineMs) throw new Error(`a door did not sync within ${deadlineMs} ms: ${door.broken.join('; ')}`);
    const outcome = await getDirectory(bodies, baseUrl, key, door.held, options.progress);
    if (outcome.kind === 'answer') {
      const { summary } = outcome;
      const chain = summary.full || door.held === null ? [outcome.key] : [...door.held.chain, outcome.key];
      door.held = { revision: summary.revision, history: summary.history, tag: summary.tag, chain };
      if (door.firstFull === null && summary.full) door.firstFull = summary.users;
    } else if (outcome.kind === 'refused') {
      door.refused++;
      await sleep(outcome.retryAfterSeconds * 1000 + Math.random() * 1000);
    } else {
      door.broken.push(outcome.why);
      await sleep(200 + Math.random() * 1300);
    }
  }
}
