import { changeStamp } from './changeStamp.js';
import type { PinMasking } from './pinMasking.js';
import type { SqlDb } from './sql/sqlDb.js';
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
 * database's change stamp (changeStamp.ts: it moves with every commit, of this process or another, whatever the
 * table or the code path) is compared with the one the cached answers were read at; any difference drops every
 * cached answer. An answer is read in one transaction with the stamp it is kept under (one snapshot of the
 * database on both engines), so the very next GET after a committed change is built from the database: a
 * suspended or removed user can never be served from before the change. A change that reaches the answers without
 * a write to this database (none today) must call `invalidate()`; so may any code that wants to be explicit. The
 * price of counting every write: a write that changes no answer (a directory revision, a mail marked sent, an API
 * key) drops them too, and the next GET builds them again (the list of 10,000 users: about 50-90 ms, once per change
 * and variant asked for).
 */
class UserAnswers {
  private readonly users: UserStore;
  /** The change stamp the cached answers were read at (null: nothing cached). */
  private builtAt: string | null = null;
  /** The active users and every membership, read once for all the list variants built at the same stamp. */
  private snapshot: { rows: UserRow[]; groups: Map<number, string[][]> } | null = null;
  private readonly lists = new Map<string, Buffer>();
  /** By email_id, and by `-email_id - 1` for the answer with PINs masked. */
  private readonly details = new Map<number, Buffer>();

  constructor(private readonly db: SqlDb) {
    this.users = new UserStore(db);
  }

  /** Drops every cached answer: the next GET reads the database again. */
  invalidate(): void {
    this.builtAt = null;
    this.snapshot = null;
    this.lists.clear();
    this.details.clear();
  }

  /**
   * The stamp of the database now, when the cached answers may be used: they are, while it is the one they were
   * read at. Null inside the caller's transaction, after dropping every cached answer: nothing is cached from
   * there, what it wrote may still be rolled back.
   */
  private async stampNow(): Promise<string | null> {
    if (this.db.inTransaction()) {
      this.invalidate();
      return null;
    }
    return changeStamp(this.db);
  }

  /** `read` in one transaction, with the stamp of what it read. */
  private async readAt<T>(read: () => Promise<T>): Promise<{ stamp: string; value: T }> {
    return this.db.transaction(async () => ({ stamp: await changeStamp(this.db), value: await read() }));
  }

  /**
   * Whether answers read at `stamp` may be kept: the cached ones are dropped unless they were read at it too. A
   * request that read before another one may finish after it: its answers then replace the other's, and the next
   * GET, at the stamp of the database then, drops them if they are older.
   */
  private keepAt(stamp: string): void {
    if (this.builtAt === stamp) return;
    this.invalidate();
    this.builtAt = stamp;
  }

  /** The JSON of GET /multipleusers: `withEmail` adds the e-mail to `name`; `tag` keeps the users of that tag. */
  async listJson(withEmail: boolean, tag?: 'USER' | 'GUEST'): Promise<Buffer> {
    const key = `${withEmail ? 1 : 0}${tag ?? ''}`;
    const now = await this.stampNow();
    const current = now !== null && now === this.builtAt;
    const cached = current ? this.lists.get(key) : undefined;
    if (cached !== undefined) return cached;
    const readSnapshot = async () => ({ rows: await this.users.list(), groups: await this.users.allGroups() });
    if (now === null) return this.listOf(await readSnapshot(), withEmail, tag);
    let stamp = now;
    let snapshot = current ? this.snapshot : null;
    if (snapshot === null) {
      const read = await this.readAt(readSnapshot);
      stamp = read.stamp;
      snapshot = read.value;
    }
    const json = this.listOf(snapshot, withEmail, tag);
    this.keepAt(stamp);
    this.snapshot = snapshot;
    this.lists.set(key, json);
    return json;
  }

  private listOf(snapshot: { rows: UserRow[]; groups: Map<number, string[][]> }, withEmail: boolean, tag?: 'USER' | 'GUEST'): Buffer {
    const rows = tag === undefined ? snapshot.rows : snapshot.rows.filter((u) => u.tag === tag);
    return utf8(JSON.stringify(rows.map((u) => this.users.listItem(u, withEmail, snapshot.groups))));
  }

  /**
   * The JSON of GET /user for an active user, or undefined when there is none with that email_id; with `pins`, its
   * PINs masked (cached apart from the answer in clear).
   */
  async detailJson(emailId: number, pins: PinMasking | null = null): Promise<Buffer | undefined> {
    const key = pins === null ? emailId : -emailId - 1;
    const now = await this.stampNow();
    const cached = now !== null && now === this.builtAt ? this.details.get(key) : undefined;
    if (cached !== undefined) return cached;
    const readDetail = async () => {
      const user = await this.users.get(emailId);
      return user ? this.users.detail(user) : undefined;
    };
    if (now === null) {
      const detail = await readDetail();
      return detail === undefined ? undefined : utf8(JSON.stringify(pins === null ? detail : pins.detail(detail)));
    }
    const read = await this.readAt(readDetail);
    if (read.value === undefined) return undefined;
    const json = utf8(JSON.stringify(pins === null ? read.value : pins.detail(read.value)));
    this.keepAt(read.stamp);
    if (this.details.size < MAX_CACHED_DETAILS) this.details.set(key, json);
    return json;
  }
}

const answersByDb = new WeakMap<SqlDb, UserAnswers>();

/** The one UserAnswers of a database: the GET handlers serve from it, and any code holding the database can invalidate it. */
export function userAnswers(db: SqlDb): UserAnswers {
  let answers = answersByDb.get(db);
  if (!answers) {
    answers = new UserAnswers(db);
    answersByDb.set(db, answers);
  }
  return answers;
}
