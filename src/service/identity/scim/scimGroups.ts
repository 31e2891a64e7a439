import * as z from 'zod';
import type { IdentitySource } from '../../../api/identity.js';
import { badScim, ScimError } from './scimErrors.js';
import type { ScimFilter } from './scimFilter.js';
import { attr, checked, isScimObject, type ScimObject } from './scimObjects.js';
import { applyPatch, type PatchOperation } from './scimPatch.js';
import { GROUP_SCHEMA, type Page, withMeta } from './scimResource.js';
import { filterSql, notProvisioned, ownedByLdap, type ScimDeps } from './scimUsers.js';

/**
 * SCIM's groups as the service's user groups (docs/identity-sources.md, "Groups"): `id` is the group's unique_id,
 * `displayName` its name, `members` its users by their SCIM id. A group LDAP owns is read, never written (409
 * mutability); a local one is claimed by PUT or PATCH. Each write runs in the request's transaction.
 */

interface GroupRow {
  group_id: number;
  name: string;
  source: IdentitySource;
  external_id: string | null;
  unique_id: string;
}

/** A member as answered: the user's SCIM id and e-mail. */
interface Member {
  unique_id: string;
  email: string;
}

/** What a group body asserts; undefined: not asserted (left as it is). */
interface GroupFields {
  displayName?: string;
  externalId?: string | null;
  /** The members' SCIM ids, in the order given. */
  members?: string[];
}

const GROUP_FILTERS: Record<string, string> = {
  displayname: 'lower(name) = lower(?)',
  externalid: 'external_id = ?',
  id: 'unique_id = lower(?)',
};
const COLUMNS = 'group_id, name, source, external_id, unique_id';

const displayNameSchema = z.string().trim().min(1, 'must not be empty').max(200, 'at most 200 characters');
const externalIdSchema = z.string().max(500, 'at most 500 characters').nullable();
const membersSchema = z.array(z.unknown()).max(100_000, 'at most 100,000 members');

/** A group body's fields, checked (400 invalidValue naming the attribute); id, meta and what the service does not keep are ignored. */
function readGroupBody(body: unknown, complete: boolean): GroupFields {
  if (!isScimObject(body)) throw badScim('invalidSyntax', 'a group is a JSON object (urn:ietf:params:scim:schemas:core:2.0:Group)');
  const fields: GroupFields = {};
  const displayName = attr(body, 'displayName');
  if (displayName === undefined || displayName === null) throw badScim('invalidValue', 'displayName is required');
  fields.displayName = checked(displayNameSchema, displayName, 'invalidValue', 'displayName');
  const externalId = attr(body, 'externalId');
  if (externalId !== undefined) fields.externalId = checked(externalIdSchema, externalId, 'invalidValue', 'externalId');
  else if (complete) fields.externalId = null;
  const members = attr(body, 'members');
  if (members !== undefined || complete) {
    fields.members = checked(membersSchema, members ?? [], 'invalidValue', 'members').map((m, i) => {
      const value = attr(m, 'value');
      if (typeof value !== 'string' || value === '') throw badScim('invalidValue', `members[${i}] needs a "value": a user's id`);
      return value.toLowerCase();
    });
  }
  return fields;
}

export class ScimGroups {
  constructor(private readonly deps: ScimDeps) {}

  /** The user group of SCIM id `id`, or 404. */
  async find(id: string): Promise<GroupRow> {
    const group = await this.deps.db.get<GroupRow>(`SELECT ${COLUMNS} FROM groups WHERE unique_id = ? AND type = 'users'`, [id.toLowerCase()]);
    if (group === undefined) throw new ScimError(404, `no group with id ${id}`);
    return group;
  }

  /** The resource of SCIM id `id`, or 404. */
  async read(id: string, base: string): Promise<ScimObject> {
    return this.resource(await this.find(id), base);
  }

  /** Groups as resources, their members read in one query. */
  async resources(rows: readonly GroupRow[], base: string): Promise<ScimObject[]> {
    if (rows.length === 0) return [];
    const { db } = this.deps;
    const members = new Map<number, Member[]>();
    for (const m of await db.all<Member & { group_id: number }>(
      `SELECT m.group_id, u.unique_id, u.email FROM group_members m JOIN users u ON u.email_id = m.member_id
          WHERE u.removed_at IS NULL AND m.group_id ${db.inJsonIds} ORDER BY u.email_id`,
      [JSON.stringify(rows.map((g) => g.group_id))],
    )) {
      const list = members.get(Number(m.group_id)) ?? [];
      list.push(m);
      members.set(Number(m.group_id), list);
    }
    return rows.map((group) => {
      const resource: ScimObject = { schemas: [GROUP_SCHEMA], id: group.unique_id };
      if (group.external_id !== null) resource.externalId = group.external_id;
      resource.displayName = group.name;
      resource.members = (members.get(group.group_id) ?? []).map((m) => ({
        value: m.unique_id,
        display: m.email,
        $ref: `${base}/Users/${m.unique_id}`,
        type: 'User',
      }));
      return withMeta(resource, { resourceType: 'Group', location: `${base}/Groups/${group.unique_id}` });
    });
  }

  async resource(group: GroupRow, base: string): Promise<ScimObject> {
    return (await this.resources([group], base))[0]!;
  }

