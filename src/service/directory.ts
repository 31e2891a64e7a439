import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { DirectoryVersion } from '../protocol/directory.js';
import { CoalescedReads } from '../util/coalescedReads.js';
import { DirectoryHistory, RESTORE_AWAITS_ACCEPTANCE, type PendingRestore } from './directoryHistory.js';
import { LevelStore, type DirectoryLevel, type DirectoryResourceGroup } from './levels.js';
import { DirectoryUsers, type DoorUser, type DoorUserReader } from './directoryUsers.js';
import type { SqlDb, SqlQueries } from './sql/sqlDb.js';
import type { UserStore } from './users.js';

/** Users read and fingerprinted at a time when the revision is brought up to date (a bound on memory). */
const REFRESH_BATCH = 2000;
/** Entries written by one statement (3 parameters each: far under either engine's limit). */
const UPSERT_ROWS = 500;

/** The revision with its history and tag (protocol/directory.ts) and when it was issued. */
export type DirectoryRevision = DirectoryVersion & { history: string; at: string };

/**
 * What a GET /directory is answered with: the current revision, and either everything (`full`) or the changes after
 * `since`. Two requests with the same plan get the same bytes (directoryBytes.ts).
 */
export interface DirectoryPlan {
  version: DirectoryRevision;
  /** true: every user is listed (no `since`, a `since` this service never issued, another history or tag); false: only changes. */
  full: boolean;
  /** The caller's revision, for a delta; null for everything. */
  since: number | null;
}

/** What the body of a plan holds, to be read a batch at a time (directoryBody.ts). */
export interface DirectoryContents {
  /** The users to list, as sorted email_ids (every active user, or those changed after `since`). */
  ids: number[];
  read: DoorUserReader;
  /** The ids removed after `since` (none in a full answer). */
  removed: number[];
  /** The access levels (POST /policies), in every answer, full or not: sorted by name, doors resolved. */
  levels: DirectoryLevel[];
  /** Every resource group, sorted by name (an agent's own config levels may name one). */
  resource_groups: DirectoryResourceGroup[];
  /** The restore awaiting acceptance, in every answer while it does (the answer's `restore`); null: none. */
  restore: { detected_at: string; reason: string } | null;
}

const fingerprint = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('base64url');
/** The levels and resource groups of a database that has none: what an upgraded database without either holds. */
const NO_LEVELS = fingerprint({ levels: [], resource_groups: [] });

/** The current revision, its history and tag, joined to directory_history's one row (the query's FROM). */
const REVISION_COLUMNS = `r.revision, r.at, h.history, t.tag FROM directory_history h
  LEFT JOIN directory_revision r ON r.id = 1 LEFT JOIN directory_tags t ON t.revision = r.revision`;

type RevisionRow = { revision: number | null; at: string | null; history: string; tag: string | null };

function revisionOf(row: RevisionRow | undefined): DirectoryRevision {
  const revision = row?.revision ?? 0;
  return { revision, at: row?.at ?? new Date(0).toISOString(), history: row!.history, tag: revision === 0 ? null : (row?.tag ?? null) };
}

/** What a plan is made from (Directory.planState). */
interface PlanState {
  pending: boolean;
  current: DirectoryRevision;
  /** The tag this database issued with the caller's `since`; null when none is kept, or no `since`. */
  sinceTag: string | null;
}
/** A plan without `since` (no revision is negative). */
const NO_SINCE = -1;
/** Never given out: readPlanStates answers every `since` it is asked. */
const NO_PLAN_STATE: PlanState = { pending: true, current: { revision: 0, at: new Date(0).toISOString(), history: '', tag: null }, sinceTag: null };

/** The current revision with its history and tag, as the database holds it (any process's). */
export async function readRevision(db: SqlQueries): Promise<DirectoryRevision> {
  return revisionOf(await db.get<RevisionRow>(`SELECT ${REVISION_COLUMNS} WHERE h.id = 1`));
}

/**
 * The directory revision of the reference service (an extension beside the seed's API, see
 * docs/reference-service.md): every user as the doors see them (GET /multipleusers item with user_tag, GET /user
 * detail), fingerprinted. `advance`, inside each change's transaction, fingerprints the users the database marked
 * pending (directory_pending, kept by triggers: migrations.ts) and gives those that changed, and those removed,
 * the next revision; the agents then fetch only those (GET /directory?since=REV). The revision lives in the
 * database, so every service process on it answers the same one.
 */
