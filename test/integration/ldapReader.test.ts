import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityServerSchema } from '../../src/config/identitySchema.js';
import { type LdapSnapshot, LdapReadError, normalizeDn } from '../../src/service/identity/ldap/ldapEntries.js';
import { LdapClientReader } from '../../src/service/identity/ldap/ldapReader.js';
import type { LdapSourceOptions } from '../../src/service/options.js';
import { tempDir } from '../support/cli.js';
import { freePort } from '../support/net.js';
import { ldifGroup, ldifGroupOf, ldifPerson, peopleLdif, type Slapd, startSlapd } from '../support/slapd.js';

/**
 * The LDAP reader (docs/identity-sources.md, "LDAP and Active Directory") against a real slapd: one server for the
 * file, 10,000 people and 20 groups under ou=people and ou=groups (OpenLDAP's classes), and a small Active
 * Directory-like tree under ou=ad (user, group, objectGUID, userAccountControl, memberOf on the users).
 */

const PEOPLE = 10_000;
const GROUPS = 20;
const AD_PEOPLE = 50;
const AD_GROUPS = 5;

const tmp = tempDir('door-agent-ldap-reader-');
let slapd: Slapd;
let base: string;
let adBase: string;

beforeAll(async () => {
  base = 'dc=example,dc=org';
  adBase = `ou=ad,${base}`;
  const ldif = [
    peopleLdif({ count: PEOPLE, groups: GROUPS, baseDn: base }),
    `dn: ${adBase}\nobjectClass: organizationalUnit\nou: ad\n`,
    peopleLdif({ count: AD_PEOPLE, groups: AD_GROUPS, baseDn: adBase, activeDirectory: true }),
  ].join('\n');
  slapd = await startSlapd(join(tmp.path, 'slapd'), { activeDirectory: true, ldif });
});

afterAll(async () => {
  await slapd?.close();
  tmp.cleanup();
});

/** A configuration as the service takes it (server.identity.ldap through its schema): ldaps with the CA pinned. */
function options(ldap: Record<string, unknown>): LdapSourceOptions {
  const parsed = identityServerSchema.parse({
    ldap: {
      url: slapd.ldapsUrl,
      caFile: slapd.caFile,
      bindDn: slapd.bindDn,
      bindPasswordFile: slapd.bindPasswordFile,
      users: { baseDn: `ou=people,${base}` },
      groups: { baseDn: `ou=groups,${base}` },
      ...ldap,
    },
  });
  return parsed.ldap!;
}

/** The Active Directory-like tree, read with the active-directory preset. */
function adOptions(ldap: Record<string, unknown> = {}): LdapSourceOptions {
  return options({ preset: 'active-directory', users: { baseDn: `ou=people,${adBase}` }, groups: { baseDn: `ou=groups,${adBase}` }, ...ldap });
}

const logger = pino({ level: 'silent' });
const read = (o: LdapSourceOptions): Promise<LdapSnapshot> => new LdapClientReader(o, { logger }).read();

/** The read's LdapReadError message (the test fails if the read succeeds or fails otherwise). */
async function failure(o: LdapSourceOptions): Promise<string> {
  const err = await read(o).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err, 'the read should have failed').toBeInstanceOf(LdapReadError);
  return (err as LdapReadError).message;
}

