import { dropUserFromLinks } from '../../linkStore.js';
import type { RouteContext } from '../../routeContext.js';
import type { UserRow } from '../../users.js';
import { isOperatorRank, ownedElsewhere, type OwnedChange } from '../ownership.js';
import { badScim, ScimError } from './scimErrors.js';
import { pathName, type ScimFilter, type ScimPath } from './scimFilter.js';
import type { ScimObject } from './scimObjects.js';
import { applyPatch, type PatchOperation } from './scimPatch.js';
import { type Page, scimTime, withMeta } from './scimResource.js';
import { readUserBody, renderUser, valueAt, type UserFields } from './scimUserBody.js';

/**
 * SCIM's users as the service's users (docs/identity-sources.md, "Users"): found by their unique_id, listed with a
 * filter, created through UserStore.ensure (a removed user's record comes back, as the API does), replaced and
 * patched (a local user claimed), removed as DELETE /user does. Each write runs in the request's transaction (the
 * route's, with its directory revision), and marks the user as SCIM's, seen now.
 */

/** What the users need of the routes' context. */
export type ScimDeps = Pick<RouteContext, 'db' | 'users' | 'clock' | 'identity' | 'owe'>;

/** The card a SCIM source maps is the user's one card, with this label. */
const SCIM_CARD_LABEL = 'SCIM';

/** The filters users take (docs/identity-sources.md, "Lists"): the attribute, and its SQL. */
const USER_FILTERS: Record<string, string> = {
  username: 'lower(username) = lower(?)',
  externalid: 'external_id = ?',
  id: 'unique_id = lower(?)',
  'emails.value': 'email = ?',
};

/** The 409 of a DELETE of a user or group the provider never made nor claimed: the service's own, removed there. */
export function notProvisioned(subject: string): ScimError {
  return new ScimError(409, `${subject} was not provisioned over SCIM: remove it at the service`, 'mutability');
}

/** The 409 of a change to a user or group a source other than SCIM owns (ownership.ts's words). */
export function ownedByLdap(subject: string, change: OwnedChange, deps: Pick<ScimDeps, 'identity'>): ScimError {
  return new ScimError(409, ownedElsewhere(subject, 'ldap', change, deps.identity).message, 'mutability');
}

/**
 * The WHERE clause and parameters of `filter` on `filters`; an attribute not there is 400 invalidFilter. A filter
 * on the values of emails (Entra ID's `emails[type eq "work"].value`) matches the user's one address, which is their
 * work and primary one.
 */
export function filterSql(filter: ScimFilter, filters: Record<string, string>, what: string): { where: string; params: string[] } {
  const clauses: string[] = [];
  const params: string[] = [];
  for (const c of filter) {
    const name = pathName(c.path);
    const sql = filters[name];
    if (sql === undefined) {
      throw badScim('invalidFilter', `${what} can be filtered on ${Object.keys(filters).join(', ')} (eq), not on ${name}`);
    }
    if (typeof c.value !== 'string') throw badScim('invalidFilter', `${name} is compared with a string ("..."), not ${JSON.stringify(c.value)}`);
    const theOne = (c.path.filter ?? []).every(
      (f) =>
        (pathName(f.path) === 'type' && typeof f.value === 'string' && f.value.toLowerCase() === 'work') ||
        (pathName(f.path) === 'primary' && f.value === true),
    );
    if (theOne) {
      clauses.push(sql);
      params.push(c.value);
    } else clauses.push('1 = 0');
  }
  return { where: clauses.join(' AND '), params };
}

export class ScimUsers {
  constructor(
    private readonly deps: ScimDeps,
    /** server.identity.scim.cardAttribute, parsed; absent: cards stay at the service. */
    private readonly cardPath: ScimPath | undefined,
  ) {}

