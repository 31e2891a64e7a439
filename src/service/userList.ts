import type { Statement } from 'better-sqlite3';
import type { ServiceDb } from './database.js';
import type { PinMasking } from './pinMasking.js';
import { UserStore, type UserRow } from './users.js';

/** Past this many cached GET /user answers, further ones are computed each time (a bound on memory). */
const MAX_CACHED_DETAILS = 50_000;

/** The content type fastify gave these answers when it serialized them itself. */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

const encoder = new TextEncoder();
/** The UTF-8 bytes of a JSON text (TextEncoder: 2.5 ms for the 4 MB list, where Buffer.from took 13 ms). */
function utf8(json: string): Buffer {
  const bytes = encoder.encode(json);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * The answers of GET /multipleusers and GET /user, serialized once and served as the same bytes until the data
 * changes (issue 15 item 9: 10,000 users took 156 ms a request, read and serialized for every call).
 *
 * The list is built in a constant number of queries (the users, then every user-group membership), with the
 * list form of UserStore.listItem and the detail form of UserStore.detail, so the JSON is the very bytes the
 * handlers sent before. One answer is kept per (email flag, user_tag), one per user asked for with GET /user, as
 * its UTF-8 bytes: the socket takes a Buffer as it is, where a 4 MB string is measured, encoded and copied again for
 * every request (the bare fastify serving the list as a string spent 15 times the CPU of serving it as a Buffer).
 *
 * Invalidation does not rely on each write path remembering to call it: before any cached answer is used, the
 * connection's own change counter (`total_changes()`: every row any INSERT, UPDATE or DELETE of this process
 * touched, whatever the table or the code path) and SQLite's `PRAGMA data_version` (moves when another connection
 * or process commits: `sqlite3`, a second handle in a test) are compared with the ones the cache was built at;
 * any difference drops every cached answer. That check is synchronous with the read, so the very next GET after
 * a committed change is built from the database: a suspended or removed user can never be served from before
 * the change. A change that reaches the answers without a write to this database (none today) must call
 * `invalidate()`; so may any code that wants to be explicit. The price of counting every write: a write that
 * changes no answer (a directory revision, a mail marked sent, an API key) drops them too, and the next GET builds
 * them again (the list of 10,000 users: about 50-90 ms, once per change and variant asked for).
 */
class UserAnswers {
  private readonly users: UserStore;
  private readonly changes: Statement;
  private readonly dataVersion: Statement;
  /** The counters the cached answers were built at (null: nothing cached). */
  private builtAt: { changes: number; dataVersion: number } | null = null;
  /** The active users and every membership, read once for all the list variants built at the same counters. */
  private snapshot: { rows: UserRow[]; groups: Map<number, string[][]> } | null = null;
  private readonly lists = new Map<string, Buffer>();
  /** By email_id, and by `-email_id - 1` for the answer with PINs masked. */
  private readonly details = new Map<number, Buffer>();

  constructor(private readonly db: ServiceDb) {
    this.users = new UserStore(db);
    this.changes = db.prepare('SELECT total_changes()').pluck();
    this.dataVersion = db.prepare('PRAGMA data_version').pluck();
  }

  /** Drops every cached answer: the next GET reads the database again. */
  invalidate(): void {
    this.builtAt = null;
    this.snapshot = null;
    this.lists.clear();
    this.details.clear();
  }

  /**
   * Whether answers may be cached now, after dropping the cached ones if anything changed since they were built.
   * Nothing is cached inside an open transaction: what it wrote may still be rolled back.
   */
  private cacheable(): boolean {
    if (this.db.inTransaction) {
      this.invalidate();
      return false;
    }
    const now = { changes: this.changes.get() as number, dataVersion: this.dataVersion.get() as number };
    if (this.builtAt === null || this.builtAt.changes !== now.changes || this.builtAt.dataVersion !== now.dataVersion) {
      this.invalidate();
      this.builtAt = now;
    }
    return true;
  }

  /** The JSON of GET /multipleusers: `withEmail` adds the e-mail to `name`; `tag` keeps the users of that tag. */
  listJson(withEmail: boolean, tag?: 'USER' | 'GUEST'): Buffer {
    const cacheable = this.cacheable();
    const key = `${withEmail ? 1 : 0}${tag ?? ''}`;
    const cached = cacheable ? this.lists.get(key) : undefined;
    if (cached !== undefined) return cached;
    const snapshot = (cacheable ? this.snapshot : null) ?? { rows: this.users.list(), groups: this.users.allGroups() };
    const rows = tag === undefined ? snapshot.rows : snapshot.rows.filter((u) => u.tag === tag);
    const json = utf8(JSON.stringify(rows.map((u) => this.users.listItem(u, withEmail, snapshot.groups))));
    if (cacheable) {
      this.snapshot = snapshot;
      this.lists.set(key, json);
    }
    return json;
  }

  /**
   * The JSON of GET /user for an active user, or undefined when there is none with that email_id; with `pins`, its
   * PINs masked (cached apart from the answer in clear).
   */
  detailJson(emailId: number, pins: PinMasking | null = null): Buffer | undefined {
    const cacheable = this.cacheable();
    const key = pins === null ? emailId : -emailId - 1;
    const cached = cacheable ? this.details.get(key) : undefined;
    if (cached !== undefined) return cached;
    const user = this.users.get(emailId);
    if (!user) return undefined;
    const detail = this.users.detail(user);
    const json = utf8(JSON.stringify(pins === null ? detail : pins.detail(detail)));
    if (cacheable && this.details.size < MAX_CACHED_DETAILS) this.details.set(key, json);
    return json;
  }
}

const answersByDb = new WeakMap<ServiceDb, UserAnswers>();

/** The one UserAnswers of a database: the GET handlers serve from it, and any code holding the database can invalidate it. */
export function userAnswers(db: ServiceDb): UserAnswers {
  let answers = answersByDb.get(db);
  if (!answers) {
    answers = new UserAnswers(db);
    answersByDb.set(db, answers);
  }
  return answers;
}