export class Directory {
  private readonly history: DirectoryHistory;
  private readonly doorUsers: DirectoryUsers;
  /** Users fingerprinted by this process so far. */
  private fingerprinted = 0;
  /** The plans' reads of the revision asked for while one is at the database, as one (coalescedReads.ts). */
  private readonly planReads = new CoalescedReads<number, PlanState>((sinces) => this.readPlanStates(sinces), NO_PLAN_STATE);

  constructor(
    private readonly db: SqlDb,
    users: UserStore,
    /**
     * Called inside the transaction of every advance that moved the revision, and of a renewed history: the
     * revision to publish (the publisher's queue is written in the same transaction).
     */
    private readonly onAdvance: (revision: DirectoryRevision) => Promise<void> = async () => undefined,
    private readonly logger?: Logger,
    /** The access levels and resource groups (its resources say which ids are computers). */
    private readonly levels: LevelStore = new LevelStore(db),
    /** The history's mark file (directoryHistory.ts), null for none. */
    markFile: string | null = null,
  ) {
    this.history = new DirectoryHistory(db, markFile, logger);
    this.doorUsers = new DirectoryUsers(db, users);
  }

  /**
   * Before anyone is answered: a database restored from a backup holds less than the service had issued (its
   * history is renewed), and whatever is pending (a change made beside the service, the upgrade that brought
   * directory_pending) gets its revision. Returns whether the revision moved.
   */
  async start(now: number): Promise<boolean> {
    await this.history.checkAtStart(await this.revision(), now);
    return (await this.refresh(now)).changed;
  }

  revision(): Promise<DirectoryRevision> {
    return readRevision(this.db);
  }

  /** Each user's fingerprint: what a door decides on (and the names and e-mail it shows). */
  private static fingerprintOf(user: DoorUser): string {
    const { item, detail } = user;
    // Status, tag, groups, policies, cards with their validity dates (plus the names and e-mail it shows). An undated
    // card fingerprints as before the dates existed.
    return fingerprint({
      ad_status: item.ad_status,
      user_tag: item.user_tag,
      groups: item.groups,
      user_id: item.user_id,
      email: item.email,
      name: item.name,
      policies: detail.policies,
      smartcards: detail.smartcards,
    });
  }

  /** Users fingerprinted by this process since it started (the metrics' counter): the cost of the changes. */
  usersFingerprinted(): number {
    return this.fingerprinted;
  }

  /** Brings the revision up to date in a transaction of its own (at start; a change made beside the service). */
  refresh(now: number): Promise<{ revision: number; changed: boolean }> {
    return this.db.transaction(() => this.advance(now));
  }

