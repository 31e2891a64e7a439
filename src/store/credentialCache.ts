import type { Statement } from 'better-sqlite3';
import { isPinLabel, stripLeadingZeros } from '../core/credentials.js';
import type { Holder, LinkHolder, UserHolder } from '../core/decision.js';
import type { TimeMapping } from '../core/schedule.js';
import type { Db } from './database.js';
import { tokenDigest } from './tokens.js';

// Column order of the holder queries (raw rows: no object per row on the hot path).
type HolderRow = [
  kind: 'user' | 'link',
  id: string,
  tag: 'USER' | 'GUEST' | null,
  adStatus: string | null,
  groups: string | null,
  policies: string | null,
  resourceIds: string | null,
  startAt: number | null,
  endAt: number | null,
  timeMapping: string | null,
  label: string | null,
  digits: string | null,
  validFrom: number | null,
  validUntil: number | null,
];

type LinkRow = [id: string, resourceIds: string, startAt: number | null, endAt: number | null, timeMapping: string];

const PARSED_CACHE_LIMIT = 4096;

/** Gives a holder just made its credential's validity dates, only those it has (an undated one carries neither). */
function withDates<H extends Holder>(holder: H, validFrom: number | null, validUntil: number | null): H {
  if (validFrom !== null) holder.validFrom = validFrom;
  if (validUntil !== null) holder.validUntil = validUntil;
  return holder;
}

export interface CacheCounts {
  users: number;
  credentials: number;
  guestLinks: number;
}

/**
 * Read side of the cache: who holds a credential, in the shapes the access decision takes. One indexed
 * lookup per decision; the JSON lists (groups, schedules) repeat across holders, so their parsed form is
 * memoized (frozen, shared).
 */
export class CredentialCache {
  private readonly byNumber: Statement<[string], HolderRow>;
  private readonly byToken: Statement<[string], LinkRow>;
  private readonly linkLabels: Statement<[string], string | null>;
  private readonly nameOf: Statement<[number], string>;
  private readonly parsed = new Map<string, unknown>();

  constructor(readonly db: Db) {
    this.byNumber = db
      .prepare(
        `SELECT holder_kind, holder_id, tag, ad_status, groups, policies, resource_ids, start_at, end_at, time_mapping, label, digits,
                valid_from, valid_until
           FROM credentials WHERE number = ?`,
      )
      .raw(true) as unknown as Statement<[string], HolderRow>;
    this.byToken = db
      .prepare('SELECT magic_link_id, resource_ids, start_at, end_at, time_mapping FROM guest_links WHERE token_digest = ?')
      .raw(true) as unknown as Statement<[string], LinkRow>;
    this.linkLabels = db.prepare("SELECT label FROM credentials WHERE holder_kind = 'link' AND holder_id = ?").pluck(true) as unknown as Statement<
      [string],
      string | null
    >;
    this.nameOf = db.prepare('SELECT name FROM users WHERE email_id = ?').pluck(true) as unknown as Statement<[number], string>;
  }

  /** A user's name as the directory gives it (who opened a door), or null when the user is not held. */
  userName(emailId: number): string | null {
    return this.nameOf.get(emailId) ?? null;
  }

  private json<T>(text: string): T {
    let value = this.parsed.get(text);
    if (value === undefined) {
      if (this.parsed.size >= PARSED_CACHE_LIMIT) this.parsed.clear();
      value = Object.freeze(JSON.parse(text) as object);
      this.parsed.set(text, value);
    }
    return value as T;
  }

  private link(id: string, resourceIds: string, startAt: number | null, endAt: number | null, timeMapping: string): LinkHolder {
    return {
      kind: 'link',
      magicLinkId: id,
      resourceIds: this.json<number[]>(resourceIds),
      startAt,
      endAt,
      timeMapping: this.json<TimeMapping>(timeMapping),
    };
  }

  /**
   * Holders of a normalized number presented as `presented` (duplicates are legal: several holders may be
   * returned). Entries labelled as PINs (see isPinLabel) answer only a PIN, the others only a card. A PIN is
   * looked up by its integer and matches only an entry with exactly its digits (leading zeros count).
   */
  holdersOfNumber(number: string, presented: 'card' | 'pin', pinLabels: ReadonlySet<string>): Holder[] {
    const holders: Holder[] = [];
    const pin = presented === 'pin';
    for (const [kind, id, tag, adStatus, groups, policies, resourceIds, startAt, endAt, timeMapping, label, digits, validFrom, validUntil] of this.byNumber.all(
      pin ? stripLeadingZeros(number) : number,
    )) {
      if (isPinLabel(label, pinLabels) !== pin) continue;
      if (pin && (digits ?? stripLeadingZeros(number)) !== number) continue;
      if (kind === 'user') {
        const user: UserHolder = {
          kind: 'user',
          emailId: Number(id),
          tag: tag!,
          adStatus: adStatus!,
          groups: this.json<string[]>(groups!),
          policies: this.json<string[]>(policies!),
        };
        holders.push(withDates(user, validFrom, validUntil));
      } else {
        holders.push(withDates(this.link(id, resourceIds!, startAt, endAt, timeMapping!), validFrom, validUntil));
      }
    }
    return holders;
  }

  /** Whether a guest link carries a PIN (one of its smartcards has a PIN label): its second factor. */
  linkHasPin(magicLinkId: string, pinLabels: ReadonlySet<string>): boolean {
    return this.linkLabels.all(magicLinkId).some((label) => isPinLabel(label, pinLabels));
  }

  /** Guest links whose magic_token is this token. */
  holdersOfToken(token: string): Holder[] {
    return this.byToken.all(tokenDigest(token)).map((row) => this.link(...row));
  }

  counts(): CacheCounts {
    const count = (table: string) => this.db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
    return { users: count('users'), credentials: count('credentials'), guestLinks: count('guest_links') };
  }
}
