import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/cli.js';
import { type Answer, PATCH_OP, scimService } from '../support/scimService.js';

// SCIM 2.0's groups (docs/identity-sources.md, "Groups") through the service's real routes, on a real database of
// the run's engine: a SCIM group is a user group, its members users. The requests are the ones Okta and Entra ID
// document that they send, transcribed with the page each comes from.

const tmp = tempDir('door-agent-scim-groups-');
let service: Awaited<ReturnType<typeof scimService>>;
const scim = (method: string, path: string, body?: unknown) => service.scim(method, path, body);
const api = (method: string, path: string, body?: unknown) => service.api(method, path, body);
const brief = (a: Answer) => ({ status: a.status, body: a.body });
const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';

/** Users made over SCIM, by name: their SCIM ids. */
const ids: Record<string, string> = {};

beforeAll(async () => {
  service = await scimService(tmp.path, 'scim_groups');
  for (const name of ['ann', 'bob', 'cay', 'dan']) {
    const made = await scim('POST', '/Users', { userName: name, emails: [{ value: `${name}@example.org`, primary: true }] });
    ids[name] = made.body.id as string;
  }
});
afterAll(async () => {
  await service?.close();
  tmp.cleanup();
});

/** The service's user groups of a user (GET /multipleusers), by e-mail. */
async function groupsOf(email: string): Promise<string[]> {
  const users = (await api('GET', '/multipleusers')).body as unknown as Array<{ email: string; groups: string[][] }>;
  return users.find((u) => u.email === email)!.groups.map((g) => g[0]!);
}
const memberIds = (group: Answer) => ((group.body.members as Array<{ value: string }> | undefined) ?? []).map((m) => m.value).sort();

describe('Okta\'s group pushes (Okta, "SCIM 2.0 Protocol Reference", SCIM Group operations)', () => {
  let id: string;

  it("Create Groups: a user group of the service, SCIM's; Retrieve Groups and a specific Group", async () => {
    const created = await scim('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'Test SCIMv2', members: [] });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    id = created.body.id as string;
    expect(created.body).toMatchObject({ schemas: [GROUP_SCHEMA], displayName: 'Test SCIMv2', members: [], meta: { resourceType: 'Group' } });
    expect(created.headers.location).toBe(`http://localhost:80/scim/v2/Groups/${id}`);
    expect(await service.db.get("SELECT type, source FROM groups WHERE name = 'Test SCIMv2'")).toEqual({ type: 'users', source: 'scim' });
    const list = await scim('GET', '/Groups?startIndex=1&count=100');
    expect(list.body.Resources!.map((g) => g.id)).toContain(id);
    expect((await scim('GET', `/Groups/${id}`)).body).toMatchObject({ id, displayName: 'Test SCIMv2' });
  });

  it('Update specific Group membership: a remove by filter and an add in one request; then the full push with replace', async () => {
    await scim('PATCH', `/Groups/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'members', value: [{ value: ids.ann }] }] });
    const membership = await scim('PATCH', `/Groups/${id}`, {
      schemas: [PATCH_OP],
      Operations: [
        { op: 'remove', path: `members[value eq "${ids.ann}"]` },
        { op: 'add', path: 'members', value: [{ value: ids.bob, display: 'bob@example.org' }] },
      ],
    });
    expect(membership.status).toBe(204);
    expect(membership.headers.etag).toMatch(/^W\/"[0-9a-f]{16}"$/);
    expect(await groupsOf('ann@example.org')).toEqual([]);
    expect(await groupsOf('bob@example.org')).toEqual(['Test SCIMv2']);
    const full = await scim('PATCH', `/Groups/${id}`, {
      schemas: [PATCH_OP],
      Operations: [
        {
          op: 'replace',
          path: 'members',
          value: [
            { value: ids.cay, display: 'cay@example.org' },
            { value: ids.dan, display: 'dan@example.org' },
          ],
        },
      ],
    });
    expect(full.status).toBe(204);
    expect(memberIds(await scim('GET', `/Groups/${id}`))).toEqual([ids.cay, ids.dan].sort());
    expect(await groupsOf('bob@example.org')).toEqual([]);
  });

  it('Update a specific Group name: the replace Okta sends, with the id; the door sees the new name at its next revision', async () => {
    const revision = ((await api('GET', '/directory')).body as { revision: number }).revision;
    const renamed = await scim('PATCH', `/Groups/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', value: { id, displayName: 'Test SCIMv20' } }],
    });
    expect(renamed.status).toBe(204);
    const delta = (await api('GET', `/directory?since=${revision}`)).body as { users: Array<{ email: string; groups: string[][] }> };
    expect(delta.users.map((u) => [u.email, u.groups])).toEqual([
      ['cay@example.org', [['Test SCIMv20']]],
      ['dan@example.org', [['Test SCIMv20']]],
    ]);
  });

  it('Delete a specific Group: 204; the group is gone from its members', async () => {
    expect((await scim('DELETE', `/Groups/${id}`)).status).toBe(204);
    expect(await groupsOf('cay@example.org')).toEqual([]);
    expect((await scim('GET', `/Groups/${id}`)).status).toBe(404);
  });
});

