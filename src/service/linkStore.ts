import type { Clock } from '../util/clock.js';
import type { PublishKind } from './publishQueue.js';
import type { SqlDb, SqlQueries } from './sql/sqlDb.js';

/**
 * The service's guest links in its database, shared by the link and user routes and by the doors' publisher
 * (doorsMqtt.ts): below all of them, so none imports another's routes.
 */

/** A stored guest link as published to the doors (the agent's guestLinkSchema). */
export type StoredLink = Record<string, unknown> & { magic_link_id: string; resource_id_list: number[] };

/** What a change to the links needs: the database, the clock, and the doors to tell (RouteContext has them). */
export interface LinkChanges {
  db: SqlDb;
  clock: Clock;
  /** Owes the doors a message (publishQueue.ts), in the caller's transaction. */
  owe(kind: PublishKind, subject?: string): Promise<void>;
}

export async function storedLinks(db: SqlQueries): Promise<StoredLink[]> {
  return (await db.column<string>('SELECT link FROM guest_links ORDER BY magic_link_id')).map((l) => JSON.parse(l) as StoredLink);
}

/** One stored guest link, or null when there is none of that id (revoked, or never made). */
export async function storedLink(db: SqlQueries, id: string): Promise<StoredLink | null> {
  const link = await db.value<string>('SELECT link FROM guest_links WHERE magic_link_id = ?', [Number(id)]);
  return link === undefined ? null : (JSON.parse(link) as StoredLink);
}

/** The ids of the guest links revoked at the doors (their tombstones go out again on every connect). */
export async function revokedLinkIds(db: SqlQueries): Promise<string[]> {
  return (await db.column<number>('SELECT magic_link_id FROM revoked_guest_links ORDER BY magic_link_id')).map(String);
}

/** Records a link's revocation (its tombstone, published again on every connect), or renews its time. */
async function recordRevocation(db: SqlQueries, id: number, nowMs: number): Promise<void> {
  await db.run(
    'INSERT INTO revoked_guest_links (magic_link_id, revoked_at) VALUES (?, ?) ON CONFLICT (magic_link_id) DO UPDATE SET revoked_at = excluded.revoked_at',
    [id, nowMs],
  );
}

/**
 * Records as revoked, with the time `nowMs`, each of `ids` that the database has neither live nor revoked: a link
 * the broker still holds from before the database was restored or replaced. Its tombstone then goes out with the
 * others, and its id is never given to a new link. One transaction (a link made meanwhile is seen); the ids recorded.
 */
export async function revokeLinksNotStored(db: SqlDb, ids: readonly number[], nowMs: number): Promise<string[]> {
  if (ids.length === 0) return [];
  return db.transaction(async () => {
    const unknown = await db.column<number | string>(
      `SELECT value FROM ${db.jsonIdRows}
        WHERE value NOT IN (SELECT magic_link_id FROM guest_links) AND value NOT IN (SELECT magic_link_id FROM revoked_guest_links)
        ORDER BY value`,
      [JSON.stringify(ids)],
    );
    for (const id of unknown) await recordRevocation(db, Number(id), nowMs);
    return unknown.map(String);
  });
}

/**
 * A removed or suspended user loses the guest links naming them: their e-mail and card leave each link (cards
 * are mapped one to one to e-mails), and a link left with nobody is deleted and revoked at the doors. Read and
 * written in one transaction (the caller's, when it has one), with the messages it owes the doors.
 */
export async function dropUserFromLinks(ctx: LinkChanges, email: string): Promise<void> {
  await ctx.db.transaction(async () => {
    for (const link of await storedLinks(ctx.db)) {
      const emails = link.email_list as string[];
      const index = emails.indexOf(email.toLowerCase());
      if (index < 0) continue;
      const cards = (link.smartcards as unknown[] | undefined) ?? [];
      const ids = { ...(link.email_ids as Record<string, number>) };
      delete ids[email.toLowerCase()];
      const next: StoredLink = {
        ...link,
        email_list: emails.filter((_e, i) => i !== index),
        smartcards: cards.filter((_c, i) => i !== index),
        email_ids: ids,
      };
      if ((next.email_list as string[]).length === 0) {
        await ctx.db.run('DELETE FROM guest_links WHERE magic_link_id = ?', [Number(link.magic_link_id)]);
        await recordRevocation(ctx.db, Number(link.magic_link_id), ctx.clock.wallNow());
      } else {
        await ctx.db.run('UPDATE guest_links SET link = ? WHERE magic_link_id = ?', [JSON.stringify(next), Number(link.magic_link_id)]);
      }
      await ctx.owe('link', link.magic_link_id);
    }
  });
}

/** Revokes a link at the doors: deleted, its tombstone recorded and published. False when there is no such link. */
export async function revokeLink(ctx: LinkChanges, id: number): Promise<boolean> {
  return ctx.db.transaction(async () => {
    const deleted = (await ctx.db.run('DELETE FROM guest_links WHERE magic_link_id = ?', [id])).changes === 1;
    if (deleted) {
      await recordRevocation(ctx.db, id, ctx.clock.wallNow());
      await ctx.owe('link', String(id));
    }
    return deleted;
  });
}
