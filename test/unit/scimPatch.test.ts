import { describe, expect, it } from 'vitest';
import { ScimError } from '../../src/service/identity/scim/scimErrors.js';
import { parseScimPath } from '../../src/service/identity/scim/scimFilter.js';
import type { ScimObject } from '../../src/service/identity/scim/scimObjects.js';
import { applyPatch, parsePatchRequest } from '../../src/service/identity/scim/scimPatch.js';
import { readUserBody } from '../../src/service/identity/scim/scimUserBody.js';

// PATCH as identity providers send it, applied to a resource as the service answers it, then read as the service
// reads a user. Every request body is transcribed from the page named beside it; none is made by our own encoder.

const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const CARD = parseScimPath(`${ENTERPRISE}:employeeNumber`);

/** A user as the service answers one (scimUserBody.ts renderUser), before any change. */
const user = (): ScimObject => ({
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:User', ENTERPRISE],
  id: '23a35c27-23d3-4c03-b4c5-6443c09e7173',
  externalId: '00ujl29u0le5T6Aj10h7',
  userName: 'test.user@okta.local',
  name: { givenName: 'Test', familyName: 'User', formatted: 'Test User' },
  displayName: 'Test User',
  emails: [{ value: 'test.user@okta.local', type: 'work', primary: true }],
  active: true,
  groups: [],
  [ENTERPRISE]: { employeeNumber: '4213578' },
  meta: { resourceType: 'User', version: 'W/"0123456789abcdef"' },
});

/** A group as the service answers one, with two members. */
const group = (): ScimObject => ({
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
  id: 'abf4dd94-a4c0-4f67-89c9-76b03340cb9b',
  displayName: 'Test SCIMv2',
  members: [
    { value: '89bb1940-b905-4575-9e7f-6f887cfb368e', display: 'a@example.org', type: 'User' },
    { value: 'f648f8d5ea4e4cd38e9c', display: 'b@example.org', type: 'User' },
  ],
});

/** `body` (a PATCH request) applied to `resource`. */
const patched = (resource: ScimObject, body: unknown) => applyPatch(resource, parsePatchRequest(body));
/** What the service reads of a user after `body`. */
const afterUser = (body: unknown) => readUserBody(patched(user(), body), 'complete', CARD);
const memberIds = (resource: ScimObject) => (resource.members as Array<{ value: string }>).map((m) => m.value);

function refusal(run: () => unknown): { status: number; scimType?: string; detail: string } {
  try {
    run();
  } catch (err) {
    if (err instanceof ScimError) return { status: err.status, ...(err.scimType ? { scimType: err.scimType } : {}), detail: err.detail };
    throw err;
  }
  throw new Error('not refused');
}