  /** One page of the user groups matching `filter`, in a stable order (group_id), and their total. */
  async list(filter: ScimFilter | undefined, page: Page, base: string): Promise<{ total: number; resources: ScimObject[] }> {
    const { where, params } = filter === undefined ? { where: '1 = 1', params: [] } : filterSql(filter, GROUP_FILTERS, 'groups');
    const { db } = this.deps;
    const total = Number((await db.value<number>(`SELECT count(*) FROM groups WHERE type = 'users' AND ${where}`, params)) ?? 0);
    if (page.count === 0) return { total, resources: [] };
    const rows = await db.all<GroupRow>(`SELECT ${COLUMNS} FROM groups WHERE type = 'users' AND ${where} ORDER BY group_id LIMIT ? OFFSET ?`, [
      ...params,
      page.count,
      page.startIndex - 1,
    ]);
    return { total, resources: await this.resources(rows, base) };
  }

  /** POST /Groups: a new user group of SCIM's; a user group of that name already there is 409 uniqueness. */
  async create(body: unknown, base: string): Promise<ScimObject> {
    const fields = readGroupBody(body, false);
    await this.checkName(fields.displayName!, null);
    const groupId = (await this.deps.db.value<number>(
      "INSERT INTO groups (type, name, source, external_id) VALUES ('users', ?, 'scim', ?) RETURNING group_id",
      [fields.displayName!, fields.externalId ?? null],
    ))!;
    await this.setMembers(groupId, fields.members ?? []);
    return this.resource((await this.byGroupId(groupId))!, base);
  }

  /** PUT /Groups/{id}: name, externalId and members as the body says (members absent: kept); a local group claimed. */
  async replace(group: GroupRow, body: unknown, base: string): Promise<ScimObject> {
    if (group.source === 'ldap') throw ownedByLdap(`group ${group.name}`, 'members', this.deps);
    return this.write(group, readGroupBody(body, false), base);
  }

  /** PATCH /Groups/{id}: the operations applied to the group as answered, the result written. */
  async patch(group: GroupRow, operations: readonly PatchOperation[], base: string): Promise<ScimObject> {
    if (group.source === 'ldap') throw ownedByLdap(`group ${group.name}`, 'members', this.deps);
    const patched = applyPatch(await this.resource(group, base), operations);
    return this.write(group, readGroupBody(patched, true), base);
  }

  /** DELETE /Groups/{id}: the group deleted (its members with it; the access levels naming it stay); only a group SCIM made or claimed. */
  async remove(group: GroupRow): Promise<void> {
    if (group.source === 'ldap') throw ownedByLdap(`group ${group.name}`, 'members', this.deps);
    if (group.source !== 'scim') throw notProvisioned(`group ${group.name}`);
    await this.deps.db.run('DELETE FROM groups WHERE group_id = ?', [group.group_id]);
  }

  private byGroupId(groupId: number): Promise<GroupRow | undefined> {
    return this.deps.db.get<GroupRow>(`SELECT ${COLUMNS} FROM groups WHERE group_id = ?`, [groupId]);
  }

  /** 409 uniqueness when another user group has the name (compared case-blind: Entra ID matches groups by it). */
  private async checkName(name: string, groupId: number | null): Promise<void> {
    const taken = await this.deps.db.value("SELECT 1 FROM groups WHERE type = 'users' AND lower(name) = lower(?) AND group_id <> ?", [name, groupId ?? -1]);
    if (taken !== undefined) {
      throw new ScimError(
        409,
        `a user group named ${name} is already at the service: find it (filter displayName eq "${name}") and claim it with PUT or PATCH`,
        'uniqueness',
      );
    }
  }

  private async write(group: GroupRow, fields: GroupFields, base: string): Promise<ScimObject> {
    if (fields.displayName!.toLowerCase() !== group.name.toLowerCase()) await this.checkName(fields.displayName!, group.group_id);
    await this.deps.db.run("UPDATE groups SET source = 'scim', source_dn = NULL, source_gone_at = NULL, name = ?, external_id = ? WHERE group_id = ?", [
      fields.displayName!,
      fields.externalId === undefined ? group.external_id : fields.externalId,
      group.group_id,
    ]);
    if (fields.members !== undefined) await this.setMembers(group.group_id, fields.members);
    return this.resource((await this.byGroupId(group.group_id))!, base);
  }

  /** The group's members become the users of `ids` (SCIM ids): only the difference is written. An unknown id is 400 invalidValue. */
  private async setMembers(groupId: number, ids: readonly string[]): Promise<void> {
    const { db } = this.deps;
    const wanted = [...new Set(ids)];
    const found = await db.all<{ email_id: number; unique_id: string }>(
      `SELECT email_id, unique_id FROM users WHERE removed_at IS NULL AND unique_id ${db.inJsonTexts}`,
      [JSON.stringify(wanted)],
    );
    const known = new Set(found.map((u) => u.unique_id));
    const unknown = wanted.filter((id) => !known.has(id));
    if (unknown.length > 0) {
      const shown = unknown.slice(0, 5).join(', ') + (unknown.length > 5 ? ` and ${unknown.length - 5} more` : '');
      throw badScim('invalidValue', `members: no user with id ${shown}`);
    }
    const next = new Set(found.map((u) => Number(u.email_id)));
    const current = new Set((await db.column<number>('SELECT member_id FROM group_members WHERE group_id = ?', [groupId])).map(Number));
    const gone = [...current].filter((id) => !next.has(id));
    const added = [...next].filter((id) => !current.has(id));
    if (gone.length > 0) await db.run(`DELETE FROM group_members WHERE group_id = ? AND member_id ${db.inJsonIds}`, [groupId, JSON.stringify(gone)]);
    if (added.length > 0) {
      // WHERE true: SQLite reads an upsert's ON after a SELECT's FROM as a join without it.
      await db.run(`INSERT INTO group_members (group_id, member_id) SELECT ?, value FROM ${db.jsonIdRows} WHERE true ON CONFLICT DO NOTHING`, [
        groupId,
        JSON.stringify(added),
      ]);
    }
  }
}