  /** The active user of SCIM id `id`, or 404. */
  async find(id: string): Promise<UserRow> {
    const user = await this.deps.db.get<UserRow>('SELECT * FROM users WHERE unique_id = ? AND removed_at IS NULL', [id.toLowerCase()]);
    if (user === undefined) throw new ScimError(404, `no user with id ${id}`);
    return user;
  }

  /** The resource of SCIM id `id`, or 404. */
  async read(id: string, base: string): Promise<ScimObject> {
    return this.resource(await this.find(id), base);
  }

  /** Users as resources, their groups and cards read in one query each. */
  async resources(rows: readonly UserRow[], base: string): Promise<ScimObject[]> {
    if (rows.length === 0) return [];
    const { db } = this.deps;
    const ids = JSON.stringify(rows.map((r) => r.email_id));
    const groups = new Map<number, Array<{ unique_id: string; name: string }>>();
    for (const g of await db.all<{ email_id: number; unique_id: string; name: string }>(
      `SELECT m.member_id AS email_id, g.unique_id, g.name FROM groups g JOIN group_members m ON m.group_id = g.group_id
          WHERE g.type = 'users' AND m.member_id ${db.inJsonIds} ORDER BY g.group_id`,
      [ids],
    )) {
      const list = groups.get(Number(g.email_id)) ?? [];
      list.push({ unique_id: g.unique_id, name: g.name });
      groups.set(Number(g.email_id), list);
    }
    const cards = new Map<number, string>();
    if (this.cardPath !== undefined) {
      for (const c of await db.all<{ email_id: number; number: string }>(
        `SELECT email_id, number FROM smartcards WHERE label = ? AND email_id ${db.inJsonIds} ORDER BY position DESC`,
        [SCIM_CARD_LABEL, ids],
      )) {
        cards.set(Number(c.email_id), c.number);
      }
    }
    return rows.map((user) => {
      const card = cards.get(user.email_id);
      const view = Object.assign({}, user, { groups: groups.get(user.email_id) ?? [] }, card === undefined ? {} : { card });
      return withMeta(renderUser(view, base, this.cardPath), {
        resourceType: 'User',
        location: `${base}/Users/${user.unique_id}`,
        created: scimTime(user.created),
        lastModified: user.source_seen_at === null ? scimTime(user.created) : scimTime(Number(user.source_seen_at)),
      });
    });
  }

  async resource(user: UserRow, base: string): Promise<ScimObject> {
    return (await this.resources([user], base))[0]!;
  }

  /** One page of the active users matching `filter` (all without one), in a stable order (email_id), and their total. */
  async list(filter: ScimFilter | undefined, page: Page, base: string): Promise<{ total: number; resources: ScimObject[] }> {
    const { where, params } = filter === undefined ? { where: '1 = 1', params: [] } : filterSql(filter, USER_FILTERS, 'users');
    const { db } = this.deps;
    const total = Number((await db.value<number>(`SELECT count(*) FROM users WHERE removed_at IS NULL AND ${where}`, params)) ?? 0);
    if (page.count === 0) return { total, resources: [] };
    const rows = await db.all<UserRow>(`SELECT * FROM users WHERE removed_at IS NULL AND ${where} ORDER BY email_id LIMIT ? OFFSET ?`, [
      ...params,
      page.count,
      page.startIndex - 1,
    ]);
    return { total, resources: await this.resources(rows, base) };
  }

  /** POST /Users: a new user (a removed one's record brought back); 409 uniqueness for a user already there. */
  async create(body: unknown, base: string): Promise<ScimObject> {
    const fields = readUserBody(body, 'asserted', this.cardPath);
    if (fields.email === undefined) throw badScim('invalidValue', 'a user needs an e-mail address (emails[].value): the service knows its users by it');
    const existing = await this.deps.users.byEmail(fields.email);
    if (existing !== undefined) {
      throw new ScimError(
        409,
        `${fields.email} is already a user of the service (id ${existing.unique_id}): find it (filter emails.value eq "${fields.email}") and claim it with PUT or PATCH`,
        'uniqueness',
      );
    }
    await this.checkUserName(fields.userName!, null);
    const { user } = await this.deps.users.ensure(fields.email, 'USER', this.deps.clock.wallNow());
    return this.write(user, fields, base);
  }