describe('PATCH of a user', () => {
  it('deactivation as Okta sends it: a replace with no path, {active: false}', () => {
    // Okta, "SCIM 2.0 Protocol Reference", Update a specific User (PATCH): when a user is deactivated.
    const okta = { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: false } }] };
    expect(afterUser(okta)).toMatchObject({ active: false, email: 'test.user@okta.local', userName: 'test.user@okta.local', card: '4213578' });
  });

  it('deactivation as Entra ID sends it: "Replace" of path active, false, or "False" without the aadOptscim062020 flag', () => {
    // Entra ID, "Tutorial: Develop and plan provisioning for a SCIM endpoint", Disable User.
    const entra = { Operations: [{ op: 'Replace', path: 'active', value: false }], schemas: [PATCH_OP] };
    expect(afterUser(entra).active).toBe(false);
    // Entra ID, "Known issues ... SCIM 2.0 protocol compliance", requests made to disable users, without the flag.
    const legacy = { schemas: [PATCH_OP], Operations: [{ op: 'Replace', path: 'active', value: 'False' }] };
    expect(afterUser(legacy).active).toBe(false);
    const enable = { schemas: [PATCH_OP], Operations: [{ op: 'Replace', path: 'active', value: 'True' }] };
    expect(afterUser(enable).active).toBe(true);
  });

  it("Entra ID's updates: the work address and the family name; the userName", () => {
    // Entra ID tutorial, Update User [Multi-valued properties].
    const multi = {
      schemas: [PATCH_OP],
      Operations: [
        { op: 'Replace', path: 'emails[type eq "work"].value', value: 'updatedEmail@microsoft.com' },
        { op: 'Replace', path: 'name.familyName', value: 'updatedFamilyName' },
      ],
    };
    expect(afterUser(multi)).toMatchObject({ email: 'updatedemail@microsoft.com', givenName: 'Test', familyName: 'updatedFamilyName' });
    // Entra ID tutorial, Update User [Single-valued properties].
    const single = { schemas: [PATCH_OP], Operations: [{ op: 'Replace', path: 'userName', value: '5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com' }] };
    expect(afterUser(single).userName).toBe('5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com');
  });

  it('Entra ID replacing several attributes, without the flag (one path each) and with it (a value object of paths)', () => {
    // Entra ID, "Known issues ... SCIM 2.0 protocol compliance", requests to replace multiple attributes.
    const without = {
      schemas: [PATCH_OP],
      Operations: [
        { op: 'Replace', path: 'displayName', value: 'Pvlo' },
        { op: 'Replace', path: 'emails[type eq "work"].value', value: 'TestBcwqnm@test.microsoft.com' },
        { op: 'Replace', path: 'name.givenName', value: 'Gtfd' },
        { op: 'Replace', path: 'name.familyName', value: 'Pkqf' },
        { op: 'Replace', path: 'externalId', value: 'Eqpj' },
        { op: 'Replace', path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber', value: 'Eqpj' },
      ],
    };
    const read = patched(user(), without);
    expect(read[ENTERPRISE]).toEqual({ employeeNumber: 'Eqpj' });
    // The card attribute holds a card number: "Eqpj" is refused, naming the attribute.
    expect(refusal(() => readUserBody(read, 'complete', CARD))).toMatchObject({ status: 400, scimType: 'invalidValue' });
    expect(refusal(() => readUserBody(read, 'complete', CARD)).detail).toContain(`${ENTERPRISE}:employeeNumber`);
    // Without a card attribute configured, the rest is what the service keeps.
    expect(readUserBody(read, 'complete')).toMatchObject({
      givenName: 'Gtfd',
      familyName: 'Pkqf',
      externalId: 'Eqpj',
      email: 'testbcwqnm@test.microsoft.com',
    });
    const withFlag = {
      schemas: [PATCH_OP],
      Operations: [
        { op: 'replace', path: 'emails[type eq "work"].value', value: 'TestMhvaes@test.microsoft.com' },
        {
          op: 'replace',
          value: {
            displayName: 'Bjfe',
            'name.givenName': 'Kkom',
            'name.familyName': 'Unua',
            'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber': 'Aklq',
          },
        },
      ],
    };
    const flagged = patched(user(), withFlag);
    expect(flagged.name).toEqual({ givenName: 'Kkom', familyName: 'Unua', formatted: 'Test User' });
    expect(flagged[ENTERPRISE]).toEqual({ employeeNumber: 'Aklq' });
    expect(readUserBody(flagged, 'complete')).toMatchObject({ givenName: 'Kkom', familyName: 'Unua', email: 'testmhvaes@test.microsoft.com' });
  });

  it("an attribute the service does not keep is taken and ignored (Entra ID's nickName, RFC 7644's emails and nickname)", () => {
    // Entra ID, "Known issues ...", requests made to add a single-value string attribute (both forms).
    expect(patched(user(), { schemas: [PATCH_OP], Operations: [{ op: 'Add', path: 'nickName', value: 'Babs' }] }).nickName).toBe('Babs');
    // RFC 7644 section 3.5.2.1: a value object adding an address to emails and a nickname.
    const rfc = {
      schemas: [PATCH_OP],
      Operations: [{ op: 'add', value: { emails: [{ value: 'babs@jensen.org', type: 'home' }], nickname: 'Babs' } }],
    };
    const added = patched(user(), rfc);
    expect(added.emails).toEqual([
      { value: 'test.user@okta.local', type: 'work', primary: true },
      { value: 'babs@jensen.org', type: 'home' },
    ]);
    // The primary address stays the user's.
    expect(readUserBody(added, 'complete').email).toBe('test.user@okta.local');
    // RFC 7644 section 3.5.2.3: a replace of emails with a value object: the primary one is now bjensen's.
    const replaced = {
      schemas: [PATCH_OP],
      Operations: [
        {
          op: 'replace',
          value: {
            emails: [
              { value: 'bjensen@example.com', type: 'work', primary: true },
              { value: 'babs@jensen.org', type: 'home' },
            ],
            nickname: 'Babs',
          },
        },
      ],
    };
    expect(afterUser(replaced).email).toBe('bjensen@example.com');
    // An address added as primary is the one (primary is true on one value at most, RFC 7643 section 2.4).
    const primary = { schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'emails', value: [{ value: 'new@example.org', type: 'work', primary: true }] }] };
    expect(afterUser(primary).email).toBe('new@example.org');
  });

  it('a replace of a complex attribute keeps the sub-attributes it does not give; a remove takes the card away', () => {
    const name = patched(user(), { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'name', value: { givenName: 'Another' } }] });
    expect(name.name).toEqual({ givenName: 'Another', familyName: 'User', formatted: 'Test User' });
    const removed = afterUser({ schemas: [PATCH_OP], Operations: [{ op: 'remove', path: `${ENTERPRISE}:employeeNumber` }] });
    expect(removed.card).toBeNull();
    expect(afterUser({ schemas: [PATCH_OP], Operations: [{ op: 'remove', path: 'externalId' }] }).externalId).toBeNull();
  });

  it('attribute names and the envelope are case-blind; the given resource is not changed', () => {
    const before = user();
    const after = patched(before, { SCHEMAS: [PATCH_OP], operations: [{ OP: 'REPLACE', Path: 'ACTIVE', Value: false }] });
    expect(after.active).toBe(false);
    expect(before.active).toBe(true);
  });
});

