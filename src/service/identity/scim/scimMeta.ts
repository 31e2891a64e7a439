import { ScimError } from './scimErrors.js';
import type { ScimPath } from './scimFilter.js';
import type { ScimObject } from './scimObjects.js';
import { GROUP_SCHEMA, LIST_SCHEMA, MAX_RESULTS, USER_SCHEMA } from './scimResource.js';

/**
 * What the endpoint says of itself (RFC 7643 sections 5 to 7, RFC 7644 section 4): ServiceProviderConfig,
 * ResourceTypes and Schemas, static but for the configured card attribute, and truthful: PATCH, filters (eq, at
 * most MAX_RESULTS a page) and ETags are offered; bulk, password changes and sorting are not.
 */

const CONFIG_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig';
const RESOURCE_TYPE_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';
const SCHEMA_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Schema';

export function serviceProviderConfig(base: string): ScimObject {
  return {
    schemas: [CONFIG_SCHEMA],
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_RESULTS },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: true },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'OAuth Bearer Token',
        description: 'A bearer token made by `door-agent service key create --rank ADMIN --scope scim`, in the Authorization header',
        primary: true,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
  };
}

function resourceType(base: string, name: 'User' | 'Group', schema: string, extension?: string): ScimObject {
  const type: ScimObject = {
    schemas: [RESOURCE_TYPE_SCHEMA],
    id: name,
    name,
    endpoint: `/${name}s`,
    description: name === 'User' ? 'A person of the organization (a user of the service)' : 'A group of users (a user group of the service)',
    schema,
  };
  if (extension !== undefined) type.schemaExtensions = [{ schema: extension, required: false }];
  type.meta = { resourceType: 'ResourceType', location: `${base}/ResourceTypes/${name}` };
  return type;
}

export function resourceTypes(base: string, cardPath?: ScimPath): ScimObject[] {
  return [resourceType(base, 'User', USER_SCHEMA, cardPath?.schema), resourceType(base, 'Group', GROUP_SCHEMA)];
}

type Mutability = 'readOnly' | 'readWrite' | 'immutable';

/** One attribute's definition (RFC 7643 section 7). */
function attribute(
  name: string,
  description: string,
  options: {
    type?: string;
    multiValued?: boolean;
    required?: boolean;
    mutability?: Mutability;
    uniqueness?: string;
    caseExact?: boolean;
    sub?: ScimObject[];
  } = {},
): ScimObject {
  const definition: ScimObject = {
    name,
    type: options.type ?? 'string',
    multiValued: options.multiValued ?? false,
    description,
    required: options.required ?? false,
    caseExact: options.caseExact ?? false,
    mutability: options.mutability ?? 'readWrite',
    returned: 'default',
    uniqueness: options.uniqueness ?? 'none',
  };
  if (options.sub !== undefined) definition.subAttributes = options.sub;
  return definition;
}

const USER_ATTRIBUTES = [
  attribute('userName', 'Unique among the users provisioned over SCIM, compared case-blind', { required: true, uniqueness: 'server' }),
  attribute('name', "The person's name", {
    type: 'complex',
    sub: [
      attribute('givenName', 'First name'),
      attribute('familyName', 'Last name'),
      attribute('formatted', 'First and last name', { mutability: 'readOnly' }),
    ],
  }),
  attribute('displayName', 'Not stored: answered as the first and last name', { mutability: 'readOnly' }),
  attribute('emails', "The primary address (else the first of type work, else the first) is the user's e-mail at the service: required", {
    type: 'complex',
    multiValued: true,
    required: true,
    sub: [attribute('value', 'An e-mail address'), attribute('type', 'work, home or other'), attribute('primary', 'The address used', { type: 'boolean' })],
  }),
  attribute('active', 'false suspends the user: their cards are refused at every door', { type: 'boolean' }),
  attribute('groups', "The user's groups (change them through /Groups)", {
    type: 'complex',
    multiValued: true,
    mutability: 'readOnly',
    sub: [
      attribute('value', "The group's id", { mutability: 'readOnly' }),
      attribute('display', "The group's name", { mutability: 'readOnly' }),
      attribute('$ref', "The group's URI", { type: 'reference', mutability: 'readOnly' }),
    ],
  }),
];

const GROUP_ATTRIBUTES = [
  attribute('displayName', "The group's name at the service (access levels and agents name groups by it)", { required: true, uniqueness: 'server' }),
  attribute('members', "The group's users", {
    type: 'complex',
    multiValued: true,
    sub: [
      attribute('value', "A user's id", { mutability: 'immutable', caseExact: true }),
      attribute('display', "The user's e-mail", { mutability: 'readOnly' }),
      attribute('$ref', "The user's URI", { type: 'reference', mutability: 'immutable' }),
      attribute('type', 'User (a group is no member of another)', { mutability: 'immutable' }),
    ],
  }),
];

function schema(base: string, id: string, name: string, description: string, attributes: ScimObject[]): ScimObject {
  return { schemas: [SCHEMA_SCHEMA], id, name, description, attributes, meta: { resourceType: 'Schema', location: `${base}/Schemas/${id}` } };
}

/** The schemas: User and Group, and the card attribute's extension when the site names one there. */
export function schemas(base: string, cardPath?: ScimPath): ScimObject[] {
  const user = USER_ATTRIBUTES.slice();
  const list: ScimObject[] = [];
  const card = cardPath && attribute(cardPath.subAttribute ?? cardPath.attribute, "The person's card number (label SCIM at the service)");
  if (cardPath !== undefined && cardPath.schema !== undefined) {
    const attributes =
      cardPath.subAttribute === undefined ? [card!] : [attribute(cardPath.attribute, 'Holds the card number', { type: 'complex', sub: [card!] })];
    list.push(schema(base, cardPath.schema, 'Extension', "The attribute the site maps to a person's card", attributes));
  } else if (cardPath !== undefined) {
    user.push(cardPath.subAttribute === undefined ? card! : attribute(cardPath.attribute, 'Holds the card number', { type: 'complex', sub: [card!] }));
  }
  return [
    schema(base, USER_SCHEMA, 'User', 'A person of the organization', user),
    schema(base, GROUP_SCHEMA, 'Group', 'A group of users', GROUP_ATTRIBUTES),
    ...list,
  ];
}

/** A list of static documents as RFC 7644 section 4 answers them. */
export function listOf(resources: ScimObject[]): ScimObject {
  return { schemas: [LIST_SCHEMA], totalResults: resources.length, startIndex: 1, itemsPerPage: resources.length, Resources: resources };
}

/** One of `resources` by its id (case-blind), or 404. */
export function oneOf(resources: ScimObject[], id: string, what: string): ScimObject {
  const found = resources.find((r) => typeof r.id === 'string' && r.id.toLowerCase() === id.toLowerCase());
  if (found === undefined) throw new ScimError(404, `no ${what} ${id}: ${resources.map((r) => r.id).join(', ')} are known`);
  return found;
}