describe('Entra ID\'s group provisioning (Microsoft, "Tutorial: Develop and plan provisioning for a SCIM endpoint")', () => {
  let id: string;

  it('Create Group; Get Group and Get Group by displayName without members (excludedAttributes=members)', async () => {
    const created = await scim('POST', '/Groups', {
      schemas: [GROUP_SCHEMA, 'http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group'],
      externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159',
      displayName: 'displayName',
      meta: { resourceType: 'Group' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    id = created.body.id as string;
    expect(created.body).toMatchObject({ externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159', displayName: 'displayName', members: [] });
    const got = await scim('GET', `/Groups/${id}?excludedAttributes=members`);
    expect(got.body).toEqual({
      schemas: [GROUP_SCHEMA],
      id,
      externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159',
      displayName: 'displayName',
      meta: created.body.meta,
    });
    const byName = await scim('GET', `/Groups?excludedAttributes=members&filter=${encodeURIComponent('displayName eq "displayName"')}`);
    expect(byName.body).toMatchObject({ totalResults: 1, Resources: [{ id, displayName: 'displayName' }] });
    expect(byName.body.Resources![0]).not.toHaveProperty('members');
  });

  it('Update Group [Add Members] and [Remove Members], both forms of the removal; [Non-member attributes]', async () => {
    const add = await scim('PATCH', `/Groups/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Add', path: 'members', value: [{ $ref: null, value: ids.ann }] }],
    });
    expect(add.status).toBe(204);
    await scim('PATCH', `/Groups/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'Add', path: 'members', value: [{ $ref: null, value: ids.bob }] }] });
    expect(memberIds(await scim('GET', `/Groups/${id}`))).toEqual([ids.ann, ids.bob].sort());
    // Without the flag aadOptscim062020: the members to remove listed in the value.
    await scim('PATCH', `/Groups/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'Remove', path: 'members', value: [{ $ref: null, value: ids.ann }] }] });
    expect(memberIds(await scim('GET', `/Groups/${id}`))).toEqual([ids.bob]);
    // With the flag ("Known issues ... SCIM 2.0 protocol compliance"): a filter.
    await scim('PATCH', `/Groups/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'remove', path: `members[value eq "${ids.bob}"]` }] });
    expect(memberIds(await scim('GET', `/Groups/${id}`))).toEqual([]);
    const renamed = await scim('PATCH', `/Groups/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Replace', path: 'displayName', value: '1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName' }],
    });
    expect(renamed.status).toBe(204);
    expect((await scim('GET', `/Groups/${id}`)).body.displayName).toBe('1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName');
  });

  it('Delete Group: 204', async () => {
    expect((await scim('DELETE', `/Groups/${id}`)).status).toBe(204);
  });
});

describe("the service's rules for groups", () => {
  it('an unknown member is 400 invalidValue naming it, and nothing of the request is written', async () => {
    const made = await scim('POST', '/Groups', { displayName: 'Night shift', members: [{ value: ids.ann }] });
    const id = made.body.id as string;
    const refused = await scim('PATCH', `/Groups/${id}`, {
      schemas: [PATCH_OP],
      Operations: [
        { op: 'Replace', path: 'displayName', value: 'Day shift' },
        { op: 'add', path: 'members', value: [{ value: ids.bob }, { value: 'f648f8d5ea4e4cd38e9c' }] },
      ],
    });
    expect(brief(refused)).toEqual({
      status: 400,
      body: {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
        status: '400',
        scimType: 'invalidValue',
        detail: 'members: no user with id f648f8d5ea4e4cd38e9c',
      },
    });
    expect((await scim('GET', `/Groups/${id}`)).body).toMatchObject({ displayName: 'Night shift', members: [{ value: ids.ann }] });
    expect((await scim('POST', '/Groups', { displayName: 'Ghosts', members: [{ value: 'nobody' }] })).body.detail).toBe('members: no user with id nobody');
    expect((await scim('GET', `/Groups?filter=${encodeURIComponent('displayName eq "Ghosts"')}`)).body.totalResults).toBe(0);
  });

  it("a group of the service's name on POST is 409 uniqueness; PUT claims it, with its members as the body says (RFC 7643's Tour Guides)", async () => {
    const local = await api('POST', '/groups', { type: 'users', name: 'Tour Guides', add_ids: [] });
    const groupId = local.body.group_id as number;
    const refused = await scim('POST', '/Groups', { displayName: 'tour guides' });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ scimType: 'uniqueness' });
    expect(refused.body.detail).toContain('a user group named tour guides is already at the service');
    const found = await scim('GET', `/Groups?filter=${encodeURIComponent('displayName eq "Tour Guides"')}`);
    const id = found.body.Resources![0]!.id as string;
    // RFC 7643 section 8.4, a group with its members (here, users of this service).
    const put = await scim('PUT', `/Groups/${id}`, {
      schemas: [GROUP_SCHEMA],
      id,
      displayName: 'Tour Guides',
      members: [
        { value: ids.ann, $ref: `https://example.com/v2/Users/${ids.ann}`, display: 'Babs Jensen' },
        { value: ids.cay, $ref: `https://example.com/v2/Users/${ids.cay}`, display: 'Mandy Pepperidge' },
      ],
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(memberIds(put)).toEqual([ids.ann, ids.cay].sort());
    expect(await service.db.value('SELECT source FROM groups WHERE group_id = ?', [groupId])).toBe('scim');
  });

  it('a group LDAP owns is read, never written: 409 mutability; an LDAP user may be a member of a SCIM group', async () => {
    const local = await api('POST', '/groups', { type: 'users', name: 'Directory staff', add_ids: [] });
    await service.db.run("UPDATE groups SET source = 'ldap' WHERE group_id = ?", [local.body.group_id as number]);
    const id = (await scim('GET', `/Groups?filter=${encodeURIComponent('displayName eq "Directory staff"')}`)).body.Resources![0]!.id as string;
    const expected = {
      status: 409,
      body: {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
        status: '409',
        scimType: 'mutability',
        detail: "group Directory staff is managed by LDAP: change the group's members there; the next sync brings it here",
      },
    };
    expect(
      brief(await scim('PATCH', `/Groups/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'members', value: [{ value: ids.dan }] }] })),
    ).toEqual(expected);
    expect(brief(await scim('PUT', `/Groups/${id}`, { displayName: 'Directory staff', members: [] }))).toEqual(expected);
    expect(brief(await scim('DELETE', `/Groups/${id}`))).toEqual(expected);
    await service.db.run("UPDATE users SET source = 'ldap' WHERE email = 'dan@example.org'");
    const scimGroup = await scim('POST', '/Groups', { displayName: 'Mixed', members: [{ value: ids.dan }] });
    expect(scimGroup.status).toBe(201);
    expect(await groupsOf('dan@example.org')).toContain('Mixed');
  });

  it('DELETE of a local group the provider never claimed is 409 mutability: deleted at the service, not over SCIM', async () => {
    const local = await api('POST', '/groups', { type: 'users', name: 'Cleaners', add_ids: [] });
    expect(local.status, JSON.stringify(local.body)).toBe(200);
    const id = (await scim('GET', `/Groups?filter=${encodeURIComponent('displayName eq "Cleaners"')}`)).body.Resources![0]!.id as string;
    expect(brief(await scim('DELETE', `/Groups/${id}`))).toEqual({
      status: 409,
      body: {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
        status: '409',
        scimType: 'mutability',
        detail: 'group Cleaners was not provisioned over SCIM: remove it at the service',
      },
    });
    expect((await scim('GET', `/Groups/${id}`)).status).toBe(200);
  });

  it('filters: displayName (case-blind), externalId and id, joined by and; another attribute is 400 invalidFilter', async () => {
    const made = await scim('POST', '/Groups', { displayName: 'Filtered', externalId: 'ext-1' });
    const id = made.body.id as string;
    const find = async (filter: string) => (await scim('GET', `/Groups?filter=${encodeURIComponent(filter)}`)).body.Resources!.map((g) => g.id);
    expect(await find('displayName eq "FILTERED"')).toEqual([id]);
    expect(await find(`externalId eq "ext-1" and id eq "${id}"`)).toEqual([id]);
    expect(await find('externalId eq "EXT-1"')).toEqual([]);
    expect((await scim('GET', `/Groups?filter=${encodeURIComponent('members.value eq "x"')}`)).body).toMatchObject({
      scimType: 'invalidFilter',
      detail: 'groups can be filtered on displayname, externalid, id (eq), not on members.value',
    });
  });

  // Last in the file: the 10,000 users it makes would slow the others' lists.
  it('a PATCH adding 5,000 members to a group of 5,000 is whole; so are a removal of 5,000 by value (other case) and 1,000 by filter', async () => {
    const n = 10_000;
    const many = Array.from({ length: n }, (_v, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
    await service.db.transaction(async () => {
      for (let start = 0; start < n; start += 500) {
        const rows = many.slice(start, start + 500).map((_u, j) => start + j);
        await service.db.run(
          `INSERT INTO users (user_id, email, first_name, username, tag, unique_id, created) VALUES ${rows.map(() => "(?, ?, 'Many', ?, 'USER', ?, '2026-01-01 00:00:00')").join(', ')}`,
          rows.flatMap((i) => [100_000 + i, `many${i}@example.org`, `many${i}`, many[i]!]),
        );
      }
    });
    const half = n / 2;
    const made = await scim('POST', '/Groups', { displayName: 'Everyone', members: many.slice(0, half).map((value) => ({ value })) });
    expect(made.status).toBe(201);
    const id = made.body.id as string;
    // The second half added, with the first half again (no duplicate) and one of them in capitals.
    const added = await scim('PATCH', `/Groups/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'add', path: 'members', value: [...many.slice(half), ...many.slice(0, 10), many[10]!.toUpperCase()].map((value) => ({ value })) }],
    });
    expect(added.status, JSON.stringify(added.body)).toBe(204);
    expect(memberIds(await scim('GET', `/Groups/${id}`))).toEqual([...many].sort());
    // Entra ID's removal by a value list, the ids in capitals.
    const removed = await scim('PATCH', `/Groups/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'remove', path: 'members', value: many.slice(0, half).map((value) => ({ value: value.toUpperCase() })) }],
    });
    expect(removed.status).toBe(204);
    expect(memberIds(await scim('GET', `/Groups/${id}`))).toEqual(many.slice(half).sort());
    // Okta's removals by filter, a thousand in one request.
    const filtered = await scim('PATCH', `/Groups/${id}`, {
      schemas: [PATCH_OP],
      Operations: many.slice(half, half + 1000).map((value) => ({ op: 'remove', path: `members[value eq "${value}"]` })),
    });
    expect(filtered.status).toBe(204);
    expect(memberIds(await scim('GET', `/Groups/${id}`))).toEqual(many.slice(half + 1000).sort());
    expect(Number(await service.db.value('SELECT count(*) FROM group_members m JOIN groups g USING (group_id) WHERE g.unique_id = ?', [id]))).toBe(
      n - half - 1000,
    );
  }, 120_000);
});