describe('PATCH of a group', () => {
  it("Entra ID's member changes: Add with a value list, Remove with a value list (no flag) or a filter (flag)", () => {
    // Entra ID tutorial, Update Group [Add Members].
    const add = { schemas: [PATCH_OP], Operations: [{ op: 'Add', path: 'members', value: [{ $ref: null, value: 'a99962b9f99d4c4fac67' }] }] };
    expect(memberIds(patched(group(), add))).toEqual(['89bb1940-b905-4575-9e7f-6f887cfb368e', 'f648f8d5ea4e4cd38e9c', 'a99962b9f99d4c4fac67']);
    // Entra ID tutorial, Update Group [Remove Members].
    const remove = { schemas: [PATCH_OP], Operations: [{ op: 'Remove', path: 'members', value: [{ $ref: null, value: 'f648f8d5ea4e4cd38e9c' }] }] };
    expect(memberIds(patched(group(), remove))).toEqual(['89bb1940-b905-4575-9e7f-6f887cfb368e']);
    // Entra ID, "Known issues ...", requests made to remove a group member, with the flag.
    const filtered = { schemas: [PATCH_OP], Operations: [{ op: 'remove', path: 'members[value eq "89bb1940-b905-4575-9e7f-6f887cfb368e"]' }] };
    expect(memberIds(patched(group(), filtered))).toEqual(['f648f8d5ea4e4cd38e9c']);
    // Entra ID tutorial, Update Group [Non-member attributes].
    const rename = {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Replace', path: 'displayName', value: '1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName' }],
    };
    expect(patched(group(), rename).displayName).toBe('1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName');
  });

  it("Okta's: a replace with the id and name; a remove by filter and an add in one request; a replace of every member", () => {
    // Okta, "SCIM 2.0 Protocol Reference", Update a specific Group name.
    const name = { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { id: 'abf4dd94-a4c0-4f67-89c9-76b03340cb9b', displayName: 'Test SCIMv2' } }] };
    expect(patched(group(), name)).toMatchObject({ id: 'abf4dd94-a4c0-4f67-89c9-76b03340cb9b', displayName: 'Test SCIMv2' });
    // Okta, Update specific Group membership.
    const membership = {
      schemas: [PATCH_OP],
      Operations: [
        { op: 'remove', path: 'members[value eq "89bb1940-b905-4575-9e7f-6f887cfb368e"]' },
        { op: 'add', path: 'members', value: [{ value: '23a35c27-23d3-4c03-b4c5-6443c09e7173', display: 'test.user@okta.local' }] },
      ],
    };
    expect(memberIds(patched(group(), membership))).toEqual(['f648f8d5ea4e4cd38e9c', '23a35c27-23d3-4c03-b4c5-6443c09e7173']);
    // Okta, the full push of the membership with replace.
    const full = {
      schemas: [PATCH_OP],
      Operations: [
        {
          op: 'replace',
          path: 'members',
          value: [
            { value: '23a35c27-23d3-4c03-b4c5-6443c09e7173', display: 'test.user@okta.local' },
            { value: '89bb1940-b905-4575-9e7f-6f887cfb368e', display: 'test.user@okta.local' },
          ],
        },
      ],
    };
    expect(memberIds(patched(group(), full))).toEqual(['23a35c27-23d3-4c03-b4c5-6443c09e7173', '89bb1940-b905-4575-9e7f-6f887cfb368e']);
  });

  it("RFC 7644's: add a member (a member already there is not added twice), remove all, replace one by another", () => {
    // RFC 7644 section 3.5.2.1.
    const add = {
      schemas: [PATCH_OP],
      Operations: [
        {
          op: 'add',
          path: 'members',
          value: [{ display: 'Babs Jensen', $ref: 'https://example.com/v2/Users/2819c223...413861904646', value: '2819c223-7f76-453a-919d-413861904646' }],
        },
      ],
    };
    const once = patched(group(), add);
    expect(memberIds(patched(once, add))).toEqual(memberIds(once));
    expect(memberIds(once)).toHaveLength(3);
    // RFC 7644 section 3.5.2.2: remove all members; replace one member by another (no space before the quote).
    expect(patched(group(), { schemas: [PATCH_OP], Operations: [{ op: 'remove', path: 'members' }] }).members).toBeUndefined();
    const swap = {
      schemas: [PATCH_OP],
      Operations: [
        { op: 'remove', path: 'members[value eq"f648f8d5ea4e4cd38e9c"]' },
        {
          op: 'add',
          path: 'members',
          value: [{ display: 'James Smith', $ref: 'https://example.com/v2/Users/08e1d05d...473d93df9210', value: '08e1d05d...473d93df9210' }],
        },
      ],
    };
    expect(memberIds(patched(group(), swap))).toEqual(['89bb1940-b905-4575-9e7f-6f887cfb368e', '08e1d05d...473d93df9210']);
  });
});

