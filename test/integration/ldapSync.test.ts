import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syncRunSchema, type SyncCounts, type SyncRunAnswer } from '../../src/api/identity.js';
import { identityServerSchema } from '../../src/config/identitySchema.js';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { Directory, readRevision } from '../../src/service/directory.js';
import type { LdapReader } from '../../src/service/identity/ldap/ldapEntries.js';
import { LdapReadError, normalizeDn } from '../../src/service/identity/ldap/ldapEntries.js';
import { LdapClientReader } from '../../src/service/identity/ldap/ldapReader.js';
import { LdapSync, type LdapSyncDeps } from '../../src/service/identity/ldap/ldapSync.js';
import type { LdapSourceOptions } from '../../src/service/options.js';
import type { Leadership } from '../../src/service/sql/leadership.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { UserStore } from '../../src/service/users.js';
import { systemClock } from '../../src/util/clock.js';
import { tempDir } from '../support/cli.js';
import { ManualTime } from '../support/manualTime.js';
import { testService } from '../support/serviceApp.js';
import { newServiceDb } from '../support/serviceDb.js';
import { ldifGroup, ldifGroupOf, ldifPerson, peopleLdif, startSlapd, type Slapd } from '../support/slapd.js';
import { waitUntil } from '../support/wait.js';

/**
 * The LDAP sync (docs/identity-sources.md, "LDAP and Active Directory") against a real slapd, on this run's
 * engine: one server for the file with 10,000 people in 20 groups (OpenLDAP's classes) and a small Active
 * Directory-like tree under ou=ad; the service's own sync (server.ts) asked through POST /identity-sources/ldap/sync,
 * and syncs of other configurations made beside it on the same database. What the doors see is read as a door
 * reads it (GET /directory?since=REV).
 */

const PEOPLE = 10_000;
const GROUPS = 20;
const AD_PEOPLE = 200;
const AD_GROUPS = 4;
const BASE = 'dc=example,dc=org';
const AD_BASE = `ou=ad,${BASE}`;
const DAY = 86_400_000;
/** The OpenLDAP tree's disabled rule (openldap's preset has none). */
const DISABLED = { attribute: 'employeeType', values: ['disabled'] };

const tmp = tempDir('door-agent-ldap-sync-');
const logger = pino({ level: 'silent' });
let slapd: Slapd;
let db: SqlDb;
let app: ReturnType<typeof testService>;
let headers: Record<string, string>;

beforeAll(async () => {
  const ldif = [
    peopleLdif({ count: PEOPLE, groups: GROUPS, baseDn: BASE }),
    `dn: ${AD_BASE}\nobjectClass: organizationalUnit\nou: ad\n`,
    peopleLdif({ count: AD_PEOPLE, groups: AD_GROUPS, baseDn: AD_BASE, activeDirectory: true }),
  ].join('\n');
  slapd = await startSlapd(join(tmp.path, 'slapd'), { activeDirectory: true, ldif });
  ({ db } = await newServiceDb(tmp.path));
  // The service's schedule is a day away: in this file its sync runs when a test asks for it.
  await db.run("INSERT INTO identity_sync_state (source, next_at) VALUES ('ldap', ?)", [Date.now() + DAY]);
  headers = { authorization: `Bearer ${await new ApiKeys(db).create('SUPER', 0, Date.now())}` };
  app = testService(db, { identity: { ldap: options() } });
  await app.ready();
}, 120_000);

afterAll(async () => {
  await app?.close();
  await db?.close();
  await slapd?.close();
  tmp.cleanup();
});

/** server.identity.ldap as the service takes it (through its schema): ldaps with the CA pinned, a disabled rule. */
function options(ldap: Record<string, unknown> = {}): LdapSourceOptions {
  return identityServerSchema.parse({
    ldap: {
      url: slapd.ldapsUrl,
      caFile: slapd.caFile,
      bindDn: slapd.bindDn,
      bindPasswordFile: slapd.bindPasswordFile,
      users: { baseDn: `ou=people,${BASE}` },
      groups: { baseDn: `ou=groups,${BASE}` },
      attributes: { disabled: DISABLED },
      ...ldap,
    },
  }).ldap!;
}

