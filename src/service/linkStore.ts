import type { Clock } from '../util/clock.js';
import type { ServiceDb } from './database.js';

/**
 * The service's guest links in its database, shared by the link and user routes and by the doors' publisher
 * (doorsMqtt.ts): below all of them, so none imports another's routes.
 */

/** A stored guest link as published to the doors (the agent's guestLinkSchema). */
export type StoredLink = Record<string, unknown> & { magic_link_id: string; resource_id_list: number[] };

/** What a change to the links needs: the database, the clock, and the doors to tell (RouteContext has them). */
export interface LinkChanges {
  db: ServiceDb;
  clock: Clock;
  publishGuestLink(link: StoredLink): void;
  revokeGuestLink(id: string): void;
}

export function storedLinks(db: ServiceDb): StoredLink[] {
  return (db.prepare('SELECT link FROM guest_links ORDER BY magic_link_id').pluck().all() as string[]).map((l) => JSON.parse(l) as StoredLink);
}

/** The ids of the guest links revoked at the doors (their tombstones go out again on every connect). */
export function revokedLinkIds(db: ServiceDb): string[] {
  return (db.prepare('SELECT magic_link_id FROM revoked_guest_links ORDER BY magic_link_id').pluck().all() as number[]).map(String);
}

/**
 * A removed or suspended user loses the guest links naming them: their e-mail and card leave each link (cards
 * are mapped one to one to e-mails), and a link left with nobody is deleted and revoked at the doors.
 */
export function dropUserFromLinks(ctx: LinkChanges, email: string): void {
  const changed: StoredLink[] = [];
  const revoked: string[] = [];
  ctx.db.transaction(() => {
    for (const link of storedLinks(ctx.db)) {
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
        ctx.db.prepare('DELETE FROM guest_links WHERE magic_link_id = ?').run(Number(link.magic_link_id));
        ctx.db.prepare('INSERT OR REPLACE INTO revoked_guest_links VALUES (?, ?)').run(Number(link.magic_link_id), ctx.clock.wallNow());
        revoked.push(link.magic_link_id);
      } else {
        ctx.db.prepare('UPDATE guest_links SET link = ? WHERE magic_link_id = ?').run(JSON.stringify(next), Number(link.magic_link_id));
        changed.push(next);
      }
    }
  })();
  for (const link of changed) ctx.publishGuestLink(link);
  for (const id of revoked) ctx.revokeGuestLink(id);
}

/** Revokes a link at the doors: deleted, its tombstone recorded and published. False when there is no such link. */
export function revokeLink(ctx: LinkChanges, id: number): boolean {
  const gone = ctx.db.transaction(() => {
    const deleted = ctx.db.prepare('DELETE FROM guest_links WHERE magic_link_id = ?').run(id).changes === 1;
    if (deleted) ctx.db.prepare('INSERT OR REPLACE INTO revoked_guest_links VALUES (?, ?)').run(id, ctx.clock.wallNow());
    return deleted;
  })();
  if (gone) ctx.revokeGuestLink(String(id));
  return gone;
}