describe('a PATCH of a large group', () => {
  const ids = (from: number, to: number) => Array.from({ length: to - from }, (_v, i) => `member-${String(from + i).padStart(5, '0')}`);
  const big = (members: string[]): ScimObject => Object.assign(group(), { members: members.map((value) => ({ value, type: 'User' })) });

  it('adds 5,000 to 5,000 once each, case-blind; removes by a value list and by filters, interleaved with other operations in order', () => {
    const adding = [...ids(5000, 10_000), ...ids(0, 3), 'MEMBER-00004', 'member-09999'];
    const grown = patched(big(ids(0, 5000)), { schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'members', value: adding.map((value) => ({ value })) }] });
    expect(memberIds(grown)).toEqual(ids(0, 10_000));
    const shrunk = patched(grown, {
      schemas: [PATCH_OP],
      Operations: [
        { op: 'remove', path: 'members', value: ids(0, 5000).map((value) => ({ value: value.toUpperCase() })) },
        ...ids(5000, 5990).map((value) => ({ op: 'remove', path: `members[value eq "${value.toUpperCase()}"]` })),
        // An add between removes by filter: the removes after it see it (member-05000 comes back, then goes again).
        { op: 'add', path: 'members', value: [{ value: 'member-05000' }, { value: 'member-10000' }] },
        { op: 'remove', path: 'members[value eq "member-05000"]' },
        { op: 'remove', path: 'members[value eq "member-06000"]' },
        { op: 'replace', path: 'displayName', value: 'Renamed' },
      ],
    });
    expect(memberIds(shrunk)).toEqual([...ids(5990, 6000), ...ids(6001, 10_000), 'member-10000']);
    expect(shrunk.displayName).toBe('Renamed');
  });

  it('a remove by filter on an attribute of one value is still refused as written; one on another attribute is not mixed in', () => {
    const one = Object.assign(group(), { members: { value: 'x' } });
    expect(refusal(() => patched(one, { schemas: [PATCH_OP], Operations: [{ op: 'remove', path: 'members[value eq "x"]' }] }))).toMatchObject({
      status: 400,
      scimType: 'invalidPath',
    });
    const withEmails = Object.assign(big(['a', 'b']), { emails: [{ value: 'a' }, { value: 'c' }] });
    const after = patched(withEmails, {
      schemas: [PATCH_OP],
      Operations: [
        { op: 'remove', path: 'members[value eq "a"]' },
        { op: 'remove', path: 'emails[value eq "c"]' },
      ],
    });
    expect(memberIds(after)).toEqual(['b']);
    expect(after.emails).toEqual([{ value: 'a' }]);
  });
});