/** A sync of another configuration (or with other deps) beside the service's, on the same database. */
function syncWith(ldap: Record<string, unknown> = {}, deps: Partial<LdapSyncDeps> = {}, on: SqlDb = db): LdapSync {
  const users = new UserStore(on);
  return new LdapSync(
    Object.assign(
      {
        db: on,
        users,
        directory: new Directory(on, users),
        options: options(ldap),
        pinLabel: 'PIN',
        clock: systemClock,
        logger,
        owe: async () => undefined,
        holder: 'test-holder',
      },
      deps,
    ),
  );
}

/** POST /identity-sources/ldap/sync: the service's own sync, now. */
async function syncNow(confirmSuspensions?: number): Promise<SyncRunAnswer> {
  const res = await app.inject({
    method: 'POST',
    url: '/identity-sources/ldap/sync',
    headers,
    payload: confirmSuspensions === undefined ? {} : { confirm_suspensions: confirmSuspensions },
  });
  expect(res.statusCode, res.body).toBe(200);
  return syncRunSchema.parse(res.json());
}

const counts = (over: Partial<SyncCounts>): SyncCounts => ({
  entries: 0,
  groups: 0,
  created: 0,
  claimed: 0,
  updated: 0,
  suspended: 0,
  reactivated: 0,
  removed: 0,
  memberships: 0,
  groupsChanged: 0,
  skipped: 0,
  ...over,
});

const revision = async (on: SqlDb = db) => (await readRevision(on)).revision;

type UserRow = {
  email_id: number;
  first_name: string;
  last_name: string;
  username: string;
  suspended: number;
  source: string;
  external_id: string | null;
  source_dn: string | null;
};
const userOf = async (email: string, on: SqlDb = db) =>
  (await on.get<UserRow>('SELECT email_id, first_name, last_name, username, suspended, source, external_id, source_dn FROM users WHERE email = ?', [email]))!;
const groupsOf = async (email: string, on: SqlDb = db) =>
  on.column<string>(
    `SELECT g.name FROM groups g JOIN group_members m ON m.group_id = g.group_id JOIN users u ON u.email_id = m.member_id
       WHERE u.email = ? ORDER BY g.name`,
    [email],
  );
const suspendedCount = async () => Number(await db.value("SELECT count(*) FROM users WHERE source = 'ldap' AND suspended = 1 AND removed_at IS NULL"));

const person = (i: number) => ldifPerson(i, BASE);
const group = (i: number) => ldifGroup(i, BASE);

/** What a door holding `since` is given: the users changed after it, by e-mail. */
async function doorDelta(since: number): Promise<Map<string, { ad_status: string; groups: string[][] }>> {
  const res = await app.inject({ method: 'GET', url: `/directory?since=${since}`, headers });
  expect(res.statusCode).toBe(200);
  const body = res.json() as { full: boolean; users: Array<{ email: string; ad_status: string; groups: string[][] }> };
  expect(body.full).toBe(false);
  return new Map(body.users.map((u) => [u.email, u]));
}

