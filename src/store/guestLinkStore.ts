import type { GuestLink } from '../api/shapes.js';
import { toStagedLink } from './toStaged.js';
import type { Db } from './database.js';

export type GuestLinkChange = 'stored' | 'unchanged' | 'revoked' | 'not_here' | 'over_budget' | 'stale';

/** How many links received over MQTT the cache keeps at most (each at most MAX_GUEST_LINK_BYTES). */
const DEFAULT_MAX_MQTT_LINKS = 500;

/**
 * Guest links pushed over MQTT (retained `P/guest-links/<id>`): stored with their cards and token digest, in
 * one transaction, only when they name one of this agent's doors; a revocation removes them. At most
 * `maxLinks` are kept, so a broker client cannot fill the disk. With `issuedAt` (signed messages), a message
 * older than the newest applied for that id is refused as stale: a replay cannot undo a revocation.
 */
export class GuestLinkStore {
  private readonly connection: () => Db;

  /** `db`: the cache, or where to find it at each call (the daemon's is replaced when a damaged cache is rebuilt). */
  constructor(
    db: Db | (() => Db),
    private readonly resourceIds: ReadonlySet<number>,
    private readonly maxLinks = DEFAULT_MAX_MQTT_LINKS,
  ) {
    this.connection = typeof db === 'function' ? db : () => db;
  }

  private get db(): Db {
    return this.connection();
  }

  /**
   * Whether `issuedAt` is older than the newest message applied for `id`; records it otherwise, with `future`
   * (the highest issued_at from the future that was clamped, protocol/issuedAt.ts).
   */
  private isStale(id: string, issuedAt: number | null, future: number | null = null): boolean {
    if (issuedAt === null) return false;
    const newest = this.db.prepare('SELECT issued_at FROM guest_link_versions WHERE magic_link_id = ?').pluck().get(id) as number | undefined;
    if (newest !== undefined && issuedAt < newest) return true;
    this.db
      .prepare(
        `INSERT INTO guest_link_versions (magic_link_id, issued_at, future_issued_at) VALUES (?, ?, ?) ON CONFLICT DO UPDATE
         SET issued_at = excluded.issued_at, future_issued_at = max(coalesce(future_issued_at, 0), coalesce(excluded.future_issued_at, 0))`,
      )
      .run(id, issuedAt, future);
    return false;
  }

  /** What was applied for `id`: its issued_at (clamped) and the highest one from the future. */
  versionOf(id: string): { issuedAt: number | null; future: number | null } {
    const row = this.db.prepare('SELECT issued_at, future_issued_at FROM guest_link_versions WHERE magic_link_id = ?').get(id) as
      | { issued_at: number; future_issued_at: number | null }
      | undefined;
    return { issuedAt: row?.issued_at ?? null, future: row?.future_issued_at || null };
  }

  /** Forgets every issued_at applied (the switch to signed mode: what unsigned messages set must not count). */
  forgetVersions(): number {
    return this.db.prepare('DELETE FROM guest_link_versions').run().changes;
  }

  /**
   * Signed mode: removes the links received over MQTT that a fresh index of the live links (issued at
   * `indexIssuedAt`) does not list, unless a message about them is at least as recent as the index.
   */
  removeMqttLinksNotIndexed(ids: ReadonlySet<string>, indexIssuedAt: number): string[] {
    return this.db.transaction(() => {
      const rows = this.db
        .prepare(
          "SELECT l.magic_link_id AS id, v.issued_at AS at FROM guest_links l LEFT JOIN guest_link_versions v USING (magic_link_id) WHERE l.source = 'mqtt'",
        )
        .all() as Array<{ id: string; at: number | null }>;
      const removed = rows.filter((r) => !ids.has(r.id) && (r.at === null || r.at < indexIssuedAt)).map((r) => r.id);
      for (const id of removed) this.remove(id);
      return removed;
    })();
  }

  private remove(id: string): boolean {
    const credentials = this.db.prepare("DELETE FROM credentials WHERE holder_kind = 'link' AND holder_id = ?").run(id).changes;
    const links = this.db.prepare('DELETE FROM guest_links WHERE magic_link_id = ?').run(id).changes;
    return credentials + links > 0;
  }