describe('a PATCH request that is not one', () => {
  it('is 400 with the RFC type saying what to change', () => {
    expect(refusal(() => parsePatchRequest({ Operations: [{ op: 'replace', value: { active: false } }] }))).toEqual({
      status: 400,
      scimType: 'invalidSyntax',
      detail: `the PATCH request: schemas: required (expected array)`,
    });
    expect(refusal(() => parsePatchRequest({ schemas: [PATCH_OP], Operations: [{ op: 'move', path: 'active' }] })).detail).toBe(
      'Operations[0]: op: expected add, replace or remove',
    );
    // RFC 7644 section 3.5.2.2: a remove without a path is noTarget.
    expect(refusal(() => parsePatchRequest({ schemas: [PATCH_OP], Operations: [{ op: 'remove', value: { active: false } }] }))).toMatchObject({
      scimType: 'noTarget',
    });
    expect(refusal(() => parsePatchRequest({ schemas: [PATCH_OP], Operations: [{ op: 'replace', value: false }] }))).toMatchObject({
      scimType: 'invalidValue',
    });
    expect(refusal(() => parsePatchRequest({ schemas: [PATCH_OP], Operations: [] })).detail).toContain('list at least one operation');
    // RFC 7644 section 3.5.2.3: a replace whose filter matches no value is noTarget.
    expect(
      refusal(() => patched(user(), { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'emails[type eq "home"].value', value: 'x@example.org' }] })),
    ).toMatchObject({ scimType: 'noTarget' });
    // A sub-attribute of a multi-valued attribute needs a filter naming the values.
    expect(refusal(() => patched(user(), { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'emails.value', value: 'x@example.org' }] })).detail).toBe(
      'emails has several values: name the ones to change with a filter (emails[type eq "work"].value)',
    );
  });

  it('a user left without an e-mail address, or with a value of the wrong kind, is 400 invalidValue', () => {
    expect(refusal(() => afterUser({ schemas: [PATCH_OP], Operations: [{ op: 'remove', path: 'emails' }] }))).toMatchObject({
      scimType: 'invalidValue',
      detail: 'a user needs an e-mail address (emails[].value): the service knows its users by it',
    });
    expect(refusal(() => afterUser({ schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: 'maybe' }] })).detail).toBe(
      'active: expected true or false',
    );
    expect(
      refusal(() => afterUser({ schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'emails[type eq "work"].value', value: 'not-an-address' }] })).detail,
    ).toBe('emails: "not-an-address" is not an e-mail address');
  });
});
