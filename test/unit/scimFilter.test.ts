import { describe, expect, it } from 'vitest';
import { ScimError } from '../../src/service/identity/scim/scimErrors.js';
import { parseScimFilter, parseScimPath, pathName } from '../../src/service/identity/scim/scimFilter.js';

// The filters and paths identity providers send, as their documentation and RFC 7644 write them. Each fixture names
// the page it comes from.

/** The refusal `run` ends with: its status, SCIM type and detail. */
function refusal(run: () => unknown): { status: number; scimType?: string; detail: string } {
  try {
    run();
  } catch (err) {
    if (err instanceof ScimError) return { status: err.status, ...(err.scimType ? { scimType: err.scimType } : {}), detail: err.detail };
    throw err;
  }
  throw new Error('not refused');
}

/** What a filter asks, in short: `name=value` for each comparison. */
const asked = (text: string) => parseScimFilter(text).map((c) => `${pathName(c.path)}=${JSON.stringify(c.value)}`);

describe('SCIM filters', () => {
  it("Okta's and Entra ID's lookups: userName, externalId, displayName, the work address", () => {
    // Okta, "SCIM 2.0 Protocol Reference", Determine if the User already exists:
    // GET /scim/v2/Users?filter=userName%20eq%20%22test.user%40okta.local%22&startIndex=1&count=100
    expect(asked(decodeURIComponent('userName%20eq%20%22test.user%40okta.local%22'))).toEqual(['username="test.user@okta.local"']);
    // Microsoft Entra ID, "Tutorial: Develop and plan provisioning for a SCIM endpoint", Get User by query and Get
    // Group by displayName.
    expect(asked('userName eq "Test_User_00aa00aa-bb11-cc22-dd33-44ee44ee44ee"')).toEqual(['username="Test_User_00aa00aa-bb11-cc22-dd33-44ee44ee44ee"']);
    expect(asked('displayName eq "displayName"')).toEqual(['displayname="displayName"']);
    // The same page, "/Users": uniqueness on the work address must be filterable.
    const work = parseScimFilter('emails[type eq "work"].value eq "user@contoso.com"');
    expect(work).toEqual([
      { path: { attribute: 'emails', filter: [{ path: { attribute: 'type' }, value: 'work' }], subAttribute: 'value' }, value: 'user@contoso.com' },
    ]);
    // The same page, "Handling provisioning and deprovisioning of users", Example 1 (the value unquoted).
    expect(asked('externalId eq jyoung')).toEqual(['externalid="jyoung"']);
  });

  it('comparisons joined by and; operators and attribute names in any case; escapes and URNs read', () => {
    expect(asked('userName EQ "bjensen" AND externalId eq "b\\"j"')).toEqual(['username="bjensen"', 'externalid="b\\"j"']);
    // RFC 7644 section 3.4.2.2 writes a core attribute with its schema's URN: the attribute itself.
    expect(asked('urn:ietf:params:scim:schemas:core:2.0:User:userName eq "J"')).toEqual(['username="J"']);
    expect(asked('urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber eq "701984"')).toEqual([
      'urn:ietf:params:scim:schemas:extension:enterprise:2.0:user:employeenumber="701984"',
    ]);
    expect(asked('active eq false and id eq 42')).toEqual(['active=false', 'id=42']);
  });

  it("RFC 7644's other filters are 400 invalidFilter, saying what is not supported", () => {
    // RFC 7644 section 3.4.2.2, the example filters.
    for (const [filter, why] of [
      ['name.familyName co "O\'Malley"', 'the operator co is not supported (only eq, joined by and: userName eq "bjensen")'],
      ['userName sw "J"', 'the operator sw is not supported'],
      ['title pr', 'the operator pr is not supported'],
      ['meta.lastModified gt "2011-05-13T04:42:34Z"', 'the operator gt is not supported'],
      ['title pr and userType eq "Employee"', 'the operator pr is not supported'],
      ['userType eq "Intern" or title pr', '"or" is not supported'],
      ['userType eq "Employee" and (emails co "example.com" or emails.value co "example.org")', 'parentheses are not supported'],
      ['userType eq "Employee" and emails[type eq "work" and value co "@example.com"]', 'the operator co is not supported'],
      ['userName eq "unterminated', 'a string that ends with " expected'],
      ['', 'is empty'],
    ]) {
      const refused = refusal(() => parseScimFilter(filter!));
      expect(refused).toMatchObject({ status: 400, scimType: 'invalidFilter' });
      expect(refused.detail).toContain(why);
    }
    expect(refusal(() => parseScimFilter(`userName eq "${'x'.repeat(1000)}"`)).detail).toBe('the filter is over 1000 characters');
  });
});

describe('SCIM attribute paths', () => {
  it("the paths of Okta's and Entra ID's PATCH requests", () => {
    // Entra ID, "Update User [Multi-valued properties]".
    expect(parseScimPath('emails[type eq "work"].value')).toEqual({
      attribute: 'emails',
      filter: [{ path: { attribute: 'type' }, value: 'work' }],
      subAttribute: 'value',
    });
    expect(parseScimPath('name.familyName')).toEqual({ attribute: 'name', subAttribute: 'familyName' });
    // Entra ID, "Known issues ... SCIM 2.0 protocol compliance", requests to replace multiple attributes.
    expect(parseScimPath('urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber')).toEqual({
      schema: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User',
      attribute: 'employeeNumber',
    });
    // Okta, "Update specific Group membership"; RFC 7644 section 3.5.2.2 (no space before the quote).
    expect(parseScimPath('members[value eq "89bb1940-b905-4575-9e7f-6f887cfb368e"]')).toEqual({
      attribute: 'members',
      filter: [{ path: { attribute: 'value' }, value: '89bb1940-b905-4575-9e7f-6f887cfb368e' }],
    });
    expect(parseScimPath('members[value eq"2819c223...919d-413861904646"]').filter).toEqual([
      { path: { attribute: 'value' }, value: '2819c223...919d-413861904646' },
    ]);
  });

  it('a path that is not one is 400 invalidPath, naming it', () => {
    expect(refusal(() => parseScimPath('name.given.extra'))).toEqual({
      status: 400,
      scimType: 'invalidPath',
      detail: 'the path "name.given.extra": "name.given.extra" is not an attribute path (attr, attr.sub or urn:...:attr)',
    });
    expect(refusal(() => parseScimPath('emails[type eq "work" and value ew "example.com"]')).detail).toContain('the operator ew is not supported');
    expect(refusal(() => parseScimPath('emails[type eq "work"')).detail).toContain('"]" closing the filter of the values expected');
    expect(refusal(() => parseScimPath('members[value eq "x"] trailing')).detail).toContain('nothing more expected');
  });
});
