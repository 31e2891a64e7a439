import { createHash } from 'node:crypto';
import { canonicalJson } from '../../../protocol/signing.js';
import { badScim, ScimError } from './scimErrors.js';
import { deleteAttr, type ScimObject } from './scimObjects.js';

/**
 * What users and groups share as SCIM resources (RFC 7643 section 3, RFC 7644 section 3.4.2 and 3.14): their
 * `meta` and version (a weak ETag of the content), the list answer and its paging, and the attributes asked for.
 */

export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';

/** The most resources one list answer holds: a larger `count` is cut to it, as RFC 7644 section 3.4.2.4 allows. */
export const MAX_RESULTS = 200;
/** `count` when the request gives none. */
const DEFAULT_COUNT = 100;

/** A service time (UTC `YYYY-MM-DD hh:mm:ss`) or milliseconds as SCIM's dateTime (ISO 8601). */
export function scimTime(time: string | number): string {
  return typeof time === 'number' ? new Date(time).toISOString().replace(/\.\d{3}Z$/, 'Z') : `${time.replace(' ', 'T')}Z`;
}

/** A resource's version: a weak ETag of its content (meta left out), which any change to it changes. */
function versionOf(resource: ScimObject): string {
  const content = Object.assign({}, resource);
  delete content.meta;
  return `W/"${createHash('sha256').update(canonicalJson(content)).digest('hex').slice(0, 16)}"`;
}

/** `resource` with its `meta` (its version computed from its content). */
export function withMeta(
  resource: ScimObject,
  meta: { resourceType: 'User' | 'Group'; location: string; created?: string; lastModified?: string },
): ScimObject {
  return Object.assign(resource, { meta: Object.assign({}, meta, { version: versionOf(resource) }) });
}

/**
 * Refuses a write whose If-Match names no current version (RFC 7644 section 3.14): 412, nothing changed. The
 * resource is read only when the request has an If-Match.
 */
export async function checkIfMatch(header: string | undefined, current: () => Promise<ScimObject>): Promise<void> {
  if (header === undefined) return;
  const version = ((await current()).meta as { version: string }).version;
  const given = header.split(',').map((v) => v.trim());
  if (given.includes('*') || given.includes(version)) return;
  throw new ScimError(412, `the resource changed since version ${given.join(', ')}: it is now ${version}; read it again (GET) and send the change anew`);
}

/** Where a list answer starts and how many it holds (RFC 7644 section 3.4.2.4). */
export interface Page {
  /** From 1. */
  startIndex: number;
  /** 0: the total only. */
  count: number;
}

function wholeNumber(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^-?\d{1,9}$/.test(value.trim()))
    throw badScim('invalidValue', `${name} must be a whole number (not ${JSON.stringify(value)})`);
  return Number(value);
}

/** The page a list request asks for: startIndex below 1 is 1, a negative count 0, a count over MAX_RESULTS cut to it. */
export function pageOf(query: Record<string, unknown>): Page {
  const start = wholeNumber(query.startIndex, 'startIndex') ?? 1;
  const count = wholeNumber(query.count, 'count') ?? DEFAULT_COUNT;
  return { startIndex: Math.max(1, start), count: Math.min(MAX_RESULTS, Math.max(0, count)) };
}

/** The ListResponse of one page of `total` resources. */
export function listResponse(total: number, page: Page, resources: readonly ScimObject[]): ScimObject {
  return { schemas: [LIST_SCHEMA], totalResults: total, startIndex: page.startIndex, itemsPerPage: resources.length, Resources: resources };
}

/** Always answered, whatever `attributes` or `excludedAttributes` say (RFC 7643 section 7, "returned": "always"). */
const ALWAYS = new Set(['id', 'schemas', 'meta']);

const names = (list: unknown): string[] | undefined =>
  typeof list === 'string'
    ? list
        .split(',')
        .map((n) => n.trim().toLowerCase())
        .filter((n) => n !== '')
    : undefined;

/** Whether attribute `key` is named in `list`: itself, one of its sub-attributes, or an attribute of its extension. */
const named = (list: readonly string[], key: string) => list.some((n) => n === key || n.startsWith(`${key}.`) || n.startsWith(`${key}:`));

/**
 * `resource` with only the top-level attributes the request asks for: `attributes` (those, with id, schemas and
 * meta) or `excludedAttributes` (all but those: Entra ID asks for groups without their members).
 */
export function projected(resource: ScimObject, query: Record<string, unknown>): ScimObject {
  const only = names(query.attributes);
  const excluded = names(query.excludedAttributes) ?? [];
  const out = Object.assign({}, resource);
  for (const key of Object.keys(out)) {
    const name = key.toLowerCase();
    if (ALWAYS.has(name)) continue;
    if ((only !== undefined && !named(only, name)) || excluded.includes(name)) deleteAttr(out, key);
  }
  return out;
}