  /** Removes the links received over MQTT whose ids are not in `keep`; returns the removed ids. */
  removeMqttLinksExcept(keep: ReadonlySet<string>): string[] {
    return this.db.transaction(() => {
      const ids = (this.db.prepare("SELECT magic_link_id FROM guest_links WHERE source = 'mqtt'").pluck().all() as string[]).filter((id) => !keep.has(id));
      for (const id of ids) this.remove(id);
      return ids;
    })();
  }

  revoke(id: string, issuedAt: number | null = null, future: number | null = null): GuestLinkChange {
    return this.db.transaction((): GuestLinkChange => {
      if (this.isStale(id, issuedAt, future)) return 'stale';
      return this.remove(id) ? 'revoked' : 'unchanged';
    })();
  }

  /** `validUntil` (ms): the link stops opening then at the latest, whatever its end_time (a signature's age limit). */
  store(link: GuestLink, issuedAt: number | null = null, validUntil: number | null = null, future: number | null = null): GuestLinkChange {
    const staged = toStagedLink(link);
    if (validUntil !== null) staged.endAt = staged.endAt === null ? validUntil : Math.min(staged.endAt, validUntil);
    return this.db.transaction((): GuestLinkChange => {
      if (this.isStale(staged.magicLinkId, issuedAt, future)) return 'stale';
      if (!staged.resourceIds.some((r) => this.resourceIds.has(r))) {
        return this.remove(staged.magicLinkId) ? 'revoked' : 'not_here';
      }
      const known = this.db.prepare('SELECT 1 FROM guest_links WHERE magic_link_id = ?').get(staged.magicLinkId) !== undefined;
      if (!known && (this.db.prepare("SELECT count(*) FROM guest_links WHERE source = 'mqtt'").pluck().get() as number) >= this.maxLinks) {
        return 'over_budget';
      }
      const row = {
        id: staged.magicLinkId,
        name: staged.name,
        digest: staged.tokenDigest,
        resources: JSON.stringify(staged.resourceIds),
        start: staged.startAt,
        end: staged.endAt,
        mapping: JSON.stringify(staged.timeMapping),
        emails: JSON.stringify(staged.emailList),
      };
      // One row per number (the last entry wins), in number order: compared with the rows held as they are.
      const cards = [...new Map(staged.smartcards.map((c) => [c.number, c])).values()].sort((a, b) => (a.number < b.number ? -1 : a.number > b.number ? 1 : 0));
      const existing = this.db
        .prepare(`SELECT name, token_digest, resource_ids, start_at, end_at, time_mapping, email_list, source FROM guest_links WHERE magic_link_id = ?`)
        .raw()
        .get(row.id) as unknown[] | undefined;
      const existingCards = this.db
        .prepare(
          "SELECT number, label, resource_ids, start_at, end_at, time_mapping, valid_from, valid_until FROM credentials WHERE holder_kind = 'link' AND holder_id = ? ORDER BY number",
        )
        .raw()
        .all(row.id) as unknown[][];
      const sameLink =
        existing !== undefined &&
        JSON.stringify(existing) === JSON.stringify([row.name, row.digest, row.resources, row.start, row.end, row.mapping, row.emails, 'mqtt']);
      const sameCards =
        JSON.stringify(existingCards) ===
        JSON.stringify(cards.map((c) => [c.number, c.label, row.resources, row.start, row.end, row.mapping, c.validFrom, c.validUntil]));
      if (sameLink && sameCards) return 'unchanged';
      this.remove(row.id);
      this.db
        .prepare(
          `INSERT INTO guest_links (magic_link_id, name, token_digest, resource_ids, start_at, end_at, time_mapping, email_list, source)
           VALUES (@id, @name, @digest, @resources, @start, @end, @mapping, @emails, 'mqtt')`,
        )
        .run(row);
      const insert = this.db.prepare(
        `INSERT INTO credentials (number, holder_kind, holder_id, label, resource_ids, start_at, end_at, time_mapping, digits, valid_from, valid_until)
         VALUES (?, 'link', ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      for (const c of cards) insert.run(c.number, row.id, c.label, row.resources, row.start, row.end, row.mapping, c.digits, c.validFrom, c.validUntil);
      return 'stored';
    })();
  }
}