  /**
   * Inside the caller's transaction (the change's own): fingerprints the pending users a batch at a time, gives
   * those that changed (and those no longer active) the next revision, takes them off the list, and compares the
   * levels' fingerprint; the revision moves when anything a door sees moved. A change costs what it changed, not a
   * pass over every user. Returns the revision and whether it moved.
   */
  async advance(now: number): Promise<{ revision: number; changed: boolean }> {
    const db = this.db;
    const current = (await db.value<number>('SELECT revision FROM directory_revision WHERE id = 1')) ?? 0;
    const next = current + 1;
    let changed = false;
    const pendingCount = (await db.value<number>('SELECT count(*) FROM directory_pending')) ?? 0;
    if (pendingCount > 0) {
      const read = await this.doorUsers.reader(pendingCount);
      for (let after = Number.MIN_SAFE_INTEGER; ; ) {
        const batch = await db.column<number>('SELECT email_id FROM directory_pending WHERE email_id > ? ORDER BY email_id LIMIT ?', [after, REFRESH_BATCH]);
        if (batch.length === 0) break;
        after = batch[batch.length - 1]!;
        const json = JSON.stringify(batch);
        const stored = await db.all<{ email_id: number; hash: string; removed: number }>(
          `SELECT email_id, hash, removed FROM directory_entries WHERE email_id ${db.inJsonIds}`,
          [json],
        );
        const known = new Map(stored.map((r) => [r.email_id, r]));
        const active = new Set<number>();
        const moved: Array<[number, string]> = [];
        for (const user of await read(batch)) {
          active.add(user.emailId);
          this.fingerprinted++;
          const hash = Directory.fingerprintOf(user);
          const before = known.get(user.emailId);
          if (before && before.hash === hash && before.removed === 0) continue;
          moved.push([user.emailId, hash]);
        }
        // Many rows a statement: at PostgreSQL one round trip per UPSERT_ROWS users, not one per user.
        for (let i = 0; i < moved.length; i += UPSERT_ROWS) {
          const rows = moved.slice(i, i + UPSERT_ROWS);
          await db.run(
            `INSERT INTO directory_entries (email_id, hash, rev, removed) VALUES ${rows.map(() => '(?, ?, ?, 0)').join(', ')}
             ON CONFLICT (email_id) DO UPDATE SET hash = excluded.hash, rev = excluded.rev, removed = 0`,
            rows.flatMap(([emailId, hash]) => [emailId, hash, next]),
          );
        }
        if (moved.length > 0) changed = true;
        // A pending id that is no longer an active user (removed, by the API or another process): its entry, if live.
        const inactive = batch.filter((id) => !active.has(id) && known.get(id)?.removed === 0);
        if (inactive.length > 0) {
          const gone = await db.run(`UPDATE directory_entries SET removed = 1, rev = ? WHERE removed = 0 AND email_id ${db.inJsonIds}`, [
            next,
            JSON.stringify(inactive),
          ]);
          if (gone.changes > 0) changed = true;
        }
        await db.run(`DELETE FROM directory_pending WHERE email_id ${db.inJsonIds}`, [json]);
      }
    }
    // The levels and resource groups have one fingerprint for all: any change to them is a new revision (the
    // answers carry them whole, so no per-level bookkeeping is needed).
    const levelsHash = fingerprint(await this.levels.forDirectory());
    const storedLevels = await db.value<string>('SELECT hash FROM directory_levels WHERE id = 1');
    if (levelsHash !== (storedLevels ?? NO_LEVELS)) changed = true;
    if (levelsHash !== storedLevels) {
      await db.run('INSERT INTO directory_levels (id, hash) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET hash = excluded.hash', [levelsHash]);
    }
    if (!changed) return { revision: current, changed: false };
    await this.issue(next, now);
    return { revision: next, changed: true };
  }

  /** Revision `next` with its tag, recorded in the mark once committed and owed to the doors (onAdvance). */
  private async issue(next: number, now: number): Promise<DirectoryRevision> {
    await this.db.run(
      'INSERT INTO directory_revision (id, revision, at) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET revision = excluded.revision, at = excluded.at',
      [next, new Date(now).toISOString()],
    );
    await this.history.issueTag(next);
    const issued = await this.revision();
    this.db.afterCommit(() => this.history.record(issued));
    await this.onAdvance(issued);
    return issued;
  }

  /**
   * Inside the caller's transaction: the next revision, though no user moved, for a change of the answers
   * themselves (a restore accepted: its `restore` member goes). Published as advance's are.
   */
  async issueRevision(now: number): Promise<DirectoryRevision> {
    const current = (await this.db.value<number>('SELECT revision FROM directory_revision WHERE id = 1')) ?? 0;
    return this.issue(current + 1, now);
  }

  /** The restore awaiting acceptance (directoryHistory.ts), or null. */
  pendingRestore(): Promise<PendingRestore | null> {
    return this.history.pendingRestore();
  }

  /**
   * Inside the caller's transaction: the pending restore accepted, and the revision that answers without it
   * issued, so the doors take the restored directory. null when no restore awaited acceptance.
   */
  async acceptRestore(now: number): Promise<DirectoryRevision | null> {
    if (!(await this.history.acceptRestore())) return null;
    return this.issueRevision(now);
  }

  /** Whether anything waits for a revision (a change made beside the service, or one whose advance failed). */
  private async pending(): Promise<boolean> {
    return (await this.db.value('SELECT 1 FROM directory_pending LIMIT 1')) !== undefined;
  }

  /** Brings the revision up to date when users wait for one; otherwise costs one indexed read. */
  async refreshIfPending(now: number): Promise<void> {
    if (await this.pending()) await this.refresh(now);
  }

