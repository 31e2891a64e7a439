import * as z from 'zod';
import { emailParam, smartcardParam } from '../../params.js';
import { badScim } from './scimErrors.js';
import type { ScimPath } from './scimFilter.js';
import { attr, checked, isScimObject, setAttr, type ScimObject } from './scimObjects.js';
import { USER_SCHEMA } from './scimResource.js';

/**
 * A SCIM user and a service user, both ways (docs/identity-sources.md, "Users"): the fields a body asserts, checked,
 * and the resource a user row is answered as. Pure: no IO.
 */

/** What a body says of a user; undefined: not asserted (left as it is). */
export interface UserFields {
  userName?: string;
  externalId?: string | null;
  givenName?: string;
  familyName?: string;
  /** The chosen address, lower case (the service's key: compared case-blind). */
  email?: string;
  active?: boolean;
  /** The card number from the configured attribute; null: none (the SCIM card removed). */
  card?: string | null;
}

/** How a body is read: as a PUT or POST asserts it (absent: not asserted), or as a patched whole (absent: removed). */
export type BodyReading = 'asserted' | 'complete';

const name = z.string().trim().max(200, 'at most 200 characters');
/** `true`, `false`, or Entra ID's "True" and "False" (strings, without its flag aadOptscim062020). */
const active = z.preprocess(
  (v) => (typeof v === 'string' && /^(true|false)$/i.test(v.trim()) ? v.trim().toLowerCase() === 'true' : v),
  z.boolean('expected true or false'),
);
const userNameSchema = z.string().trim().min(1, 'must not be empty').max(200, 'at most 200 characters');
const externalIdSchema = z.string().max(500, 'at most 500 characters').nullable();
const nameSchema = z.object({ givenName: name.nullish(), familyName: name.nullish() }).nullable();
const emailEntry = z.object({
  value: z.string().max(320).nullish(),
  type: z.string().max(50).nullish(),
  primary: active.nullish(),
});
const emailsSchema = z.array(z.unknown()).max(20, 'at most 20 addresses');
const cardSchema = z.union([z.string().trim(), z.number().int().nonnegative().transform(String)]).nullable();

/** The address a user is known by: the primary one, else the first of type work, else the first (docs/identity-sources.md). */
function chosenEmail(emails: unknown): string {
  const list = checked(emailsSchema, emails, 'invalidValue', 'emails').map((e, i) => {
    if (!isScimObject(e)) throw badScim('invalidValue', `emails[${i}] is not an object with a "value"`);
    return checked(emailEntry, { value: attr(e, 'value'), type: attr(e, 'type'), primary: attr(e, 'primary') }, 'invalidValue', `emails[${i}]`);
  });
  const withValue = list.filter((e) => typeof e.value === 'string' && e.value.trim() !== '');
  // Primary is true on one value at most (RFC 7643 section 2.4): after an add of a new primary one, that one.
  const chosen = withValue.findLast((e) => e.primary === true) ?? withValue.find((e) => e.type?.toLowerCase() === 'work') ?? withValue[0];
  if (chosen === undefined) throw badScim('invalidValue', 'a user needs an e-mail address (emails[].value): the service knows its users by it');
  const address = emailParam.safeParse(chosen.value);
  if (!address.success) throw badScim('invalidValue', `emails: ${JSON.stringify(chosen.value)} is not an e-mail address`);
  return address.data.toLowerCase();
}

/** The value at `path` (the configured card attribute) in `body`; undefined when absent. */
export function valueAt(body: ScimObject, path: ScimPath): unknown {
  const container = path.schema === undefined ? body : attr(body, path.schema);
  const value = attr(container, path.attribute);
  return path.subAttribute === undefined ? value : attr(value, path.subAttribute);
}

/** The card number at the configured attribute: digits (or facility:card), or null for an empty value. */
function readCard(value: unknown, where: string): string | null {
  const raw = checked(cardSchema, value, 'invalidValue', where);
  if (raw === null || raw === '') return null;
  const number = smartcardParam.shape.number.safeParse(raw);
  if (!number.success) throw badScim('invalidValue', `${where}: ${number.error.issues[0]?.message ?? 'not a card number'}`);
  return number.data;
}