  /** PUT /Users/{id}: the fields the body asserts (the others as they are); a local user claimed. */
  async replace(user: UserRow, body: unknown, base: string): Promise<ScimObject> {
    const fields = readUserBody(body, 'asserted', this.cardPath);
    this.refuseIfLdap(user, fields);
    this.refuseIfOperatorOrSuspended(user, fields);
    return this.write(user, fields, base);
  }

  /** PATCH /Users/{id}: the operations applied to the user as answered, the result written as a whole. */
  async patch(user: UserRow, operations: readonly PatchOperation[], base: string): Promise<ScimObject> {
    const current = await this.resource(user, base);
    const patched = applyPatch(current, operations);
    const fields = readUserBody(patched, 'complete', this.cardPath);
    // The card is written only when an operation changed it: a user claimed with cards of their own keeps them
    // until the provider sends one.
    if (this.cardPath !== undefined && JSON.stringify(valueAt(patched, this.cardPath)) === JSON.stringify(valueAt(current, this.cardPath))) {
      delete fields.card;
    }
    this.refuseIfLdap(user, fields);
    this.refuseIfOperatorOrSuspended(user, fields);
    return this.write(user, fields, base);
  }

  /** DELETE /Users/{id}: removed as DELETE /user does (cards released, out of every group, the record kept); only a user SCIM made or claimed. */
  async remove(user: UserRow): Promise<void> {
    if (user.source === 'ldap') throw ownedByLdap(user.email, 'removal', this.deps);
    if (user.source !== 'scim') throw notProvisioned(user.email);
    const now = this.deps.clock.wallNow();
    await this.deps.users.remove(user.email_id, now);
    await this.deps.db.run('UPDATE users SET source_seen_at = ? WHERE email_id = ?', [now, user.email_id]);
    await dropUserFromLinks(this.deps, user.email);
  }

  /** A user LDAP owns is never taken by SCIM (docs/identity-sources.md): 409 mutability, in ownership.ts's words. */
  private refuseIfLdap(user: UserRow, fields: UserFields): void {
    if (user.source !== 'ldap') return;
    const suspends = fields.active !== undefined && fields.active === (user.suspended === 1);
    throw ownedByLdap(user.email, suspends ? 'suspension' : 'fields', this.deps);
  }

  /**
   * The service's operators and its suspensions are its own (docs/identity-sources.md, "Which source owns a user"):
   * the console mails sign-in links to an operator's address, so a provider never takes over a local ADMIN or SUPER,
   * nor lifts a suspension the service made by claiming the user, nor changes the e-mail of a user promoted after
   * a claim. 409 mutability.
   */
  private refuseIfOperatorOrSuspended(user: UserRow, fields: UserFields): void {
    const operator = isOperatorRank(user.rank);
    if (user.source !== 'scim' && operator) {
      throw new ScimError(
        409,
        `${user.email} is an operator (${user.rank}) of the service: a source does not take over an operator's account; provision another address, or release the rank first`,
        'mutability',
      );
    }
    if (user.source !== 'scim' && user.suspended === 1) {
      throw new ScimError(
        409,
        `${user.email} is suspended at the service: make them active there (or remove them) before the provider takes them over`,
        'mutability',
      );
    }
    if (operator && fields.email !== undefined && fields.email.toLowerCase() !== user.email.toLowerCase()) {
      throw new ScimError(
        409,
        `${user.email} is an operator (${user.rank}) of the service: a source does not change an operator's e-mail; keep this address at the provider, or release the rank first`,
        'mutability',
      );
    }
  }

