import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { DirectoryVersion } from '../protocol/directory.js';
import type { ServiceDb } from './database.js';
import { preparedStatements } from './preparedStatements.js';
import { DirectoryHistory, markFileFor } from './directoryHistory.js';
import { LevelStore, type DirectoryLevel, type DirectoryResourceGroup } from './levels.js';
import { DirectoryUsers, type DoorUser, type DoorUserReader } from './directoryUsers.js';
import type { UserStore } from './users.js';

/** Users read and fingerprinted at a time when the revision is brought up to date (a bound on memory). */
const REFRESH_BATCH = 2000;

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
}

const fingerprint = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('base64url');
/** The levels and resource groups of a database that has none: what an upgraded database without either holds. */
const NO_LEVELS = fingerprint({ levels: [], resource_groups: [] });

/**
 * The directory revision of the reference service (an extension beside the seed's API, see
 * docs/reference-service.md): every user as the doors see them (GET /multipleusers item with user_tag, GET /user
 * detail), fingerprinted. `refresh` gives the users that changed, and the users removed, the next revision; the
 * agents then fetch only those (GET /directory?since=REV).
 */
export class Directory {
  /** A change went through since the last refresh (set by the server after each successful change). */
  private dirty = true;
  private readonly history: DirectoryHistory;
  private readonly doorUsers: DirectoryUsers;
  private readonly sql: ReturnType<typeof preparedStatements>;

  constructor(
    private readonly db: ServiceDb,
    users: UserStore,
    /**
     * Called after every refresh that advanced the revision, whoever asked for it: the change timer, or an agent's
     * GET /directory that came first (the push must not be lost to the agent that happened to ask); and when the
     * history is renewed.
     */
    private readonly onAdvance: (revision: DirectoryRevision) => void = () => undefined,
    private readonly logger?: Logger,
    /** The access levels and resource groups (its resources say which ids are computers). */
    private readonly levels: LevelStore = new LevelStore(db),
  ) {
    this.sql = preparedStatements(db);
    this.history = new DirectoryHistory(db, markFileFor(db), logger);
    this.doorUsers = new DirectoryUsers(db, users);
    // A database restored from a backup holds less than the service had issued: renewed before anyone is answered.
    this.history.checkAtStart(this.revision(), Date.now());
  }