describe('an LDAP sync of an OpenLDAP directory of 10,000 people', () => {
  it('the first sync makes every person a user, with their fields and groups, and the doors get them', async () => {
    const before = await revision();
    const run = await syncNow();
    expect(run).toMatchObject({ outcome: 'ok', reason: null, trigger: expect.stringContaining('API key'), would_suspend: null, sample: null });
    expect(run.counts).toEqual(counts({ entries: PEOPLE, groups: GROUPS, created: PEOPLE, memberships: PEOPLE, groupsChanged: GROUPS }));
    for (const i of [1, 777, PEOPLE]) {
      const user = await userOf(person(i).email);
      expect(user).toMatchObject({
        first_name: person(i).firstName,
        last_name: person(i).lastName,
        username: person(i).username,
        suspended: 0,
        source: 'ldap',
        source_dn: person(i).dn,
      });
      expect(user.external_id).toMatch(/^[0-9a-f-]{36}$/); // entryUUID
      expect(await groupsOf(person(i).email)).toEqual([group(ldifGroupOf(i, GROUPS)).name]);
    }
    const members = await db.value('SELECT count(*) FROM group_members m JOIN groups g ON g.group_id = m.group_id WHERE g.name = ?', ['group001']);
    expect(Number(members)).toBe(PEOPLE / GROUPS);
    expect(await revision()).toBeGreaterThan(before);
    // Seen at the API as at the doors.
    const sources = await app.inject({ method: 'GET', url: '/identity-sources', headers });
    expect(sources.json()).toMatchObject({ ldap: { users: PEOPLE, groups: GROUPS, last: { run_id: run.run_id, outcome: 'ok' } } });
  }, 180_000);

  it('a second sync with nothing changed writes nothing and spends no revision', async () => {
    const before = await revision();
    const run = await syncNow();
    expect(run.outcome).toBe('ok');
    expect(run.counts).toEqual(counts({ entries: PEOPLE, groups: GROUPS }));
    expect(await revision()).toBe(before);
  }, 60_000);

  it('a change, a disabled account, a group move and a deleted entry: exactly those, at the doors', async () => {
    const since = await revision();
    const [renamed, disabled, moved, deleted] = [person(2), person(3), person(4), person(5)];
    await slapd.modify(
      [
        `dn: ${renamed.dn}\nchangetype: modify\nreplace: sn\nsn: Renamed\n`,
        `dn: ${disabled.dn}\nchangetype: modify\nadd: employeeType\nemployeeType: disabled\n`,
        `dn: ${group(4).dn}\nchangetype: modify\ndelete: member\nmember: ${moved.dn}\n`,
        `dn: ${group(5).dn}\nchangetype: modify\nadd: member\nmember: ${moved.dn}\n`,
      ].join('\n'),
    );
    await slapd.delete(deleted.dn);
    const run = await syncNow();
    // The deleted entry is still listed in group005 (no referential integrity here): it names nobody, so its user
    // leaves the group as the moved one leaves group004 and joins group005.
    expect(run.counts).toEqual(counts({ entries: PEOPLE - 1, groups: GROUPS, updated: 1, suspended: 2, memberships: 3 }));
    expect(await userOf(renamed.email)).toMatchObject({ last_name: 'Renamed', suspended: 0 });
    expect(await userOf(disabled.email)).toMatchObject({ suspended: 1, source: 'ldap' });
    expect(await userOf(deleted.email)).toMatchObject({ suspended: 1, source: 'ldap' });
    expect(await groupsOf(moved.email)).toEqual(['group005']);
    expect(await groupsOf(deleted.email)).toEqual([]);
    expect(await groupsOf(disabled.email)).toEqual(['group003']);
    const delta = await doorDelta(since);
    expect([...delta.keys()].sort()).toEqual([renamed.email, disabled.email, moved.email, deleted.email].sort());
    expect(delta.get(disabled.email)!.ad_status).toBe('SUSPENDED');
    expect(delta.get(deleted.email)!.ad_status).toBe('SUSPENDED');
    expect(delta.get(moved.email)!.groups).toEqual([['group005']]);
  }, 60_000);

  it("a local user with an entry's e-mail is claimed; one owned by SCIM is a conflict, left as they are", async () => {
    const users = new UserStore(db);
    const local = (await users.ensure('p10001@example.org', 'USER', Date.now())).user;
    const scim = (await users.ensure('p10002@example.org', 'USER', Date.now())).user;
    await db.run("UPDATE users SET source = 'scim', external_id = 'okta-1', first_name = 'Scim' WHERE email_id = ?", [scim.email_id]);
    const entry = (i: number) => {
      const p = person(i);
      return `dn: ${p.dn}\nobjectClass: inetOrgPerson\nuid: ${p.username}\ncn: ${p.username}\ngivenName: ${p.firstName}\nsn: ${p.lastName}\nmail: ${p.email}\n`;
    };
    await slapd.add([entry(10_001), entry(10_002)].join('\n'));
    const run = await syncNow();
    expect(run.counts).toEqual(counts({ entries: PEOPLE + 1, groups: GROUPS, claimed: 1, skipped: 1 }));
    const claimed = await db.get<UserRow & { tag: string }>('SELECT * FROM users WHERE email_id = ?', [local.email_id]);
    // The same user (email_id), now LDAP's, with the entry's fields; what the service manages (tag) kept.
    expect(claimed).toMatchObject({ source: 'ldap', first_name: person(10_001).firstName, source_dn: person(10_001).dn, tag: 'USER' });
    expect(await userOf('p10002@example.org')).toMatchObject({ email_id: scim.email_id, source: 'scim', external_id: 'okta-1', first_name: 'Scim' });
  }, 60_000);

  it('a base DN with nobody under it is held: nothing changed, the count and the number to confirm said', async () => {
    const before = await revision();
    const suspended = await suspendedCount();
    const active = PEOPLE - 2 + 1; // the two suspended above, the one claimed
    const run = await syncWith({ users: { baseDn: `ou=groups,${BASE}` } }).runNow({ trigger: 'test' });
    expect(run).toMatchObject({
      outcome: 'held',
      would_suspend: active,
      reason:
        `would suspend ${active} of ${active} users and empty 0 of ${GROUPS} groups from LDAP (over maxSuspendShare 5 %): ` +
        `check users.baseDn, users.filter, groups.baseDn and groups.filter, then apply with confirm_suspensions=${active}`,
    });
    expect(run.sample).toHaveLength(10);
    expect(run.counts).toEqual(counts({ groups: GROUPS }));
    expect(await revision()).toBe(before);
    expect(await suspendedCount()).toBe(suspended);
  }, 60_000);

  it('a filter that leaves out a thousand people: held; with fewer confirmed, held again; confirmed, applied', async () => {
    // p00001 to p00999 left out: 997 of them active (p00003 and p00005 are suspended already).
    const narrow = syncWith({ users: { baseDn: `ou=people,${BASE}`, filter: '(&(objectClass=inetOrgPerson)(!(uid=p00*)))' } });
    const before = await revision();
    const held = await narrow.runNow({ trigger: 'test' });
    expect(held).toMatchObject({ outcome: 'held', would_suspend: 997 });
    expect((await narrow.runNow({ trigger: 'test', confirmSuspensions: 996 })).outcome).toBe('held');
    expect(await revision()).toBe(before);
    const applied = await narrow.runNow({ trigger: 'test', confirmSuspensions: 997 });
    expect(applied.outcome).toBe('ok');
    expect(applied.counts.suspended).toBe(997);
    expect(await userOf(person(999).email)).toMatchObject({ suspended: 1 });
    // The right filter again: everyone back (reactivations are never held).
    const back = await syncNow();
    expect(back.outcome).toBe('ok');
    expect(back.counts.reactivated).toBe(997);
    expect(await userOf(person(999).email)).toMatchObject({ suspended: 0 });
    expect(await groupsOf(person(999).email)).toEqual([group(ldifGroupOf(999, GROUPS)).name]);
  }, 120_000);

  it('slapd stopped: failed with the reason, every user as they were', async () => {
    const before = await revision();
    const suspended = await suspendedCount();
    await slapd.stop();
    try {
      const run = await syncNow();
      expect(run.outcome).toBe('failed');
      expect(run.reason).toMatch(/^cannot reach 127\.0\.0\.1:\d+ \(ldaps:.*connection refused/);
      expect(run.counts.created + run.counts.suspended + run.counts.removed).toBe(0);
    } finally {
      await slapd.start();
    }
    expect(await revision()).toBe(before);
    expect(await suspendedCount()).toBe(suspended);
    const sources = await app.inject({ method: 'GET', url: '/identity-sources', headers });
    expect(sources.json()).toMatchObject({ ldap: { last: { outcome: 'failed', reason: expect.stringContaining('cannot reach') } } });
  }, 60_000);

  it('a wrong bind password: failed "cannot bind", users untouched', async () => {
    const wrong = join(tmp.path, 'wrong-password');
    writeFileSync(wrong, 'not the password\n', { mode: 0o600 });
    const before = await revision();
    const run = await syncWith({ bindPasswordFile: wrong }).runNow({ trigger: 'test' });
    expect(run.outcome).toBe('failed');
    expect(run.reason).toMatch(/^cannot bind as cn=door-agent,ou=services,dc=example,dc=org: invalid credentials/);
    expect(await revision()).toBe(before);
  }, 60_000);

  it('two syncs at once: the second is refused with 409, in this process and in another', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const reader: LdapReader = {
      read: async () => {
        await gate;
        return new LdapClientReader(options(), { logger }).read();
      },
    };
    const gated = syncWith({}, { reader: () => reader });
    const first = gated.runNow({ trigger: 'first' });
    try {
      await waitUntil(
        async () => Number(await db.value("SELECT count(*) FROM identity_sync_runs WHERE outcome = 'running'")) === 1,
        10_000,
        'the first sync running',
      );
      await expect(gated.runNow({ trigger: 'second' })).rejects.toMatchObject({ status: 409, message: expect.stringContaining('in this service process') });
      // The service's own sync, another process as far as the lease is concerned: refused, naming the holder.
      const res = await app.inject({ method: 'POST', url: '/identity-sources/ldap/sync', headers, payload: {} });
      expect(res.statusCode).toBe(409);
      expect(res.json()).toEqual({ error: 'an LDAP sync is running (in test-holder): ask again when it has ended' });
    } finally {
      open();
    }
    expect((await first).outcome).toBe('ok');
    expect((await syncNow()).outcome).toBe('ok');
  }, 60_000);

  it('cards and PINs mapped from LDAP: given with their labels, a number another user holds not given, neither logged whole', async () => {
    const [holder, second] = [person(10), person(11)];
    await slapd.modify(
      [
        `dn: ${holder.dn}\nchangetype: modify\nadd: employeeNumber\nemployeeNumber: 1234567890\n-\nadd: roomNumber\nroomNumber: 864213579\n`,
        `dn: ${second.dn}\nchangetype: modify\nadd: employeeNumber\nemployeeNumber: 1234567890\n`,
      ].join('\n'),
    );
    // A card the service gave the holder (another label): LDAP's cards are added beside it, never over it.
    await new UserStore(db).replaceSmartcards((await userOf(holder.email)).email_id, [{ number: '555111', label: 'Badge' }]);
    const lines: string[] = [];
    const heard = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const since = await revision();
    const run = await syncWith({ attributes: { disabled: DISABLED, card: 'employeeNumber', pin: 'roomNumber' } }, { logger: heard }).runNow({
      trigger: 'test',
    });
    expect(run.outcome).toBe('ok');
    // Only the holder's cards change: the second's number is the holder's, so it has none to be given.
    expect(run.counts).toEqual(counts({ entries: PEOPLE + 1, groups: GROUPS, updated: 1, skipped: 1 }));
    const cards = await db.all('SELECT number, label FROM smartcards WHERE email_id = ? ORDER BY position', [(await userOf(holder.email)).email_id]);
    expect(cards).toEqual([
      { number: '555111', label: 'Badge' },
      { number: '1234567890', label: 'LDAP' },
      { number: '864213579', label: 'PIN' },
    ]);
    expect(Number(await db.value('SELECT count(*) FROM smartcards WHERE email_id = ?', [(await userOf(second.email)).email_id]))).toBe(0);
    expect([...(await doorDelta(since)).keys()]).toEqual([holder.email]);
    const log = lines.join('');
    expect(log).toContain('7890');
    expect(log).not.toContain('1234567890');
    expect(log).not.toContain('864213579');
  }, 60_000);

  it('the schedule runs on the process that leads only, and after a failure sooner', async () => {
    const time = new ManualTime({ wall: Date.now() });
    await db.run("UPDATE identity_sync_state SET next_at = NULL WHERE source = 'ldap'");
    const reads = { a: 0, b: 0 };
    let failing = false;
    const reader = (who: 'a' | 'b') => (): LdapReader => ({
      read: async () => {
        reads[who]++;
        if (failing) throw new LdapReadError('cannot reach the test server');
        return new LdapClientReader(options(), { logger }).read();
      },
    });
    const leading = new FakeLeadership(true);
    const following = new FakeLeadership(false);
    const shared = { clock: time, timers: time, random: () => 0.5 };
    const a = syncWith({ intervalMinutes: 15 }, Object.assign({ leadership: leading, reader: reader('a'), holder: 'a' }, shared));
    const b = syncWith({ intervalMinutes: 15 }, Object.assign({ leadership: following, reader: reader('b'), holder: 'b' }, shared));
    const scheduledRuns = async () => Number(await db.value("SELECT count(*) FROM identity_sync_runs WHERE trigger = 'schedule' AND outcome <> 'running'"));
    const nextAt = async () => Number(await db.value("SELECT next_at FROM identity_sync_state WHERE source = 'ldap'"));
    try {
      a.start();
      b.start();
      // No next_at stored: the leader syncs at once, and only it.
      await waitUntil(() => time.pendingCount === 1, 10_000, 'the leader armed');
      time.advance(0);
      await waitUntil(async () => (await scheduledRuns()) === 1 && time.pendingCount === 1, 60_000, 'the first scheduled sync');
      expect(reads).toEqual({ a: 1, b: 0 });
      // The next one intervalMinutes later (random 0.5: the middle of the jitter), stored for whoever leads then.
      expect(await nextAt()).toBe(time.wall + 15 * 60_000);
      // Leadership moves: the new leader takes the stored time, the old one stops.
      leading.set(false);
      following.set(true);
      await waitUntil(() => time.pendingCount === 1, 10_000, 'the new leader armed');
      failing = true;
      time.advance(15 * 60_000);
      await waitUntil(async () => (await scheduledRuns()) === 2 && time.pendingCount === 1, 60_000, 'the second scheduled sync');
      expect(reads).toEqual({ a: 1, b: 1 });
      // Failed: the next try within a minute (full jitter under 1 min), not 15.
      const retryIn = (await nextAt()) - time.wall;
      expect(retryIn).toBe(30_000);
      failing = false;
      time.advance(retryIn);
      await waitUntil(async () => (await scheduledRuns()) === 3 && time.pendingCount === 1, 60_000, 'the retry');
      expect(reads).toEqual({ a: 1, b: 2 });
      expect(await db.value('SELECT outcome FROM identity_sync_runs ORDER BY run_id DESC LIMIT 1')).toBe('ok');
    } finally {
      await a.close();
      await b.close();
    }
  }, 120_000);
});