describe('reading OpenLDAP', () => {
  it('reads all 10,000 people and the groups over ldaps with the pinned CA, page by page', async () => {
    // The server answers a search without paging with 1000 entries at most: the 10,000 come from paging.
    const snapshot = await read(options({ pageSize: 500 }));
    expect(snapshot.people).toHaveLength(PEOPLE);
    expect(new Set(snapshot.people.map((p) => p.id)).size).toBe(PEOPLE);
    expect(snapshot.membership).toBe('member');
    expect(snapshot.groups).toHaveLength(GROUPS);

    const expected = ldifPerson(1234, base);
    const person = snapshot.people.find((p) => p.dn === expected.dn);
    expect(person).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
      dn: expected.dn,
      email: expected.email,
      firstName: expected.firstName,
      lastName: expected.lastName,
      username: expected.username,
      disabled: false,
      memberOf: [],
      card: null,
      pin: null,
    });
    const group = snapshot.groups.find((g) => g.name === ldifGroup(ldifGroupOf(1234, GROUPS), base).name)!;
    expect(group.dn).toBe(ldifGroup(ldifGroupOf(1234, GROUPS), base).dn);
    expect(group.members).toHaveLength(PEOPLE / GROUPS);
    expect(group.members.map(normalizeDn)).toContain(normalizeDn(expected.dn));
  });

  it('reads over StartTLS, the certificate checked against the pinned CA', async () => {
    const snapshot = await read(adOptions({ url: slapd.ldapUrl, startTls: true }));
    expect(snapshot.people).toHaveLength(AD_PEOPLE);
  });

  it('maps a disabled rule of listed values, a card and a PIN from attributes the site names', async () => {
    const p7 = ldifPerson(7, base);
    await slapd.modify(
      `dn: ${p7.dn}\nchangetype: modify\nadd: employeeType\nemployeeType: Disabled\n-\nadd: employeeNumber\nemployeeNumber: 0042\n-\nadd: roomNumber\nroomNumber: 4711\n`,
    );
    const snapshot = await read(
      options({
        users: { baseDn: `ou=people,${base}`, filter: '(|(uid=p00007)(uid=p00008))' },
        attributes: { disabled: { attribute: 'employeeType', values: ['disabled'] }, card: 'employeeNumber', pin: 'roomNumber' },
      }),
    );
    const byName = new Map(snapshot.people.map((p) => [p.username, p]));
    expect(byName.get('p00007')).toMatchObject({ disabled: true, card: '0042', pin: '4711' });
    expect(byName.get('p00008')).toMatchObject({ disabled: false, card: null, pin: null });
  });
});

describe('reading an Active Directory', () => {
  it('reads objectGUID as hex, sAMAccountName, memberOf, and the disabled flag of userAccountControl', async () => {
    const p3 = ldifPerson(3, adBase, true);
    await slapd.modify(`dn: ${p3.dn}\nchangetype: modify\nreplace: userAccountControl\nuserAccountControl: 514\n`);
    // A computer is a user to AD's schema: the preset's filter leaves it out.
    await slapd.add(
      `dn: CN=LOBBY-PC,OU=people,${adBase}\nobjectClass: computer\ncn: LOBBY-PC\nsn: pc\nsAMAccountName: LOBBY-PC$\nobjectGUID:: AAECAwQFBgcICQoLDA0ODw==\n`,
    );
    // No mail: the e-mail is the userPrincipalName, in lower case.
    await slapd.add(
      `dn: CN=Jane Roe,OU=people,${adBase}\nobjectClass: user\ncn: Jane Roe\ngivenName: Jane\nsn: Roe\nsAMAccountName: jroe\n` +
        `userPrincipalName: Jane.Roe@Example.ORG\nuserAccountControl: 66050\nobjectGUID:: ASNFZ4mrze8BI0VniavN7w==\n`,
    );

    const snapshot = await read(adOptions());
    expect(snapshot.membership).toBe('memberOf');
    expect(snapshot.people).toHaveLength(AD_PEOPLE + 1);
    expect(snapshot.people.map((p) => p.username)).not.toContain('LOBBY-PC$');

    const first = ldifPerson(1, adBase, true);
    const one = snapshot.people.find((p) => p.username === first.username)!;
    expect(one).toMatchObject({ id: first.objectGuid, email: first.email, firstName: first.firstName, lastName: first.lastName, disabled: false });
    expect(one.memberOf.map(normalizeDn)).toEqual([normalizeDn(ldifGroup(ldifGroupOf(1, AD_GROUPS), adBase, true).dn)]);
    expect(snapshot.people.find((p) => p.username === p3.username)!.disabled).toBe(true);
    // 66050 = 0x10202: NORMAL_ACCOUNT, DONT_EXPIRE_PASSWORD and ACCOUNTDISABLE.
    expect(snapshot.people.find((p) => p.username === 'jroe')).toMatchObject({
      id: '0123456789abcdef0123456789abcdef',
      email: 'jane.roe@example.org',
      disabled: true,
    });

    expect(snapshot.groups).toHaveLength(AD_GROUPS);
    const group = snapshot.groups.find((g) => g.name === ldifGroup(1, adBase, true).name)!;
    expect(group).toEqual({ id: ldifGroup(1, adBase, true).objectGuid, dn: expect.any(String), name: 'group001', members: [] });
  });
});

describe('an anonymous bind', () => {
  it('reads where the server lets anonymous clients read', async () => {
    const snapshot = await read(adOptions({ bindDn: undefined, bindPasswordFile: undefined }));
    expect(snapshot.people.length).toBeGreaterThanOrEqual(AD_PEOPLE);
  });

  it('fails, whole, when the server cuts a search short at its size limit', async () => {
    // slapd lets anonymous clients have 1000 entries of a search, paged or not: never a part of the directory.
    const message = await failure(options({ bindDn: undefined, bindPasswordFile: undefined }));
    expect(message).toMatch(/^the server stopped the users search at its size limit \(sizeLimitExceeded\), though it was paged \(pageSize 500\)/);
  });
});