  /** 409 uniqueness when another SCIM user has `userName` (compared case-blind). */
  private async checkUserName(userName: string, emailId: number | null): Promise<void> {
    const taken = await this.deps.db.value(
      "SELECT 1 FROM users WHERE source = 'scim' AND removed_at IS NULL AND lower(username) = lower(?) AND email_id <> ?",
      [userName, emailId ?? -1],
    );
    if (taken !== undefined)
      throw new ScimError(409, `userName ${userName} is another user's (userName is unique among SCIM's users, compared case-blind)`, 'uniqueness');
  }

  /** 409 uniqueness when `email` is another user's, or a removed user's (whose record keeps it). */
  private async checkEmail(email: string, emailId: number): Promise<void> {
    const other = await this.deps.db.get<{ removed_at: string | null }>('SELECT removed_at FROM users WHERE email = ? AND email_id <> ?', [email, emailId]);
    if (other === undefined) return;
    const whose = other.removed_at === null ? "another user's" : "a removed user's (the service keeps their record)";
    throw new ScimError(409, `the e-mail ${email} is ${whose}: a user's e-mail is unique at the service`, 'uniqueness');
  }

  /**
   * Writes what `fields` assert of `user` (the others as they are), SCIM's and seen now: claimed when local. A user
   * newly suspended leaves their guest links as PUT /togglesuspension does; the card, when the site maps one, is
   * the user's one card. Answers the user as they are after it.
   */
  private async write(user: UserRow, fields: UserFields, base: string): Promise<ScimObject> {
    const { db, users } = this.deps;
    const next = {
      username: fields.userName ?? user.username,
      first_name: fields.givenName ?? user.first_name,
      last_name: fields.familyName ?? user.last_name,
      external_id: fields.externalId === undefined ? user.external_id : fields.externalId,
      email: fields.email ?? user.email,
      suspended: fields.active === undefined ? user.suspended : fields.active ? 0 : 1,
    };
    if (next.username.toLowerCase() !== user.username.toLowerCase() || user.source !== 'scim') await this.checkUserName(next.username, user.email_id);
    if (next.email.toLowerCase() !== user.email.toLowerCase()) await this.checkEmail(next.email, user.email_id);
    const now = this.deps.clock.wallNow();
    await db.run(
      `UPDATE users SET source = 'scim', source_dn = NULL, source_seen_at = ?, username = ?, first_name = ?, last_name = ?, external_id = ?,
          email = ?, suspended = ? WHERE email_id = ?`,
      [now, next.username, next.first_name, next.last_name, next.external_id, next.email, next.suspended, user.email_id],
    );
    if (next.suspended === 1 && user.suspended === 0) await dropUserFromLinks(this.deps, user.email);
    if (this.cardPath !== undefined && fields.card !== undefined) await this.writeCard(user.email_id, fields.card);
    return this.resource((await users.get(user.email_id))!, base);
  }

  /**
   * The user's SCIM card becomes `card` (none for null): the cards labelled SCIM are replaced, the others (cards and
   * PINs the service gave) kept; the service's card of the same number becomes the SCIM one. A number another active
   * user holds is 409 uniqueness.
   */
  private async writeCard(emailId: number, card: string | null): Promise<void> {
    const { users } = this.deps;
    const current = await users.smartcards(emailId);
    const scimCards = current.filter((c) => c.label === SCIM_CARD_LABEL);
    if (card === null ? scimCards.length === 0 : scimCards.length === 1 && scimCards[0]!.number === card) return;
    const kept = current.filter((c) => c.label !== SCIM_CARD_LABEL && c.number !== card);
    const next = card === null ? kept : [...kept, { number: card, label: SCIM_CARD_LABEL }];
    if (card !== null && (await users.newlyShared(emailId, [card])).length > 0) {
      throw new ScimError(409, `the card number …${card.slice(-4)} is another user's: a card opens doors for one person`, 'uniqueness');
    }
    await users.replaceSmartcards(emailId, next);
  }
}
