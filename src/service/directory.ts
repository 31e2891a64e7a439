import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { DirectoryVersion } from '../protocol/directory.js';
import type { ServiceDb } from './database.js';
import { DirectoryHistory, markFileFor } from './directoryHistory.js';
import { LevelStore, type DirectoryLevel, type DirectoryResourceGroup } from './levels.js';
import { cardOut, type UserStore } from './users.js';

/** Past this many changed users, a delta reads every membership in one query rather than one per user. */
const DELTA_MEMBERSHIPS_AT_ONCE = 200;

/** The revision with its history and tag (protocol/directory.ts) and when it was issued. */
export type DirectoryRevision = DirectoryVersion & { history: string; at: string };

export interface DirectoryAnswer {
  revision: number;
  history: string;
  tag: string | null;
  /** true: every user is listed (no `since`, a `since` this service never issued, another history or tag); false: only changes. */
  full: boolean;
  users: Array<Record<string, unknown>>;
  details: Record<string, Record<string, unknown>>;
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

  constructor(
    private readonly db: ServiceDb,
    private readonly users: UserStore,
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
    this.history = new DirectoryHistory(db, markFileFor(db), logger);
    // A database restored from a backup holds less than the service had issued: renewed before anyone is answered.
    this.history.checkAtStart(this.revision(), Date.now());
  }

  revision(): DirectoryRevision {
    const row = this.db.prepare('SELECT revision, at FROM directory_revision WHERE id = 1').get() as { revision: number; at: string } | undefined;
    const { revision, at } = row ?? { revision: 0, at: new Date(0).toISOString() };
    return { revision, at, history: this.history.id(), tag: revision === 0 ? null : this.history.tagOf(revision) };
  }

  /** Every user as the doors see them, read in a handful of bulk queries (not a few per user). */
  private snapshot(): Map<number, { item: Record<string, unknown>; detail: Record<string, unknown>; hash: string }> {
    const groups = this.users.allGroups();
    const byUser = <T>(sql: string, pick: (row: Record<string, unknown>) => T) => {
      const map = new Map<number, T[]>();
      for (const row of this.db.prepare(sql).all() as Array<Record<string, unknown>>) {
        const id = row.email_id as number;
        const list = map.get(id) ?? [];
        list.push(pick(row));
        map.set(id, list);
      }
      return map;
    };
    const policies = byUser('SELECT m.email_id, p.name FROM policies p JOIN policy_members m USING (policy_id) ORDER BY p.policy_id', (r) => [
      r.name as string,
    ]);
    // As GET /user gives them: label in every card, null when none was given; the validity dates when set.
    const cards = byUser('SELECT email_id, number, label, valid_from, valid_until FROM smartcards ORDER BY email_id, position', (r) =>
      cardOut(r as Parameters<typeof cardOut>[0]),
    );
    const usernames = byUser('SELECT email_id, computer_username FROM computer_usernames ORDER BY email_id, position', (r) => r.computer_username as string);
    const out = new Map<number, { item: Record<string, unknown>; detail: Record<string, unknown>; hash: string }>();
    for (const user of this.users.list()) {
      const item = this.users.listItem(user, false, groups);
      const detail = {
        policies: policies.get(user.email_id) ?? [],
        computer_usernames: usernames.get(user.email_id) ?? [],
        smartcards: cards.get(user.email_id) ?? [],
      };
      // What a door decides on: status, tag, groups, policies, cards with their validity dates (plus the names and
      // e-mail it shows). An undated card fingerprints as before the dates existed.
      const seen = {
        ad_status: item.ad_status,
        user_tag: item.user_tag,
        groups: item.groups,
        user_id: item.user_id,
        email: item.email,
        name: item.name,
        policies: detail.policies,
        smartcards: detail.smartcards,
      };
      out.set(user.email_id, { item, detail, hash: fingerprint(seen) });
    }
    return out;
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
      const known = new Map(
        (this.db.prepare('SELECT email_id, hash, removed FROM directory_entries').all() as Array<{ email_id: number; hash: string; removed: number }>).map(
          (r) => [r.email_id, r],
        ),
      );
      const upsert = this.db.prepare(
        'INSERT INTO directory_entries (email_id, hash, rev, removed) VALUES (?, ?, ?, 0) ON CONFLICT (email_id) DO UPDATE SET hash = excluded.hash, rev = excluded.rev, removed = 0',
      );
      let changed = false;
      const present = this.snapshot();
      for (const [emailId, entry] of present) {
        const before = known.get(emailId);
        if (before && before.hash === entry.hash && before.removed === 0) continue;
        upsert.run(emailId, entry.hash, next);
        changed = true;
      }
      const remove = this.db.prepare('UPDATE directory_entries SET removed = 1, rev = ? WHERE email_id = ?');
      for (const [emailId, before] of known) {
        if (present.has(emailId) || before.removed === 1) continue;
        remove.run(next, emailId);
        changed = true;
      }
      // The levels and resource groups have one fingerprint for all: any change to them is a new revision (the
      // answers carry them whole, so no per-level bookkeeping is needed).
      const levelsHash = fingerprint(this.levels.forDirectory());
      const storedLevels = this.db.prepare('SELECT hash FROM directory_levels WHERE id = 1').pluck().get() as string | undefined;
      if (levelsHash !== (storedLevels ?? NO_LEVELS)) changed = true;
      if (levelsHash !== storedLevels) {
        this.db.prepare('INSERT INTO directory_levels (id, hash) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET hash = excluded.hash').run(levelsHash);
      }
      if (!changed) return { revision: current, changed: false };
      this.db
        .prepare(
          'INSERT INTO directory_revision (id, revision, at) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET revision = excluded.revision, at = excluded.at',
        )
        .run(next, new Date(now).toISOString());
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
   * Everything (since undefined, a revision this service never reached, another history or tag), or the changes
   * after `since`.
   */
  answer(since: number | undefined, now: number, held: { history?: string; tag?: string } = {}): DirectoryAnswer {
    this.refresh(now);
    const full = since === undefined || !this.deltaPossible(since, held, this.revision(), now);
    const { revision, history, tag } = this.revision();
    const users: Array<Record<string, unknown>> = [];
    const details: Record<string, Record<string, unknown>> = {};
    if (full) {
      for (const [id, entry] of this.snapshot()) {
        users.push(entry.item);
        details[String(id)] = entry.detail;
      }
    } else {
      // Only the changed users are read: a delta of one costs one user's queries, not the whole directory (every
      // door asks for the same delta: reading all memberships for each cost the service 15 ms x doors per change).
      const ids = this.db.prepare('SELECT email_id FROM directory_entries WHERE rev > ? AND removed = 0 ORDER BY email_id').pluck().all(since) as number[];
      const groups = ids.length > DELTA_MEMBERSHIPS_AT_ONCE ? this.users.allGroups() : undefined;
      for (const id of ids) {
        const user = this.users.get(id);
        if (!user || user.removed_at !== null) continue;
        users.push(this.users.listItem(user, false, groups));
        details[String(id)] = this.users.detail(user);
      }
    }
    const removed = full
      ? []
      : (this.db.prepare('SELECT email_id FROM directory_entries WHERE rev > ? AND removed = 1 ORDER BY email_id').pluck().all(since) as number[]);
    return { revision, history, tag, full, users, details, removed, ...this.levels.forDirectory() };
  }
}