describe('when LDAP cannot be read', () => {
  it('refuses a certificate the pinned CA did not sign, over ldaps and StartTLS', async () => {
    const ldaps = await failure(adOptions({ caFile: slapd.otherCaFile }));
    expect(ldaps).toMatch(
      new RegExp(`^TLS: the certificate of 127\\.0\\.0\\.1:\\d+ \\(${slapd.ldapsUrl}\\) is not signed by caFile ${slapd.otherCaFile} \\([A-Z_]+\\)`),
    );
    const startTls = await failure(adOptions({ url: slapd.ldapUrl, startTls: true, caFile: slapd.otherCaFile }));
    expect(startTls).toContain(`is not signed by caFile ${slapd.otherCaFile}`);
  });

  it('refuses a certificate that is not for the expected name', async () => {
    const message = await failure(adOptions({ serverName: 'dc1.example.org' }));
    expect(message).toMatch(/^TLS: the certificate of 127\.0\.0\.1:\d+ .* is not for dc1\.example\.org \(.*\): set serverName/);
  });

  it('says the bind was refused for a wrong password, and never shows a password', async () => {
    const wrong = join(tmp.path, 'wrong-password');
    writeFileSync(wrong, 'not-the-password\n', { mode: 0o600 });
    const message = await failure(adOptions({ bindPasswordFile: wrong }));
    expect(message).toBe(`cannot bind as ${slapd.bindDn}: invalid credentials (check bindDn and the password in bindPasswordFile)`);
    expect(message).not.toContain('not-the-password');
    expect(message).not.toContain(readFileSync(slapd.bindPasswordFile, 'utf8').trim());
  });

  it('names a password file it cannot read', async () => {
    const missing = join(tmp.path, 'no-such-password');
    expect(await failure(adOptions({ bindPasswordFile: missing }))).toBe(`cannot read bindPasswordFile ${missing}: no such file`);
  });

  it('says which base DN does not exist', async () => {
    expect(await failure(adOptions({ users: { baseDn: `OU=Staff,${base}` } }))).toBe(
      `users.baseDn OU=Staff,${base} does not exist on the server: check users.baseDn (and that bindDn may read it)`,
    );
    expect(await failure(adOptions({ groups: { baseDn: `ou=door groups,${base}` } }))).toMatch(
      /^groups\.baseDn ou=door groups,dc=example,dc=org does not exist/,
    );
  });

  it('says the server cannot be reached when slapd is stopped, and reads again once it is back', async () => {
    await slapd.stop();
    try {
      const port = new URL(slapd.ldapsUrl).port;
      expect(await failure(adOptions())).toBe(
        `cannot reach 127.0.0.1:${port} (${slapd.ldapsUrl}): connection refused (ECONNREFUSED): is the LDAP server running, and is url right?`,
      );
    } finally {
      await slapd.start();
    }
    expect((await read(adOptions())).people.length).toBeGreaterThanOrEqual(AD_PEOPLE);
  });

  it('says so when plain LDAP answers an ldaps:// URL', async () => {
    const plainPort = new URL(slapd.ldapUrl).port;
    expect(await failure(adOptions({ url: `ldaps://127.0.0.1:${plainPort}` }))).toBe(
      `TLS: 127.0.0.1:${plainPort} (ldaps://127.0.0.1:${plainPort}) closed the connection during the handshake (ECONNRESET): ` +
        'is this port plain LDAP behind an ldaps:// url? (use ldap:// with startTls: true)',
    );
  });

  describe('a server that takes the connection and never answers', () => {
    let silent: Server;
    let port: number;
    const sockets: Socket[] = [];
    beforeAll(async () => {
      port = await freePort();
      silent = createServer((socket) => sockets.push(socket));
      await new Promise<void>((resolve) => silent.listen(port, '127.0.0.1', resolve));
    });
    afterAll(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    });

    it('gives up after timeoutSeconds', async () => {
      const started = Date.now();
      const message = await failure(adOptions({ url: `ldap://127.0.0.1:${port}`, caFile: undefined, timeoutSeconds: 1 }));
      expect(message).toBe(`no answer from 127.0.0.1:${port} (ldap://127.0.0.1:${port}) to the bind within timeoutSeconds (1 s)`);
      // The client's own timer: well under the 30 s default, with room for a loaded machine.
      expect(Date.now() - started).toBeLessThan(15_000);
    });
  });
});