  revision(): DirectoryRevision {
    const row = this.sql('SELECT revision, at FROM directory_revision WHERE id = 1').get() as { revision: number; at: string } | undefined;
    const { revision, at } = row ?? { revision: 0, at: new Date(0).toISOString() };
    return { revision, at, history: this.history.id(), tag: revision === 0 ? null : this.history.tagOf(revision) };
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

  /** A change went through: the next refresh (or answer) recomputes the fingerprints. */
  markChanged(): void {
    this.dirty = true;
  }

  /** Brings the fingerprints up to date (when a change went through); returns the revision and whether it moved. */
  refresh(now: number): { revision: number; changed: boolean } {
    if (!this.dirty) return { revision: this.revision().revision, changed: false };
    this.dirty = false;
    const result = this.db.transaction(() => {
      const current = this.revision().revision;
      const next = current + 1;
      // The stored fingerprints a batch at a time too: 250,000 of them held at once cost 40 MB more.
      const stored = this.sql('SELECT email_id, hash, removed FROM directory_entries WHERE email_id IN (SELECT value FROM json_each(?))');
      const upsert = this.sql(
        'INSERT INTO directory_entries (email_id, hash, rev, removed) VALUES (?, ?, ?, 0) ON CONFLICT (email_id) DO UPDATE SET hash = excluded.hash, rev = excluded.rev, removed = 0',
      );
      let changed = false;
      const ids = this.doorUsers.activeIds();
      const read = this.doorUsers.reader(ids.length);
      for (let i = 0; i < ids.length; i += REFRESH_BATCH) {
        const batch = ids.slice(i, i + REFRESH_BATCH);
        const known = new Map((stored.all(JSON.stringify(batch)) as Array<{ email_id: number; hash: string; removed: number }>).map((r) => [r.email_id, r]));
        for (const user of read(batch)) {
          const hash = Directory.fingerprintOf(user);
          const before = known.get(user.emailId);
          if (before && before.hash === hash && before.removed === 0) continue;
          upsert.run(user.emailId, hash, next);
          changed = true;
        }
      }
      // Every entry of a user no longer active (removed, by the API or another process) is marked removed.
      const gone = this.sql(
        'UPDATE directory_entries SET removed = 1, rev = ? WHERE removed = 0 AND email_id NOT IN (SELECT email_id FROM users WHERE removed_at IS NULL)',
      ).run(next).changes;
      if (gone > 0) changed = true;
      // The levels and resource groups have one fingerprint for all: any change to them is a new revision (the
      // answers carry them whole, so no per-level bookkeeping is needed).
      const levelsHash = fingerprint(this.levels.forDirectory());
      const storedLevels = this.sql('SELECT hash FROM directory_levels WHERE id = 1', { pluck: true }).get() as string | undefined;
      if (levelsHash !== (storedLevels ?? NO_LEVELS)) changed = true;
      if (levelsHash !== storedLevels) {
        this.sql('INSERT INTO directory_levels (id, hash) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET hash = excluded.hash').run(levelsHash);
      }
      if (!changed) return { revision: current, changed: false };
      this.sql(
        'INSERT INTO directory_revision (id, revision, at) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET revision = excluded.revision, at = excluded.at',
      ).run(next, new Date(now).toISOString());
      this.history.issueTag(next);
      return { revision: next, changed: true };
    })();
    if (result.changed) {
      const issued = this.revision();
      this.history.record(issued);
      this.onAdvance(issued);
    }
    return result;
  }

  /**
   * Whether a caller holding `since` (of `held`'s history and tag, when it says) can be given a delta. A `since`
   * this database never issued, or a tag that is not the one it issued, means this database's history went back
   * (restored from a copy, the mark file with it): the history is renewed, so every door learns it.
   */
  private deltaPossible(since: number, held: { history?: string; tag?: string }, current: DirectoryRevision, now: number): boolean {
    if (held.history !== undefined && held.history !== current.history) return false; // another history: everything
    let why: string | null = null;
    if (since > current.revision) why = `a caller holds revision ${since}, above the ${current.revision} this database has issued`;
    else if (held.tag !== undefined) {
      const issued = this.history.tagOf(since);
      // No tag kept for it (issued before tags, or long ago): everything, to be safe, but nothing says it went back.
      if (issued === null) return false;
      if (issued !== held.tag) why = `a caller holds revision ${since} with another tag than this database issued`;
    }
    if (why === null) return true;
    const renewed = this.history.renew(`went back: ${why}`, now, current);
    this.logger?.warn(
      { since, revision: current.revision, oldHistory: current.history, newHistory: renewed },
      `the directory went back (${why}): its history is renewed and every door syncs in full`,
    );
    this.onAdvance(this.revision());
    return false;
  }

  /**
   * What a caller holding `since` (of `held`'s history and tag) is answered: everything (since undefined, a revision
   * this service never reached, another history or tag), or the changes after `since`. Brings the revision up to
   * date first, so the plan's version is the one the answer's bytes are built for.
   */
  plan(since: number | undefined, now: number, held: { history?: string; tag?: string } = {}): DirectoryPlan {
    this.refresh(now);
    const full = since === undefined || !this.deltaPossible(since, held, this.revision(), now);
    return { version: this.revision(), full, since: full ? null : (since as number) };
  }

  /**
   * The users, removals and levels of a plan's answer, read now (the users themselves a batch at a time by the
   * caller: each is read as it is then, which is the plan's revision or later, never earlier; a user changed in
   * between is in the next delta again).
   */
  contents(plan: DirectoryPlan): DirectoryContents {
    const ids =
      plan.since === null
        ? this.doorUsers.activeIds()
        : (this.sql('SELECT email_id FROM directory_entries WHERE rev > ? AND removed = 0 ORDER BY email_id', { pluck: true }).all(plan.since) as number[]);
    const removed =
      plan.since === null
        ? []
        : (this.sql('SELECT email_id FROM directory_entries WHERE rev > ? AND removed = 1 ORDER BY email_id', { pluck: true }).all(plan.since) as number[]);
    return { ids, read: this.doorUsers.reader(ids.length), removed, ...this.levels.forDirectory() };
  }
}
