import { createHash } from 'node:crypto';
import type { ServiceDb } from './database.js';
import type { UserStore } from './users.js';

/** Past this many changed users, a delta reads every membership in one query rather than one per user. */
const DELTA_MEMBERSHIPS_AT_ONCE = 200;

export interface DirectoryAnswer {
  revision: number;
  /** true: every user is listed (no `since`, or a `since` this service never issued); false: only changes. */
  full: boolean;
  users: Array<Record<string, unknown>>;
  details: Record<string, Record<string, unknown>>;
  removed: number[];
}

/**
 * The directory revision of the reference service (an extension beside the seed's API, see
 * docs/reference-service.md): every user as the doors see them (GET /multipleusers item with user_tag, GET /user
 * detail), fingerprinted. `refresh` gives the users that changed, and the users removed, the next revision; the
 * agents then fetch only those (GET /directory?since=REV).
 */
export class Directory {
  /** A change went through since the last refresh (set by the server after each successful change). */
  private dirty = true;

  constructor(
    private readonly db: ServiceDb,
    private readonly users: UserStore,
    /**
     * Called after every refresh that advanced the revision, whoever asked for it: the change timer, or an agent's
     * GET /directory that came first (the push must not be lost to the agent that happened to ask).
     */
    private readonly onAdvance: (revision: { revision: number; at: string }) => void = () => undefined,
  ) {}

  revision(): { revision: number; at: string } {
    const row = this.db.prepare('SELECT revision, at FROM directory_revision WHERE id = 1').get() as { revision: number; at: string } | undefined;
    return row ?? { revision: 0, at: new Date(0).toISOString() };
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
    const policies = byUser('SELECT m.email_id, p.name FROM policies p JOIN policy_members m USING (policy_id) ORDER BY p.policy_id', (r) => [r.name as string]);
    // As GET /user gives them: label in every card, null when none was given.
    const cards = byUser('SELECT email_id, number, label FROM smartcards ORDER BY email_id, position', (r) => ({
      number: r.number as string,
      label: r.label as string | null,
    }));
    const usernames = byUser('SELECT email_id, computer_username FROM computer_usernames ORDER BY email_id, position', (r) => r.computer_username as string);
    const out = new Map<number, { item: Record<string, unknown>; detail: Record<string, unknown>; hash: string }>();
    for (const user of this.users.list()) {
      const item = this.users.listItem(user, false, groups);
      const detail = { policies: policies.get(user.email_id) ?? [], computer_usernames: usernames.get(user.email_id) ?? [], smartcards: cards.get(user.email_id) ?? [] };
      // What a door decides on: status, tag, groups, policies, cards (plus the names and e-mail it shows).
      const seen = { ad_status: item.ad_status, user_tag: item.user_tag, groups: item.groups, user_id: item.user_id, email: item.email, name: item.name, policies: detail.policies, smartcards: detail.smartcards };
      out.set(user.email_id, { item, detail, hash: createHash('sha256').update(JSON.stringify(seen)).digest('base64url') });
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
        (this.db.prepare('SELECT email_id, hash, removed FROM directory_entries').all() as Array<{ email_id: number; hash: string; removed: number }>).map((r) => [r.email_id, r]),
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
      if (!changed) return { revision: current, changed: false };
      this.db
        .prepare('INSERT INTO directory_revision (id, revision, at) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET revision = excluded.revision, at = excluded.at')
        .run(next, new Date(now).toISOString());
      return { revision: next, changed: true };
    })();
    if (result.changed) this.onAdvance(this.revision());
    return result;
  }

  /** Everything (since undefined, or a revision this service never reached), or the changes after `since`. */
  answer(since: number | undefined, now: number): DirectoryAnswer {
    const { revision } = this.refresh(now);
    const full = since === undefined || since > revision;
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
    const removed = full ? [] : (this.db.prepare('SELECT email_id FROM directory_entries WHERE rev > ? AND removed = 1 ORDER BY email_id').pluck().all(since) as number[]);
    return { revision, full, users, details, removed };
  }
}