/** A Leadership a test hands over. */
class FakeLeadership implements Leadership {
  private listeners: Array<(leading: boolean) => void> = [];
  constructor(public leading: boolean) {}
  onChange(listener: (leading: boolean) => void): void {
    this.listeners.push(listener);
  }
  set(leading: boolean): void {
    this.leading = leading;
    for (const listener of this.listeners) listener(leading);
  }
  async close(): Promise<void> {}
}

describe('an LDAP sync of an Active Directory', () => {
  let adDb: SqlDb;
  let sync: LdapSync;
  const adPerson = (i: number) => ldifPerson(i, AD_BASE, true);
  const adGroup = (i: number) => ldifGroup(i, AD_BASE, true);

  beforeAll(async () => {
    ({ db: adDb } = await newServiceDb(tmp.path, 'ad'));
    const users = new UserStore(adDb);
    const directory = new Directory(adDb, users);
    await directory.start(Date.now());
    sync = syncWith(
      { preset: 'active-directory', users: { baseDn: `ou=people,${AD_BASE}` }, groups: { baseDn: `ou=groups,${AD_BASE}` }, attributes: {} },
      { directory, users },
      adDb,
    );
  });
  afterAll(async () => {
    await adDb?.close();
  });

  it('takes objectGUID, sAMAccountName and memberOf; userAccountControl disables; a memberOf change moves groups', async () => {
    const first = await sync.runNow({ trigger: 'test' });
    expect(first.counts).toEqual(counts({ entries: AD_PEOPLE, groups: AD_GROUPS, created: AD_PEOPLE, memberships: AD_PEOPLE, groupsChanged: AD_GROUPS }));
    const seventh = await userOf(adPerson(7).email, adDb);
    expect(seventh).toMatchObject({ username: adPerson(7).username, external_id: adPerson(7).objectGuid });
    // As the server spells it (slapd writes the attribute names of a DN in lower case).
    expect(normalizeDn(seventh.source_dn!)).toBe(normalizeDn(adPerson(7).dn));
    expect(await groupsOf(adPerson(7).email, adDb)).toEqual([adGroup(ldifGroupOf(7, AD_GROUPS)).name]);

    const before = await revision(adDb);
    await slapd.modify(
      [
        `dn: ${adPerson(1).dn}\nchangetype: modify\nreplace: userAccountControl\nuserAccountControl: 514\n`,
        `dn: ${adPerson(2).dn}\nchangetype: modify\nreplace: memberOf\nmemberOf: ${adGroup(3).dn}\n`,
      ].join('\n'),
    );
    await slapd.delete(adPerson(3).dn);
    const changed = await sync.runNow({ trigger: 'test' });
    expect(changed.counts).toEqual(counts({ entries: AD_PEOPLE - 1, groups: AD_GROUPS, suspended: 2, memberships: 3 }));
    expect(await userOf(adPerson(1).email, adDb)).toMatchObject({ suspended: 1 });
    expect(await groupsOf(adPerson(2).email, adDb)).toEqual([adGroup(3).name]);
    expect(await userOf(adPerson(3).email, adDb)).toMatchObject({ suspended: 1 });
    expect(await revision(adDb)).toBeGreaterThan(before);

    await slapd.modify(`dn: ${adPerson(1).dn}\nchangetype: modify\nreplace: userAccountControl\nuserAccountControl: 512\n`);
    const enabled = await sync.runNow({ trigger: 'test' });
    expect(enabled.counts).toEqual(counts({ entries: AD_PEOPLE - 1, groups: AD_GROUPS, reactivated: 1 }));
  }, 60_000);

  it('a group gone from LDAP is emptied and kept; with onMissing remove, a gone entry is removed', async () => {
    const gone = adGroup(4);
    const members = await adDb.column<number>('SELECT m.member_id FROM group_members m JOIN groups g ON g.group_id = m.group_id WHERE g.name = ?', [gone.name]);
    expect(members.length).toBeGreaterThan(0);
    await slapd.delete(gone.dn);
    await slapd.delete(adPerson(5).dn);
    const removing = syncWith(
      {
        preset: 'active-directory',
        users: { baseDn: `ou=people,${AD_BASE}` },
        groups: { baseDn: `ou=groups,${AD_BASE}` },
        attributes: {},
        onMissing: 'remove',
      },
      { directory: new Directory(adDb, new UserStore(adDb)) },
      adDb,
    );
    const run = await removing.runNow({ trigger: 'test' });
    // Person 3 (suspended when their entry went) and person 5 removed; person 5 was in group001, not group004.
    expect(run.counts).toEqual(counts({ entries: AD_PEOPLE - 2, groups: AD_GROUPS - 1, removed: 2, groupsChanged: 1, memberships: members.length }));
    const group = await adDb.get<{ source_gone_at: number | null }>('SELECT source_gone_at FROM groups WHERE name = ?', [gone.name]);
    expect(group?.source_gone_at).toEqual(expect.any(Number));
    expect(Number(await adDb.value('SELECT count(*) FROM group_members m JOIN groups g ON g.group_id = m.group_id WHERE g.name = ?', [gone.name]))).toBe(0);
    const removed = await adDb.get<{ removed_at: string | null }>('SELECT removed_at FROM users WHERE email = ?', [adPerson(5).email]);
    expect(removed?.removed_at).not.toBeNull();
    expect(await groupsOf(adPerson(5).email, adDb)).toEqual([]);
  }, 60_000);

  it("operators and users suspended at the service are not taken, an operator's e-mail stays; a leaver's address on a new hire gets a fresh record", async () => {
    const users = new UserStore(adDb);
    // Made at the service (as if before LDAP was set up): an ADMIN, and a user an operator suspended.
    const admin = await userOf(adPerson(8).email, adDb);
    const barred = await userOf(adPerson(9).email, adDb);
    await adDb.run("UPDATE users SET source = 'local', external_id = NULL, source_dn = NULL, rank = 'ADMIN' WHERE email_id = ?", [admin.email_id]);
    await adDb.run("UPDATE users SET source = 'local', external_id = NULL, source_dn = NULL, suspended = 1 WHERE email_id = ?", [barred.email_id]);
    // An LDAP user promoted to ADMIN whose entry's mail and surname change.
    const promoted = await userOf(adPerson(10).email, adDb);
    await adDb.run("UPDATE users SET rank = 'ADMIN' WHERE email_id = ?", [promoted.email_id]);
    await slapd.modify(`dn: ${adPerson(10).dn}\nchangetype: modify\nreplace: mail\nmail: elsewhere@example.org\n-\nreplace: sn\nsn: Renamed\n`);
    // A leaver (a service card, their groups) whose entry is deleted, their address given to a new hire's entry.
    const leaver = await userOf(adPerson(11).email, adDb);
    await users.replaceSmartcards(leaver.email_id, [{ number: '777001', label: 'Badge' }]);
    await slapd.delete(adPerson(11).dn);
    const hireGuid = Buffer.from('new-hire-guid-01');
    const hireDn = `CN=newhire,OU=people,${AD_BASE}`;
    await slapd.add(
      `dn: ${hireDn}\nobjectClass: user\ncn: newhire\ngivenName: Nova\nsn: Hire\nmail: ${adPerson(11).email}\nsAMAccountName: newhire\n` +
        `userAccountControl: 512\nobjectGUID:: ${hireGuid.toString('base64')}\nmemberOf: ${adGroup(1).dn}\n`,
    );

    const run = await sync.runNow({ trigger: 'test' });
    expect(run.outcome).toBe('ok');
    expect(run.counts).toMatchObject({ created: 1, removed: 1, claimed: 0, updated: 1, reactivated: 0, skipped: 3 });
    expect(await userOf(adPerson(8).email, adDb)).toMatchObject({ source: 'local', external_id: null });
    expect(await userOf(adPerson(9).email, adDb)).toMatchObject({ source: 'local', suspended: 1 });
    expect(await userOf(adPerson(10).email, adDb)).toMatchObject({ email_id: promoted.email_id, source: 'ldap', last_name: 'Renamed' });
    // The same record, as a new member's: nothing of the leaver's (rank, cards, groups).
    const hire = await adDb.get<UserRow & { rank: string }>('SELECT * FROM users WHERE email = ?', [adPerson(11).email]);
    expect(hire).toMatchObject({
      email_id: leaver.email_id,
      source: 'ldap',
      external_id: hireGuid.toString('hex'),
      first_name: 'Nova',
      rank: 'REGULAR',
      suspended: 0,
    });
    expect(Number(await adDb.value('SELECT count(*) FROM smartcards WHERE email_id = ?', [leaver.email_id]))).toBe(0);
    expect(await groupsOf(adPerson(11).email, adDb)).toEqual([adGroup(1).name]);
  }, 60_000);
});
