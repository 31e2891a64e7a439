import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { runCli, tempDir } from '../support/cli.js';
import { type Answer, ENTERPRISE, PATCH_OP, scimService } from '../support/scimService.js';
import { itOn } from '../support/serviceDb.js';

// SCIM 2.0's users (docs/identity-sources.md, "SCIM 2.0") through the service's real routes, on a real database of
// the run's engine (SQLite, and PostgreSQL in the postgres project). The requests are the ones Okta and Entra ID
// document that they send, transcribed with the page each comes from; the RFC's own examples besides.

const tmp = tempDir('door-agent-scim-users-');
let service: Awaited<ReturnType<typeof scimService>>;
const scim = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => service.scim(method, path, body, headers);
const api = (method: string, path: string, body?: unknown) => service.api(method, path, body);

beforeAll(async () => {
  service = await scimService(tmp.path, 'scim_users', { enabled: true, cardAttribute: `${ENTERPRISE}:employeeNumber` });
});
afterAll(async () => {
  await service?.close();
  tmp.cleanup();
});

/** The service's own view of a user (GET /multipleusers), by e-mail. */
async function apiUser(email: string): Promise<Record<string, unknown> | undefined> {
  return ((await api('GET', '/multipleusers')).body as unknown as Array<Record<string, unknown>>).find((u) => u.email === email);
}
const cardsOf = async (emailId: unknown) => (await api('GET', `/user?email_id=${emailId}`)).body.smartcards;
const scimError = (status: number, scimType: string | undefined, detail: string) => ({
  status,
  body: { schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: String(status), ...(scimType ? { scimType } : {}), detail },
});
const brief = (a: Pick<Answer, 'status' | 'body'>) => ({ status: a.status, body: a.body });