  /**
   * Whether a caller holding `since` (of `held`'s history and tag, when it says) can be given a delta. A `since`
   * this database never issued, or a tag that is not the one it issued, means this database's history went back
   * (restored from a copy, the mark file with it): the history is renewed, so every door learns it.
   */
  private async deltaPossible(
    since: number,
    held: { history?: string; tag?: string },
    current: DirectoryRevision,
    /** The tag this database issued with `since` (read with the plan), null for none kept. */
    sinceTag: string | null,
    now: number,
  ): Promise<'delta' | 'full' | 'renewed'> {
    if (held.history !== undefined && held.history !== current.history) return 'full'; // another history: everything
    let why: string | null = null;
    if (since > current.revision) why = `a caller holds revision ${since}, above the ${current.revision} this database has issued`;
    else if (held.tag !== undefined) {
      const issued = since === current.revision ? current.tag : sinceTag;
      // No tag kept for it (issued before tags, or long ago): everything, to be safe, but nothing says it went back.
      if (issued === null) return 'full';
      if (issued !== held.tag) why = `a caller holds revision ${since} with another tag than this database issued`;
    }
    if (why === null) return 'delta';
    const reason = why;
    const renewed = await this.db.transaction(async () => {
      const history = await this.history.renew(`went back: ${reason}`, now, current);
      await this.onAdvance(await this.revision());
      return history;
    });
    this.logger?.warn(
      { since, revision: current.revision, oldHistory: current.history, newHistory: renewed },
      `the directory went back (${why}): its history is renewed and every door syncs in full. ${RESTORE_AWAITS_ACCEPTANCE}`,
    );
    return 'renewed';
  }

  /**
   * In one read: whether users wait for a revision, the current revision with its history and tag, and the tags
   * this database issued with each of `sinces` (none kept: absent). At PostgreSQL a round trip, which a storm of
   * 1,000 doors would multiply: the plans asked for meanwhile share one (`planReads`).
   */
  private async readPlanStates(sinces: number[]): Promise<Map<number, PlanState>> {
    const rows = await this.db.all<RevisionRow & { since: number | null; since_tag: string | null; pending: number }>(
      `SELECT (SELECT count(*) FROM (SELECT 1 FROM directory_pending LIMIT 1) p) AS pending, s.revision AS since, s.tag AS since_tag,
         ${REVISION_COLUMNS} LEFT JOIN directory_tags s ON s.revision ${this.db.inJsonIds} WHERE h.id = 1`,
      [JSON.stringify(sinces)],
    );
    const pending = Number(rows[0]?.pending ?? 0) > 0;
    const current = revisionOf(rows[0]);
    const tags = new Map(rows.filter((r) => r.since !== null).map((r) => [r.since!, r.since_tag]));
    return new Map(sinces.map((since) => [since, { pending, current, sinceTag: tags.get(since) ?? null }]));
  }

  private async planState(since: number | undefined): Promise<PlanState> {
    const key = since ?? NO_SINCE;
    if (this.db.inTransaction()) return (await this.readPlanStates([key])).get(key)!;
    return this.planReads.read(key);
  }

  /**
   * What a caller holding `since` (of `held`'s history and tag) is answered: everything (since undefined, a revision
   * this service never reached, another history or tag), or the changes after `since`. Brings the revision up to
   * date first when something is pending, so the plan's version is the one the answer's bytes are built for.
   */
  async plan(since: number | undefined, now: number, held: { history?: string; tag?: string } = {}): Promise<DirectoryPlan> {
    let state = await this.planState(since);
    if (state.pending) {
      await this.refresh(now);
      state = await this.planState(since);
    }
    const { current } = state;
    const answer = since === undefined ? 'full' : await this.deltaPossible(since, held, current, state.sinceTag, now);
    // The revision is read again only when the history was renewed meanwhile.
    const version = answer === 'renewed' ? await this.revision() : current;
    return answer === 'delta' ? { version, full: false, since: since as number } : { version, full: true, since: null };
  }

  /**
   * The users, removals, levels and pending restore of a plan's answer, read now (the users themselves a batch at a time by the
   * caller: each is read as it is then, which is the plan's revision or later, never earlier; a user changed in
   * between is in the next delta again).
   */
  async contents(plan: DirectoryPlan): Promise<DirectoryContents> {
    const ids =
      plan.since === null
        ? await this.doorUsers.activeIds()
        : await this.db.column<number>('SELECT email_id FROM directory_entries WHERE rev > ? AND removed = 0 ORDER BY email_id', [plan.since]);
    const removed =
      plan.since === null
        ? []
        : await this.db.column<number>('SELECT email_id FROM directory_entries WHERE rev > ? AND removed = 1 ORDER BY email_id', [plan.since]);
    const pending = await this.history.pendingRestore();
    const restore = pending === null ? null : { detected_at: pending.detectedAt, reason: pending.reason };
    return { ids, read: await this.doorUsers.reader(ids.length), removed, ...(await this.levels.forDirectory()), restore };
  }
}