/**
 * The fields a user body asserts, checked (400 invalidValue naming the attribute). Read-only attributes (id, meta,
 * groups), a password and attributes the service does not keep are ignored.
 */
export function readUserBody(body: unknown, reading: BodyReading, cardPath?: ScimPath): UserFields {
  if (!isScimObject(body)) throw badScim('invalidSyntax', 'a user is a JSON object (urn:ietf:params:scim:schemas:core:2.0:User)');
  const fields: UserFields = {};
  const complete = reading === 'complete';
  const userName = attr(body, 'userName');
  if (userName === undefined || userName === null) throw badScim('invalidValue', 'userName is required');
  fields.userName = checked(userNameSchema, userName, 'invalidValue', 'userName');
  const externalId = attr(body, 'externalId');
  if (externalId !== undefined) fields.externalId = checked(externalIdSchema, externalId, 'invalidValue', 'externalId');
  else if (complete) fields.externalId = null;
  const names = attr(body, 'name');
  if (names !== undefined || complete) {
    const read = checked(
      nameSchema,
      isScimObject(names) ? { givenName: attr(names, 'givenName'), familyName: attr(names, 'familyName') } : (names ?? null),
      'invalidValue',
      'name',
    );
    fields.givenName = read?.givenName ?? '';
    fields.familyName = read?.familyName ?? '';
  }
  const emails = attr(body, 'emails');
  if (emails !== undefined || complete) fields.email = chosenEmail(emails ?? []);
  const isActive = attr(body, 'active');
  if (isActive !== undefined && isActive !== null) fields.active = checked(active, isActive, 'invalidValue', 'active');
  if (cardPath !== undefined) {
    const card = valueAt(body, cardPath);
    if (card !== undefined) fields.card = readCard(card, cardPathName(cardPath));
    else if (complete) fields.card = null;
  }
  return fields;
}

function cardPathName(path: ScimPath): string {
  const local = path.subAttribute === undefined ? path.attribute : `${path.attribute}.${path.subAttribute}`;
  return path.schema === undefined ? local : `${path.schema}:${local}`;
}

/** What a user is answered from: the row's fields, the user's groups and SCIM card. */
export interface UserView {
  unique_id: string;
  external_id: string | null;
  username: string;
  first_name: string;
  last_name: string;
  email: string;
  suspended: number;
  groups: ReadonlyArray<{ unique_id: string; name: string }>;
  /** The user's card at the configured attribute (label SCIM); undefined: none. */
  card?: string;
}

/** A user as a SCIM resource, without meta (scimResource.ts withMeta adds it). */
export function renderUser(user: UserView, base: string, cardPath?: ScimPath): ScimObject {
  const full = `${user.first_name} ${user.last_name}`.trim();
  const resource: ScimObject = { schemas: [USER_SCHEMA], id: user.unique_id };
  if (user.external_id !== null) resource.externalId = user.external_id;
  resource.userName = user.username;
  const name: ScimObject = {};
  if (user.first_name !== '') name.givenName = user.first_name;
  if (user.last_name !== '') name.familyName = user.last_name;
  if (full !== '') resource.name = Object.assign(name, { formatted: full });
  resource.displayName = full === '' ? user.username : full;
  resource.emails = [{ value: user.email, type: 'work', primary: true }];
  resource.active = user.suspended === 0;
  resource.groups = user.groups.map((g) => ({ value: g.unique_id, display: g.name, $ref: `${base}/Groups/${g.unique_id}` }));
  if (cardPath !== undefined && user.card !== undefined) {
    let container = resource;
    if (cardPath.schema !== undefined) {
      (resource.schemas as string[]).push(cardPath.schema);
      container = {};
      setAttr(resource, cardPath.schema, container);
    }
    if (cardPath.subAttribute === undefined) setAttr(container, cardPath.attribute, user.card);
    else setAttr(container, cardPath.attribute, { [cardPath.subAttribute]: user.card });
  }
  return resource;
}