describe('the SCIM token', () => {
  it("a request without a valid SCIM token is 401 in SCIM's shape with WWW-Authenticate, before its body is read", async () => {
    const none = await scim('GET', '/Users', undefined, {});
    expect(brief(none)).toEqual(
      scimError(401, undefined, 'a SCIM token is required: Authorization: Bearer <token of door-agent service key create --scope scim>'),
    );
    expect(none.headers['www-authenticate']).toBe('Bearer realm="door-agent SCIM"');
    // An API key opens no SCIM route; a broken body without a token is 401, never a parse error.
    const apiKey = await scim('POST', '/Users', '{"userName": ', { authorization: `Bearer ${service.apiKey}`, 'content-type': 'application/scim+json' });
    expect(apiKey.status).toBe(401);
    expect(apiKey.body.detail).toContain('not valid or has expired');
    // An expired token.
    const keys = new ApiKeys(service.db);
    const expired = await keys.create('ADMIN', 1, Date.now() - 2 * 86_400_000, 'scim');
    expect((await scim('GET', '/Users', undefined, { authorization: `Bearer ${expired}` })).status).toBe(401);
    // And the SCIM token opens no route of the API.
    expect(
      brief(
        await service.app
          .inject({ method: 'GET', url: '/multipleusers', headers: { authorization: `Bearer ${service.token}` } })
          .then((r) => ({ status: r.statusCode, body: JSON.parse(r.body) as Record<string, unknown> })),
      ),
    ).toEqual({
      status: 403,
      body: { error: 'this key is scoped to /scim/v2 (SCIM provisioning) and opens nothing else' },
    });
  });

  itOn('sqlite', 'door-agent service key create --scope scim makes one; another rank than ADMIN is a usage error', async () => {
    const dataDir = join(tmp.path, 'cli');
    mkdirSync(dataDir);
    const config = join(tmp.path, 'cli.yaml');
    writeFileSync(config, `server: { listen: 127.0.0.1:1, dataDir: ${dataDir} }\n`);
    const made = runCli(['service', 'key', 'create', '--rank', 'ADMIN', '--scope', 'scim', '--config', config]);
    expect(made.status, made.stderr).toBe(0);
    expect(made.stderr).toBe('created an ADMIN SCIM token (valid only under /scim/v2) that never expires; it is shown only this once\n');
    expect(made.stdout).toMatch(/^dak_[A-Za-z0-9_-]{43}\n$/);
    const refused = runCli(['service', 'key', 'create', '--rank', 'SUPER', '--scope', 'scim', '--config', config]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('--scope scim needs --rank ADMIN (not SUPER)');
    expect(runCli(['service', 'key', 'create', '--rank', 'ADMIN', '--scope', 'ldap', '--config', config]).stderr).toContain('--scope must be one of api, scim');
  });
});

describe('discovery', () => {
  it('ServiceProviderConfig says truly what is offered; ResourceTypes and Schemas list User, Group and the card extension', async () => {
    const config = await scim('GET', '/ServiceProviderConfig');
    expect(config.status).toBe(200);
    expect(config.headers['content-type']).toBe('application/scim+json; charset=utf-8');
    expect(config.body).toMatchObject({
      patch: { supported: true },
      bulk: { supported: false },
      filter: { supported: true, maxResults: 200 },
      changePassword: { supported: false },
      sort: { supported: false },
      etag: { supported: true },
      authenticationSchemes: [{ type: 'oauthbearertoken', primary: true }],
    });
    const types = await scim('GET', '/ResourceTypes');
    expect(types.body.Resources!.map((t) => [t.name, t.endpoint])).toEqual([
      ['User', '/Users'],
      ['Group', '/Groups'],
    ]);
    expect(types.body.Resources![0]!.schemaExtensions).toEqual([{ schema: ENTERPRISE, required: false }]);
    const schemas = await scim('GET', '/Schemas');
    expect(schemas.body.Resources!.map((s) => s.id)).toEqual([
      'urn:ietf:params:scim:schemas:core:2.0:User',
      'urn:ietf:params:scim:schemas:core:2.0:Group',
      ENTERPRISE,
    ]);
    expect((await scim('GET', `/Schemas/${ENTERPRISE}`)).body.attributes).toMatchObject([{ name: 'employeeNumber', type: 'string' }]);
    expect((await scim('GET', '/Schemas/urn:nothing')).status).toBe(404);
    expect(brief(await scim('POST', '/Bulk', { Operations: [] }))).toEqual(
      scimError(404, undefined, 'no SCIM endpoint POST /scim/v2/Bulk: this one serves Users, Groups, ServiceProviderConfig, ResourceTypes and Schemas'),
    );
  });

  it('without server.identity.scim, /scim/v2 is an unknown path of the API', async () => {
    const other = await scimService(tmp.path, 'scim_off', { enabled: false });
    try {
      expect(brief(await other.api('GET', '/scim/v2/Users'))).toEqual({ status: 404, body: { error: 'no endpoint GET /scim/v2/Users' } });
      expect((await other.scim('GET', '/Users')).status).toBe(401);
    } finally {
      await other.close();
    }
  });
});

describe('Okta\'s requests (Okta, "SCIM 2.0 Protocol Reference")', () => {
  let id: string;

  it('Determine if the User already exists, then Create the User: 201 with Location and ETag; a user of the service', async () => {
    const lookup = await scim('GET', '/Users?filter=userName%20eq%20%22test.user%40okta.local%22&startIndex=1&count=100');
    expect(lookup.body).toEqual({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
      totalResults: 0,
      startIndex: 1,
      itemsPerPage: 0,
      Resources: [],
    });
    const created = await scim('POST', '/Users', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName: 'test.user@okta.local',
      name: { givenName: 'Test', familyName: 'User' },
      emails: [{ primary: true, value: 'test.user@okta.local', type: 'work' }],
      displayName: 'Test User',
      locale: 'en-US',
      externalId: '00ujl29u0le5T6Aj10h7',
      groups: [],
      password: '1mz050nq',
      active: true,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    id = created.body.id as string;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.body).toMatchObject({
      userName: 'test.user@okta.local',
      externalId: '00ujl29u0le5T6Aj10h7',
      name: { givenName: 'Test', familyName: 'User' },
      displayName: 'Test User',
      emails: [{ value: 'test.user@okta.local', type: 'work', primary: true }],
      active: true,
      groups: [],
      meta: { resourceType: 'User', location: `http://localhost:80/scim/v2/Users/${id}` },
    });
    expect(created.headers.location).toBe(`http://localhost:80/scim/v2/Users/${id}`);
    expect(created.headers.etag).toBe((created.body.meta as { version: string }).version);
    expect(JSON.stringify(created.body)).not.toContain('1mz050nq');
    expect(await apiUser('test.user@okta.local')).toMatchObject({
      first_name: 'Test',
      last_name: 'User',
      username: 'test.user@okta.local',
      ad_status: 'ACTIVE',
    });
    const found = await scim('GET', '/Users?filter=userName%20eq%20%22test.user%40okta.local%22&startIndex=1&count=100');
    expect(found.body).toMatchObject({ totalResults: 1, itemsPerPage: 1, Resources: [{ id }] });
  });

  it('Update a specific User (PUT): the body Okta sends; GET answers the same version', async () => {
    const put = await scim('PUT', `/Users/${id}`, {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      id,
      userName: 'test.user@okta.local',
      name: { givenName: 'Another', middleName: 'Excited', familyName: 'User' },
      emails: [{ primary: true, value: 'test.user@okta.local', type: 'work', display: 'test.user@okta.local' }],
      active: true,
      groups: [],
      meta: { resourceType: 'User' },
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ name: { givenName: 'Another', familyName: 'User' }, externalId: '00ujl29u0le5T6Aj10h7' });
    const got = await scim('GET', `/Users/${id}`);
    expect(got.headers.etag).toBe(put.headers.etag);
    expect(got.body).toEqual(put.body);
  });

  it('Update a specific User (PATCH), deactivation: the user is suspended at the service and in the directory', async () => {
    const patch = await scim('PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: false } }] });
    expect(patch.status).toBe(200);
    expect(patch.body.active).toBe(false);
    const user = (await apiUser('test.user@okta.local'))!;
    expect(user.ad_status).toBe('SUSPENDED');
    const directory = (await api('GET', '/directory')).body as unknown as { users: Array<{ email_id: number; ad_status: string }> };
    expect(directory.users.find((u) => u.email_id === user.email_id)?.ad_status).toBe('SUSPENDED');
    expect((await service.db.value('SELECT source FROM users WHERE email_id = ?', [user.email_id as number])) ?? null).toBe('scim');
  });
});

describe('Entra ID\'s requests (Microsoft, "Tutorial: Develop and plan provisioning for a SCIM endpoint")', () => {
  let id: string;
  const userName = 'Test_User_00aa00aa-bb11-cc22-dd33-44ee44ee44ee';

  it('Create User, Get User, Get User by query, and by query with zero results', async () => {
    const created = await scim('POST', '/Users', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User', 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'],
      externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef',
      userName,
      active: true,
      emails: [{ primary: true, type: 'work', value: 'Test_User_11bb11bb-cc22-dd33-ee44-55ff55ff55ff@testuser.com' }],
      meta: { resourceType: 'User' },
      name: { formatted: 'givenName familyName', familyName: 'familyName', givenName: 'givenName' },
      roles: [],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    id = created.body.id as string;
    // The e-mail is the service's key, kept in lower case.
    expect(created.body.emails).toEqual([{ value: 'test_user_11bb11bb-cc22-dd33-ee44-55ff55ff55ff@testuser.com', type: 'work', primary: true }]);
    expect((await scim('GET', `/Users/${id}`)).body).toMatchObject({ id, userName, name: { givenName: 'givenName', familyName: 'familyName' } });
    // The query as Entra ID writes it (spaces as "+"), userName compared case-blind.
    const byQuery = await scim('GET', `/Users?filter=userName+eq+%22${userName.toUpperCase()}%22`);
    expect(byQuery.body).toMatchObject({ totalResults: 1, Resources: [{ id, externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef' }] });
    const byWork = await scim(
      'GET',
      `/Users?filter=${encodeURIComponent('emails[type eq "work"].value eq "TEST_USER_11bb11bb-cc22-dd33-ee44-55ff55ff55ff@testuser.com"')}`,
    );
    expect(byWork.body.totalResults).toBe(1);
    // The user's one address is their work and primary one: no home address to find.
    const byHome = await scim(
      'GET',
      `/Users?filter=${encodeURIComponent('emails[type eq "home"].value eq "test_user_11bb11bb-cc22-dd33-ee44-55ff55ff55ff@testuser.com"')}`,
    );
    expect(byHome.body).toMatchObject({ totalResults: 0, Resources: [] });
    const byExternal = await scim('GET', `/Users?filter=${encodeURIComponent('externalId eq "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"')}`);
    expect(byExternal.body.Resources!.map((r) => r.id)).toEqual([id]);
    // Only the attributes asked for, with id, schemas and meta (RFC 7643 section 7, "returned": "always").
    const only = await scim('GET', `/Users/${id}?attributes=userName,name.givenName`);
    expect(Object.keys(only.body).sort()).toEqual(['id', 'meta', 'name', 'schemas', 'userName']);
    const none = await scim('GET', `/Users?filter=${encodeURIComponent('userName eq "non-existent user"')}`);
    expect(none.body).toMatchObject({ totalResults: 0, Resources: [] });
  });

  it('Update User [Multi-valued properties] and [Single-valued properties]: the e-mail and the names follow', async () => {
    const multi = await scim('PATCH', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [
        { op: 'Replace', path: 'emails[type eq "work"].value', value: 'updatedEmail@microsoft.com' },
        { op: 'Replace', path: 'name.familyName', value: 'updatedFamilyName' },
      ],
    });
    expect(multi.status, JSON.stringify(multi.body)).toBe(200);
    expect(multi.body).toMatchObject({ emails: [{ value: 'updatedemail@microsoft.com' }], name: { familyName: 'updatedFamilyName' } });
    expect(await apiUser('updatedemail@microsoft.com')).toMatchObject({ last_name: 'updatedFamilyName' });
    const single = await scim('PATCH', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Replace', path: 'userName', value: '5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com' }],
    });
    expect(single.body.userName).toBe('5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com');
  });

  it('Disable User ("False" as Entra ID sends it without its flag), enabled again, then Delete User: 204, removed as DELETE /user', async () => {
    const disabled = await scim('PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'Replace', path: 'active', value: 'False' }] });
    expect(disabled.body.active).toBe(false);
    expect((await apiUser('updatedemail@microsoft.com'))!.ad_status).toBe('SUSPENDED');
    const enabled = await scim('PATCH', `/Users/${id}`, { Operations: [{ op: 'Replace', path: 'active', value: true }], schemas: [PATCH_OP] });
    expect(enabled.body.active).toBe(true);
    const emailId = (await apiUser('updatedemail@microsoft.com'))!.email_id;
    const deleted = await scim('DELETE', `/Users/${id}`);
    expect(deleted.status).toBe(204);
    expect(await apiUser('updatedemail@microsoft.com')).toBeUndefined();
    expect(await service.db.value('SELECT removed_at IS NOT NULL FROM users WHERE email_id = ?', [emailId as number])).toBeTruthy();
    expect(brief(await scim('GET', `/Users/${id}`))).toEqual(scimError(404, undefined, `no user with id ${id}`));
  });
});

describe("RFC 7644's requests, and the service's rules", () => {
  it("RFC 7644 section 3.3's new user has no e-mail: 400 invalidValue; section 3.5.1's PUT takes the first address", async () => {
    const rfc = {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName: 'bjensen',
      externalId: 'bjensen',
      name: { formatted: 'Ms. Barbara J Jensen III', familyName: 'Jensen', givenName: 'Barbara' },
    };
    expect(brief(await scim('POST', '/Users', rfc))).toEqual(
      scimError(400, 'invalidValue', 'a user needs an e-mail address (emails[].value): the service knows its users by it'),
    );
    const made = await scim('POST', '/Users', { ...rfc, emails: [{ value: 'barbara@example.com', type: 'work' }] });
    const id = made.body.id as string;
    const put = await scim(
      'PUT',
      `/Users/${id}`,
      {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
        id,
        userName: 'bjensen',
        externalId: 'bjensen',
        name: { formatted: 'Ms. Barbara J Jensen III', familyName: 'Jensen', givenName: 'Barbara', middleName: 'Jane' },
        roles: [],
        emails: [{ value: 'bjensen@example.com' }, { value: 'babs@jensen.org' }],
      },
      { authorization: `Bearer ${service.token}`, 'content-type': 'application/scim+json', 'if-match': made.headers.etag as string },
    );
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body.emails).toEqual([{ value: 'bjensen@example.com', type: 'work', primary: true }]);
  });

  it('a stale If-Match is 412 and changes nothing; the current one is taken', async () => {
    const made = await scim('POST', '/Users', { userName: 'etag', emails: [{ value: 'etag@example.org' }] });
    const id = made.body.id as string;
    const stale = made.headers.etag as string;
    await scim('PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'name.givenName', value: 'Eve' }] });
    const headers = (etag: string) => ({ authorization: `Bearer ${service.token}`, 'content-type': 'application/scim+json', 'if-match': etag });
    const refused = await scim('PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: false } }] }, headers(stale));
    expect(refused.status).toBe(412);
    expect(refused.body.detail).toContain('the resource changed since version');
    expect((await apiUser('etag@example.org'))!.ad_status).toBe('ACTIVE');
    const current = (await scim('GET', `/Users/${id}`)).headers.etag as string;
    expect(current).not.toBe(stale);
    const taken = await scim('PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: false } }] }, headers(current));
    expect(taken.status).toBe(200);
    expect((await scim('DELETE', `/Users/${id}`, undefined, { authorization: `Bearer ${service.token}`, 'if-match': current })).status).toBe(412);
  });

  it("a local user's e-mail on POST is 409 uniqueness; found by a filter and claimed by PUT, the user is SCIM's, with their record", async () => {
    const invited = await api('POST', '/invites', { emails: ['local@example.org'], no_email: true });
    const emailId = (invited.body.add_ids as number[])[0]!;
    await api('PUT', '/modifysmartcard', { email_id: emailId, smartcards: [{ number: '5550001', label: 'badge' }] });
    const refused = await scim('POST', '/Users', { userName: 'local', emails: [{ value: 'Local@Example.org', primary: true }] });
    expect(refused.status).toBe(409);
    expect(refused.body.scimType).toBe('uniqueness');
    expect(refused.body.detail).toContain('local@example.org is already a user of the service');
    const found = await scim('GET', `/Users?filter=${encodeURIComponent('emails.value eq "local@example.org"')}`);
    const id = found.body.Resources![0]!.id as string;
    const claimed = await scim('PATCH', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', value: { userName: 'local', externalId: 'x-1' } }],
    });
    expect(claimed.status).toBe(200);
    expect(await service.db.get('SELECT source, external_id, username FROM users WHERE email_id = ?', [emailId])).toEqual({
      source: 'scim',
      external_id: 'x-1',
      username: 'local',
    });
    // The claim did not touch the card the service gave (the provider sent none).
    expect(await cardsOf(emailId)).toEqual([{ number: '5550001', label: 'badge' }]);
    // userName is unique among SCIM's users, compared case-blind.
    const twin = await scim('POST', '/Users', { userName: 'LOCAL', emails: [{ value: 'twin@example.org' }] });
    expect(brief(twin)).toEqual(scimError(409, 'uniqueness', "userName LOCAL is another user's (userName is unique among SCIM's users, compared case-blind)"));
    expect(await apiUser('twin@example.org')).toBeUndefined();
  });

  it("a user LDAP owns is never taken: 409 mutability in the ownership rule's words, nothing changed", async () => {
    const invited = await api('POST', '/invites', { emails: ['ldap-person@example.org'], no_email: true });
    const emailId = (invited.body.add_ids as number[])[0]!;
    await service.db.run("UPDATE users SET source = 'ldap' WHERE email_id = ?", [emailId]);
    const id = (await scim('GET', `/Users?filter=${encodeURIComponent('emails.value eq "ldap-person@example.org"')}`)).body.Resources![0]!.id as string;
    const refused = await scim('PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: false } }] });
    expect(brief(refused)).toEqual(
      scimError(409, 'mutability', 'ldap-person@example.org is managed by LDAP: suspend or enable the account there; the next sync brings it here'),
    );
    const renamed = await scim('PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'name.givenName', value: 'Eve' }] });
    expect(renamed.body.detail).toBe(
      "ldap-person@example.org is managed by LDAP: change the person's name, e-mail or username there; the next sync brings it here",
    );
    expect((await scim('DELETE', `/Users/${id}`)).body.detail).toBe(
      'ldap-person@example.org is managed by LDAP: disable or delete the account there; the next sync brings it here',
    );
    expect(await apiUser('ldap-person@example.org')).toMatchObject({ ad_status: 'ACTIVE' });
  });

  it("the card attribute is the user's one card (label SCIM); another user's number is 409 naming its last 4 digits; removed with the attribute", async () => {
    const made = await scim('POST', '/Users', { userName: 'carded', emails: [{ value: 'carded@example.org' }], [ENTERPRISE]: { employeeNumber: '4213578' } });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body[ENTERPRISE]).toEqual({ employeeNumber: '4213578' });
    expect(made.body.schemas).toEqual(['urn:ietf:params:scim:schemas:core:2.0:User', ENTERPRISE]);
    const emailId = (await apiUser('carded@example.org'))!.email_id;
    expect(await cardsOf(emailId)).toEqual([{ number: '4213578', label: 'SCIM' }]);
    // Entra ID's path for it (Known issues ... SCIM 2.0 protocol compliance).
    const id = made.body.id as string;
    const taken = await scim('PATCH', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Replace', path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber', value: '5550001' }],
    });
    expect(brief(taken)).toEqual(scimError(409, 'uniqueness', "the card number …0001 is another user's: a card opens doors for one person"));
    expect(JSON.stringify(taken.body)).not.toContain('5550001');
    const changed = await scim('PATCH', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', value: { [`${ENTERPRISE}:employeeNumber`]: '4213579' } }],
    });
    expect(changed.status).toBe(200);
    expect(await cardsOf(emailId)).toEqual([{ number: '4213579', label: 'SCIM' }]);
    const notANumber = await scim('PATCH', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', path: `${ENTERPRISE}:employeeNumber`, value: 'A-17' }],
    });
    expect(notANumber.body).toMatchObject({ status: '400', scimType: 'invalidValue' });
    const removed = await scim('PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'remove', path: `${ENTERPRISE}:employeeNumber` }] });
    expect(removed.status).toBe(200);
    expect(await cardsOf(emailId)).toEqual([]);
  });

  it("the service's operators and suspensions are its own: no claim of a local ADMIN, SUPER or suspended user; no e-mail change of an operator", async () => {
    const invited = await api('POST', '/invites', { emails: ['boss@example.org', 'chief@example.org', 'held@example.org'], no_email: true });
    const [bossId, chiefId, heldId] = invited.body.add_ids as number[];
    const userIdOf = (emailId: unknown) => service.db.value<number>('SELECT user_id FROM users WHERE email_id = ?', [Number(emailId)]);
    expect((await api('PUT', '/modifyrank', { admin_user_id: await userIdOf(bossId), rank: 'SUPER' })).status).toBe(200);
    expect((await api('PUT', '/modifyrank', { admin_user_id: await userIdOf(chiefId), rank: 'ADMIN' })).status).toBe(200);
    expect((await api('PUT', '/togglesuspension', { email_id: heldId })).status).toBe(200);
    const idOf = async (email: string) =>
      (await scim('GET', `/Users?filter=${encodeURIComponent(`emails.value eq "${email}"`)}`)).body.Resources![0]!.id as string;
    // The reviewer's attack: a PUT that would make the SUPER's account the provider's, at the provider's address.
    const takeover = await scim('PUT', `/Users/${await idOf('boss@example.org')}`, {
      userName: 'boss',
      emails: [{ value: 'attacker@evil.test', primary: true }],
    });
    expect(brief(takeover)).toEqual(
      scimError(
        409,
        'mutability',
        "boss@example.org is an operator (SUPER) of the service: a source does not take over an operator's account; provision another address, or release the rank first",
      ),
    );
    const admin = await scim('PATCH', `/Users/${await idOf('chief@example.org')}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', value: { userName: 'chief' } }],
    });
    expect(admin.body.detail).toBe(
      "chief@example.org is an operator (ADMIN) of the service: a source does not take over an operator's account; provision another address, or release the rank first",
    );
    const lifted = await scim('PATCH', `/Users/${await idOf('held@example.org')}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', value: { active: true } }],
    });
    expect(brief(lifted)).toEqual(
      scimError(409, 'mutability', 'held@example.org is suspended at the service: make them active there (or remove them) before the provider takes them over'),
    );
    expect(
      await service.db.all(
        "SELECT email, source, suspended FROM users WHERE email IN ('boss@example.org', 'chief@example.org', 'held@example.org') ORDER BY email",
      ),
    ).toEqual([
      { email: 'boss@example.org', source: 'local', suspended: 0 },
      { email: 'chief@example.org', source: 'local', suspended: 0 },
      { email: 'held@example.org', source: 'local', suspended: 1 },
    ]);
    expect(await apiUser('attacker@evil.test')).toBeUndefined();

    // A SCIM user promoted at the service afterwards: the provider still writes their name, never their e-mail.
    const made = await scim('POST', '/Users', { userName: 'promoted', emails: [{ value: 'promoted@example.org' }] });
    const promotedId = made.body.id as string;
    expect((await api('PUT', '/modifyrank', { admin_user_id: await userIdOf((await apiUser('promoted@example.org'))!.email_id), rank: 'ADMIN' })).status).toBe(
      200,
    );
    const renamed = await scim('PATCH', `/Users/${promotedId}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'name.givenName', value: 'Pat' }] });
    expect(renamed.status).toBe(200);
    const readdressed = await scim('PATCH', `/Users/${promotedId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', path: 'emails[type eq "work"].value', value: 'attacker@evil.test' }],
    });
    expect(brief(readdressed)).toEqual(
      scimError(
        409,
        'mutability',
        "promoted@example.org is an operator (ADMIN) of the service: a source does not change an operator's e-mail; keep this address at the provider, or release the rank first",
      ),
    );
    expect(await apiUser('promoted@example.org')).toMatchObject({ first_name: 'Pat' });
    // Removed and brought back by POST, the record is a new member: REGULAR, the provider's.
    expect((await scim('DELETE', `/Users/${promotedId}`)).status).toBe(204);
    const back = await scim('POST', '/Users', { userName: 'promoted', emails: [{ value: 'promoted@example.org' }] });
    expect(back.status, JSON.stringify(back.body)).toBe(201);
    expect(await service.db.get("SELECT rank, source FROM users WHERE email = 'promoted@example.org'")).toEqual({ rank: 'REGULAR', source: 'scim' });
  });

  it('DELETE of a local user the provider never claimed is 409 mutability: removed at the service, not over SCIM', async () => {
    await api('POST', '/invites', { emails: ['stays@example.org'], no_email: true });
    const id = (await scim('GET', `/Users?filter=${encodeURIComponent('emails.value eq "stays@example.org"')}`)).body.Resources![0]!.id as string;
    expect(brief(await scim('DELETE', `/Users/${id}`))).toEqual(
      scimError(409, 'mutability', 'stays@example.org was not provisioned over SCIM: remove it at the service'),
    );
    expect(await apiUser('stays@example.org')).toMatchObject({ ad_status: 'ACTIVE' });
  });

  it("a SCIM write replaces only the user's SCIM card: the cards and PINs the service gave stay", async () => {
    const invited = await api('POST', '/invites', { emails: ['keeps@example.org'], no_email: true });
    const emailId = (invited.body.add_ids as number[])[0]!;
    const given = [
      { number: '6610001', label: 'badge', valid_until: '2030-01-01 00:00:00' },
      { number: '4711', label: 'PIN' },
    ];
    expect((await api('PUT', '/modifysmartcard', { email_id: emailId, smartcards: given })).status).toBe(200);
    const id = (await scim('GET', `/Users?filter=${encodeURIComponent('emails.value eq "keeps@example.org"')}`)).body.Resources![0]!.id as string;
    const claimed = await scim('PUT', `/Users/${id}`, {
      userName: 'keeps',
      emails: [{ value: 'keeps@example.org' }],
      [ENTERPRISE]: { employeeNumber: '6610002' },
    });
    expect(claimed.status, JSON.stringify(claimed.body)).toBe(200);
    expect(claimed.body[ENTERPRISE]).toEqual({ employeeNumber: '6610002' });
    expect(await cardsOf(emailId)).toEqual([...given, { number: '6610002', label: 'SCIM' }]);
    const changed = await scim('PATCH', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', path: `${ENTERPRISE}:employeeNumber`, value: '6610003' }],
    });
    expect(changed.status).toBe(200);
    expect(await cardsOf(emailId)).toEqual([...given, { number: '6610003', label: 'SCIM' }]);
    const removed = await scim('PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'remove', path: `${ENTERPRISE}:employeeNumber` }] });
    expect(removed.status).toBe(200);
    expect(await cardsOf(emailId)).toEqual(given);
  });

  it('a suspended guest leaves their guest links, as PUT /togglesuspension does', async () => {
    const link = await api('POST', '/magiclinkadmin', {
      email_list: ['guest-a@example.org', 'guest-b@example.org'],
      resource_id_list: [12],
      name: 'Visitors',
      start_time: '2026-01-01 00:00:00',
      end_time: '2027-01-01 00:00:00',
      time_mapping: [[], [[9, 17]], [[9, 17]], [[9, 17]], [[9, 17]], [[9, 17]], []],
      smartcards: [{ number: '7711001' }, { number: '7711002' }],
      send_email: false,
    });
    expect(link.status, JSON.stringify(link.body)).toBe(200);
    const id = (await scim('GET', `/Users?filter=${encodeURIComponent('emails.value eq "guest-a@example.org"')}`)).body.Resources![0]!.id as string;
    expect((await scim('PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: false } }] })).status).toBe(200);
    const stored = JSON.parse((await service.db.value<string>('SELECT link FROM guest_links WHERE magic_link_id = ?', [Number(link.body.magic_link_id)]))!);
    expect(stored).toMatchObject({ email_list: ['guest-b@example.org'], smartcards: [{ number: '7711002' }] });
  });

  it('paging: startIndex from 1, count cut to 200, count=0 the total only, the same order every time', async () => {
    await api('POST', '/invites', { emails: Array.from({ length: 210 }, (_, i) => `page${i}@example.org`), no_email: true });
    const total = (await scim('GET', '/Users?count=0')).body;
    expect(total).toMatchObject({ itemsPerPage: 0, startIndex: 1, Resources: [] });
    expect(total.totalResults as number).toBeGreaterThan(210);
    const big = await scim('GET', '/Users?count=500');
    expect(big.body.itemsPerPage).toBe(200);
    const first = (await scim('GET', '/Users?startIndex=1&count=100')).body.Resources!.map((r) => r.id);
    const second = (await scim('GET', '/Users?startIndex=101&count=100')).body.Resources!.map((r) => r.id);
    expect([...first, ...second]).toEqual(big.body.Resources!.map((r) => r.id));
    const last = await scim('GET', `/Users?startIndex=${total.totalResults as number}&count=10`);
    expect(last.body.itemsPerPage).toBe(1);
    expect((await scim('GET', '/Users?startIndex=0&count=-5')).body).toMatchObject({ startIndex: 1, itemsPerPage: 0 });
    expect((await scim('GET', '/Users?count=ten')).body).toMatchObject({ scimType: 'invalidValue', detail: 'count must be a whole number (not "ten")' });
  });

  it("malformed bodies and filters get the RFC's error shape with its scimType; nothing is written", async () => {
    const before = (await scim('GET', '/Users?count=0')).body.totalResults;
    expect((await scim('POST', '/Users', '{"userName": "x", ')).body).toMatchObject({ status: '400', scimType: 'invalidSyntax' });
    expect((await scim('POST', '/Users', '["not", "an object"]')).body).toMatchObject({ scimType: 'invalidSyntax' });
    expect((await scim('POST', '/Users', { userName: '', emails: [{ value: 'empty@example.org' }] })).body).toMatchObject({
      scimType: 'invalidValue',
      detail: 'userName: must not be empty',
    });
    expect((await scim('POST', '/Users', { userName: 'x', emails: [{ value: 'x@example.org' }], active: 'perhaps' })).body.detail).toBe(
      'active: expected true or false',
    );
    const text = await scim('POST', '/Users', 'userName=x', { authorization: `Bearer ${service.token}`, 'content-type': 'text/plain' });
    expect(brief(text)).toEqual(scimError(415, undefined, 'send the body as application/scim+json (or application/json)'));
    expect(brief(await scim('GET', `/Users?filter=${encodeURIComponent('name.familyName co "O\'Malley"')}`))).toEqual(
      scimError(
        400,
        'invalidFilter',
        'the filter "name.familyName co \\"O\'Malley\\"": the operator co is not supported (only eq, joined by and: userName eq "bjensen")',
      ),
    );
    expect((await scim('GET', `/Users?filter=${encodeURIComponent('name.familyName eq "Jensen"')}`)).body.detail).toBe(
      'users can be filtered on username, externalid, id, emails.value (eq), not on name.familyname',
    );
    expect((await scim('PATCH', '/Users/nobody', { schemas: [PATCH_OP], Operations: [{ op: 'copy' }] })).body).toMatchObject({ scimType: 'invalidSyntax' });
    expect((await scim('GET', '/Users?count=0')).body.totalResults).toBe(before);
  });
});
